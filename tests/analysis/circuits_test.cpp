// OV circuits, copying scores and composition scores (Elhage et al. 2021; analysis/circuits.h,
// analysis/composition.h): against the full vocabulary × vocabulary circuit and the dense D × D QK
// and OV matrices computed independently in float64 from the named weights, against closed forms (a
// head whose OV circuit is positive semi-definite copies, score 1; its negation suppresses, score
// −1), `headlab analyze --metrics copying` without a dataset, and `headlab circuits`.
#include "test_common.h"

#include "random_weights.h"
#include "small_models.h"

#include "analysis/analyze.h"
#include "analysis/circuits.h"
#include "analysis/composition.h"
#include "analysis/composition_figures.h"
#include "analysis/head_report.h"
#include "core/model/model.h"
#include "core/model/transformer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <fstream>
#include <string>

using namespace headlab;

namespace {

// Random weights with norm gains away from 1, so the folding matters.
std::shared_ptr<core::Model> random_model(const core::ModelConfig& config, uint64_t seed) {
  return test::unit_scale_model(config, seed);
}

// The full circuit W_E W_V W_O W_U [V, V] of one head, from the named parameters in float64:
// γ of the norm before attention on W_V's rows and of the final norm on W_U's rows, both centred
// along the model dimension after a LayerNorm.
torch::Tensor full_circuit(core::Model& model, const std::string& stack, int layer, int head) {
  const auto& c = model.config;
  auto param = [&](const std::string& name) { return model.module->named_parameters()[name].detach().to(torch::kFloat64); };
  const auto& a = stack == "encoder" ? c.encoder->attention : c.decoder->attention;
  const int64_t dv = a.value_size, group = a.heads / a.kv_heads;
  const std::string p = stack + "." + std::to_string(layer) + ".";
  const bool layer_norm = c.norm == core::NormKind::LayerNorm;
  auto fold = [&](torch::Tensor W, const std::string& norm) {
    W = torch::diag(param(norm + ".weight")).mm(W);
    return layer_norm ? W - W.mean(0, true) : W;
  };
  const auto WE = param("tokens.weight");                                                   // [V, D]
  const auto WV = fold(param(p + "attn.v.weight").narrow(0, (head / group) * dv, dv).t(), p + "attn_norm");  // [D, dv]
  const auto WO = param(p + "attn.o.weight").narrow(1, head * dv, dv).t();                  // [dv, D]
  const auto WU = fold((c.lm_head.tied ? WE : param("head_weight")).t(), stack + "_norm");   // [D, V]
  return WE.mm(WV).mm(WO).mm(WU);
}

}  // namespace

TEST_CASE("copying scores equal those of the full vocabulary circuit", "[analysis][circuits]") {
  using K = core::StackKind;
  struct Case {
    const char* name;
    core::ModelConfig config;
  };
  auto llama = test::llama_like(test::small_model(K::Decoder, test::attention(4, 2, 4, 4), 2, 29));
  for (const Case& v : {Case{"pre-LN LayerNorm encoder, tied", test::small_model(K::Encoder, test::attention(4, 4, 4, 4), 2, 29)},
                        Case{"RMSNorm GQA decoder, untied", llama},
                        Case{"MQA decoder, values of 6", test::small_model(K::Decoder, test::attention(4, 1, 4, 6), 2, 29)}}) {
    DYNAMIC_SECTION(v.name) {
      auto model = random_model(v.config, 3);
      const auto circuits = analysis::ov_circuits(*model);
      const std::string stack = v.config.decoder ? "decoder" : "encoder";
      const auto& a = v.config.decoder ? v.config.decoder->attention : v.config.encoder->attention;
      REQUIRE(circuits.heads.size() == size_t(2 * a.heads));
      for (const auto& c : circuits.heads) {
        INFO("layer " << c.layer << " head " << c.head);
        const auto M = full_circuit(*model, stack, c.layer, c.head);
        // Σλ is the trace (exact); Σ|λ| from the eigenvalues of the V × V matrix, its V − d_v zero ones included.
        const auto eig = at::linalg_eigvals(M);
        const double magnitude = eig.abs().sum().item<double>();
        REQUIRE(c.copying.has_value());
        CHECK(*c.copying == Approx(M.trace().item<double>() / magnitude).epsilon(1e-6));
        REQUIRE(c.eigenvalues.size() == size_t(a.value_size));
        double sum = 0;
        for (const auto& z : c.eigenvalues) sum += z.real();
        CHECK(sum == Approx(M.trace().item<double>()).epsilon(1e-9));
        CHECK(std::abs(c.eigenvalues.front()) >= std::abs(c.eigenvalues.back()));
      }
    }
  }
}

TEST_CASE("a head whose OV circuit is positive semi-definite copies, its negation suppresses", "[analysis][circuits]") {
  // RMSNorm with γ = 1 (no centring), tied embeddings: W_U W_E = W_Eᵀ W_E is positive semi-definite, so
  // W_O = W_Vᵀ makes the cyclic product W_Vᵀ W_Eᵀ W_E W_V positive semi-definite (copying = 1), and
  // W_O = −W_Vᵀ its negation (−1).
  auto config = test::small_model(core::StackKind::Decoder, test::attention(2, 2, 4, 4), 1, 29);
  config.norm = core::NormKind::RMSNorm;
  auto model = core::make_random_model(config, 4);
  {
    torch::NoGradGuard no_grad;
    auto attn = model->module->block(core::Stack::Decoder, 0)->attn;
    auto V = attn->v->weight;  // [2 · 4, D]
    auto& O = attn->o->weight;  // [D, 2 · 4]
    O.narrow(1, 0, 4).copy_(V.narrow(0, 0, 4).t());
    O.narrow(1, 4, 4).copy_(-V.narrow(0, 4, 4).t());
  }
  const auto circuits = analysis::ov_circuits(*model);
  REQUIRE(circuits.heads.size() == 2);
  CHECK(*circuits.heads[0].copying == Approx(1.0).epsilon(1e-9));
  CHECK(*circuits.heads[1].copying == Approx(-1.0).epsilon(1e-9));
  for (const auto& z : circuits.heads[0].eigenvalues) CHECK(z.real() >= -1e-12);

}

TEST_CASE("headlab analyze --metrics copying scores the shipped default without a dataset", "[analysis][circuits][cli]") {
  test::TempDir out("copying-cli");
  std::string output;
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " analyze --metrics copying,spectra --out " + out.str("r") +
                                " 2>&1",
                            output) == 0);
  INFO(output);
  const auto r = analysis::read_head_report(out.str("r/head_report.json"));
  auto model = core::load_model(std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default");
  const auto circuits = analysis::ov_circuits(*model);
  REQUIRE(circuits.heads.size() == r.heads.size());
  int copying = 0;
  for (const auto& c : circuits.heads) {
    const auto& h = *r.find(c.stack, c.layer, c.head);
    CHECK(h.values.at("copying_score") == Approx(*c.copying).epsilon(1e-12));  // LAPACK threads may round differently
    const bool role = std::find(h.roles.begin(), h.roles.end(), "copying") != h.roles.end();
    CHECK(role == (*c.copying >= 0.5));
    copying += role;
  }
  // The default's LM head has a transform: the report says W_U is its decoder matrix alone.
  CHECK(std::any_of(r.notes.begin(), r.notes.end(),
                    [](const std::string& n) { return n.find("its transform (dense, activation, norm) is left out") != std::string::npos; }));
  INFO(copying << " copying heads");
}

namespace {

// The dense QK and OV matrices [D, D] of one head from the named parameters, in float64, each
// variant by its own definition: W_Q^h W_K^hᵀ (GQA: the group's key head), Σ_i P_l[i, h] W_Q^i W_K^iᵀ
// (talking heads), W̃_Q diag(m_h) W̃_Kᵀ (collaborative); W_V^h W_O^h. Reading matrices fold the
// γ of the norm before attention, centred after a LayerNorm.
struct Dense {
  core::Model& model;
  const core::AttentionConfig& a;
  std::string stack;

  torch::Tensor param(const std::string& name) const {
    return model.module->named_parameters()[name].detach().to(torch::kFloat64);
  }
  torch::Tensor fold(torch::Tensor W, int layer) const {  // W [D, n]
    W = torch::diag(param(stack + "." + std::to_string(layer) + ".attn_norm.weight")).mm(W);
    return model.config.norm == core::NormKind::LayerNorm ? W - W.mean(0, true) : W;
  }
  torch::Tensor rows(const std::string& name, int64_t from, int64_t count, int layer) const {
    return fold(param(stack + "." + std::to_string(layer) + ".attn." + name).narrow(0, from, count).t(), layer);
  }
  torch::Tensor qk(int layer, int head) const {
    const int64_t dk = a.key_size;
    const std::string p = stack + "." + std::to_string(layer) + ".attn.";
    if (a.collaborative) {
      const int64_t s = a.collaborative->shared_key_size;
      return rows("q.weight", 0, s, layer).mm(torch::diag(param(p + "mix")[head])).mm(rows("k.weight", 0, s, layer).t());
    }
    if (a.talking_heads) {
      auto sum = torch::zeros({model.config.hidden_size, model.config.hidden_size}, torch::kFloat64);
      for (int i = 0; i < a.talking_heads->key_heads; ++i)
        sum += param(p + "pre_mix")[i][head].item<double>() *
               rows("q.weight", i * dk, dk, layer).mm(rows("k.weight", i * dk, dk, layer).t());
      return sum;
    }
    const int group = a.heads / a.kv_heads;
    return rows("q.weight", head * dk, dk, layer).mm(rows("k.weight", (head / group) * dk, dk, layer).t());
  }
  torch::Tensor ov(int layer, int head) const {
    const int64_t dv = a.value_size;
    const int group = a.output_heads() / a.value_heads_stored();
    const auto WO = param(stack + "." + std::to_string(layer) + ".attn.o.weight").narrow(1, head * dv, dv).t();
    return rows("v.weight", (head / group) * dv, dv, layer).mm(WO);
  }
};

double score(const torch::Tensor& A, const torch::Tensor& B) {
  return A.mm(B).norm().item<double>() / (A.norm().item<double>() * B.norm().item<double>());
}

}  // namespace

TEST_CASE("composition scores equal the dense circuits' for every variant", "[analysis][circuits]") {
  using K = core::StackKind;
  struct Case {
    std::string name;
    core::ModelConfig config;
  };
  std::vector<Case> cases;
  cases.push_back({"MHA decoder, LayerNorm", test::small_model(K::Decoder, test::attention(4, 4, 4, 4), 3, 40)});
  cases.push_back({"GQA, RMSNorm, d_k 6 / d_v 3", test::llama_like(test::small_model(K::Decoder, test::attention(4, 2, 6, 3), 3, 40))});
  auto talking = test::small_model(K::Encoder, test::attention(3, 3, 4, 4), 3, 40);
  talking.encoder->attention.talking_heads = core::TalkingHeads{3, 4, 2};
  cases.push_back({"talking heads 3/4/2", talking});
  auto collab = test::small_model(K::Decoder, test::attention(4, 4, 4, 4), 3, 40);
  collab.decoder->attention.collaborative = core::Collaborative{10};
  cases.push_back({"collaborative", collab});
  for (auto& c : cases) {
    DYNAMIC_SECTION(c.name) {
      auto model = random_model(c.config, 21);
      const std::string stack = c.config.decoder ? "decoder" : "encoder";
      const auto& a = c.config.decoder ? c.config.decoder->attention : c.config.encoder->attention;
      const Dense dense{*model, a, stack};
      const auto comp = analysis::composition_scores(*model);
      const int L = 3, Hv = a.output_heads(), Hs = a.softmax_heads();
      REQUIRE(comp.v.size() == size_t(L));
      REQUIRE(comp.q.size() == size_t(L));
      double largest = 0;
      for (int l1 = 0; l1 < L; ++l1)
        for (int h1 = 0; h1 < Hv; ++h1) {
          const auto OV1 = dense.ov(l1, h1);
          for (int l2 = 0; l2 < L; ++l2) {
            REQUIRE(comp.q[l1][h1][l2].size() == size_t(Hs));
            REQUIRE(comp.v[l1][h1][l2].size() == size_t(Hv));
            for (int h2 = 0; h2 < Hs; ++h2) {
              const double q = l2 > l1 ? score(OV1, dense.qk(l2, h2)) : 0.0;
              const double k = l2 > l1 ? score(OV1, dense.qk(l2, h2).t()) : 0.0;
              INFO("L" << l1 << " H" << h1 << " → L" << l2 << " H" << h2);
              CHECK(comp.q[l1][h1][l2][h2] == Approx(q).margin(1e-12));
              CHECK(comp.k[l1][h1][l2][h2] == Approx(k).margin(1e-12));
              largest = std::max(largest, q);
            }
            for (int h2 = 0; h2 < Hv; ++h2) {
              const double v = l2 > l1 ? score(OV1, dense.ov(l2, h2)) : 0.0;
              CHECK(comp.v[l1][h1][l2][h2] == Approx(v).margin(1e-12));
            }
          }
        }
      CHECK(largest > 0.05);  // the scores are not all zero
    }
  }
}

TEST_CASE("composition scores: additive heads have no QK circuit, and the scores are scale-free", "[analysis][circuits]") {
  using K = core::StackKind;
  auto additive = test::small_model(K::Encoder, test::attention(4, 4, 4, 4), 2, 40);
  additive.encoder->attention.scoring = core::Scoring::Additive;
  auto model = random_model(additive, 5);
  const auto comp = analysis::composition_scores(*model);
  CHECK(comp.q.empty());
  CHECK(comp.k.empty());
  CHECK(comp.v.size() == 2);
  CHECK(std::any_of(comp.notes.begin(), comp.notes.end(),
                    [](const std::string& n) { return n.find("not bilinear") != std::string::npos; }));
  // Scaling a receiver's W_K (or a sender's W_O) leaves every score as it was.
  auto mha = random_model(test::small_model(K::Decoder, test::attention(4, 4, 4, 4), 2, 40), 6);
  const auto before = analysis::composition_scores(*mha);
  {
    torch::NoGradGuard no_grad;
    mha->module->named_parameters()["decoder.1.attn.k.weight"].mul_(8.0);  // a power of two: the float32 weights scale exactly
    mha->module->named_parameters()["decoder.0.attn.o.weight"].mul_(0.25);
  }
  const auto after = analysis::composition_scores(*mha);
  for (int h1 = 0; h1 < 4; ++h1)
    for (int h2 = 0; h2 < 4; ++h2) {
      CHECK(after.k[0][h1][1][h2] == Approx(before.k[0][h1][1][h2]).epsilon(1e-12));
      CHECK(after.q[0][h1][1][h2] == Approx(before.q[0][h1][1][h2]).epsilon(1e-12));
    }
}

TEST_CASE("composition scores: a head whose QK circuit is zero or negligible is named and scores 0", "[analysis][circuits]") {
  // As in the shipped default: layer 3's query weights are zero, and a weight-decayed head's query
  // rows shrink to nothing; the score ‖OV R‖/(‖OV‖ ‖R‖) is scale-free and would rate rounding noise.
  using K = core::StackKind;
  auto model = random_model(test::small_model(K::Decoder, test::attention(4, 4, 4, 4), 3, 40), 9);
  const auto before = analysis::composition_scores(*model);
  REQUIRE(before.qk_zero.size() == 3);
  for (const auto& layer : before.qk_zero)
    for (bool zero : layer) CHECK(!zero);
  CHECK(before.q[0][0][2][1] > 0.01);
  {
    torch::NoGradGuard no_grad;
    auto params = model->module->named_parameters();
    params["decoder.2.attn.q.weight"].narrow(0, 4, 4).mul_(1e-9);  // head 1 of layer 2: decayed away
    params["decoder.1.attn.q.weight"].zero_();                     // every head of layer 1
    if (params.contains("decoder.1.attn.q.bias")) params["decoder.1.attn.q.bias"].zero_();
  }
  const auto after = analysis::composition_scores(*model);
  for (int h = 0; h < 4; ++h) {
    INFO("head " << h);
    CHECK(after.qk_zero[1][h]);
    CHECK(after.qk_zero[2][h] == (h == 1));
    CHECK(!after.qk_zero[0][h]);
    for (int h1 = 0; h1 < 4; ++h1) {
      CHECK(after.q[0][h1][1][h] == 0);
      CHECK(after.k[0][h1][1][h] == 0);
    }
  }
  for (int l1 = 0; l1 < 2; ++l1)
    for (int h1 = 0; h1 < 4; ++h1) {
      CHECK(after.q[l1][h1][2][1] == 0);
      CHECK(after.k[l1][h1][2][1] == 0);
      CHECK(after.q[l1][h1][2][0] > 0);  // the heads beside it keep their scores
      CHECK(after.v[l1][h1][2][1] == Approx(before.v[l1][h1][2][1]).epsilon(1e-12));  // V reads the values
    }
  CHECK(std::any_of(after.notes.begin(), after.notes.end(), [](const std::string& n) {
    return n.find("L1 H0, L1 H1, L1 H2, L1 H3, L2 H1 have a zero QK circuit") != std::string::npos;
  }));
}

TEST_CASE("the composition figure draws a receiver without a QK circuit grey, not as a score of 0", "[analysis][circuits][figures]") {
  // One figure for `headlab circuits` and the Circuits view: a measured 0 and "no score" differ.
  using K = core::StackKind;
  auto model = random_model(test::small_model(K::Decoder, test::attention(4, 4, 4, 4), 3, 40), 9);
  {
    torch::NoGradGuard no_grad;
    model->module->named_parameters()["decoder.2.attn.q.weight"].narrow(0, 4, 4).mul_(1e-9);  // L2 H1
  }
  const auto c = analysis::composition_scores(*model);
  REQUIRE(c.qk_zero[2][1]);
  const auto q = analysis::composition_heatmap(c, "Q", "tiny");
  const auto v = analysis::composition_heatmap(c, "V", "tiny");
  // Receivers L1 H0 … L2 H3 (columns 0–7), senders L0 H0 … L1 H3 (rows 0–7).
  REQUIRE(q.cols.size() == 8);
  REQUIRE(q.cols[5] == "L2 H1");
  for (size_t r = 0; r < q.rows.size(); ++r) {
    INFO("sender " << q.rows[r]);
    CHECK(std::isnan(q.values[r][5]));
    CHECK(std::isfinite(v.values[r][5]));  // V reads the values: scored
    CHECK(std::isfinite(q.values[r][4]));  // L2 H0 beside it keeps its score
  }
  CHECK(std::isnan(q.values[4][0]));  // L1 H0 → L1 H0: not a later layer, no value either
  REQUIRE(q.notes.size() == 2);
  CHECK(q.notes[0] == "model: tiny");
  CHECK(q.notes[1].find("grey columns: receivers whose QK circuit is zero or negligible") != std::string::npos);
  CHECK(v.notes == std::vector<std::string>{"model: tiny"});
  CHECK_THROWS_AS(analysis::composition_heatmap(c, "O", ""), std::invalid_argument);
}

TEST_CASE("headlab circuits writes circuits.json and the composition heatmaps", "[analysis][circuits][cli]") {
  test::TempDir dir("circuits-cli");
  auto model = random_model(test::small_model(core::StackKind::Decoder, test::attention(4, 2, 4, 4), 3, 40), 8);
  core::save_model(*model, dir.str("model"));
  std::string output;
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " circuits --model " + dir.str("model") + " --out " +
                                dir.str("out") + " 2>&1",
                            output) == 0);
  INFO(output);
  std::ifstream in(dir.str("out/circuits.json"));
  const auto j = nlohmann::json::parse(in);
  const auto comp = analysis::composition_scores(*model);
  for (const char* kind : {"q", "k", "v"}) {
    const auto& table = std::string(kind) == "q" ? comp.q : std::string(kind) == "k" ? comp.k : comp.v;
    REQUIRE(j[kind].size() == 3);
    for (int l1 = 0; l1 < 3; ++l1)
      for (int h1 = 0; h1 < 4; ++h1)
        for (int l2 = 0; l2 < 3; ++l2)
          for (int h2 = 0; h2 < 4; ++h2) CHECK(j[kind][l1][h1][l2][h2].get<double>() == Approx(table[l1][h1][l2][h2]).margin(1e-12));
  }
  REQUIRE(j["copying"].size() == 3);
  CHECK(j["copying"][2][3].get<double>() == Approx(*comp.ov.heads[11].copying).margin(1e-12));
  CHECK(j["ov_eigenvalues"][0][0].size() == 4);
  for (const char* f : {"composition_q.svg", "composition_k.png", "composition_v.svg"})
    CHECK(std::filesystem::file_size(dir.str(std::string("out/") + f)) > 1000);
  // A second run refuses to overwrite without --force.
  CHECK(test::run_command(std::string(HEADLAB_BINARY) + " circuits --model " + dir.str("model") + " --out " +
                              dir.str("out") + " 2>&1",
                          output) != 0);
  CHECK_THAT(output, Catch::Contains("--force"));
  // --force with a one-layer model: no composition, said so, and none of the first model's figures stays.
  auto one = random_model(test::small_model(core::StackKind::Decoder, test::attention(4, 2, 4, 4), 1, 40), 9);
  core::save_model(*one, dir.str("one"));
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " circuits --model " + dir.str("one") + " --out " +
                                dir.str("out") + " --force 2>&1",
                            output) == 0);
  CHECK_THAT(output, Catch::Contains("this model has one layer"));
  CHECK(output.find("composition, largest:") == std::string::npos);
  for (const char* f : {"composition_q.svg", "composition_k.png", "composition_v.svg"})
    CHECK_FALSE(std::filesystem::exists(dir.str(std::string("out/") + f)));
}
