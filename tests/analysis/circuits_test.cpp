// OV circuits and copying scores (Elhage et al. 2021; analysis/circuits.h): against the full
// vocabulary × vocabulary circuit computed independently in float64 from the named weights, against
// closed forms (a head whose OV circuit is positive semi-definite copies, score 1; its negation
// suppresses, score −1), and `headlab analyze --metrics copying` without a dataset.
#include "test_common.h"

#include "small_models.h"

#include "analysis/analyze.h"
#include "analysis/circuits.h"
#include "analysis/head_report.h"
#include "core/model/model.h"
#include "core/model/transformer.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <string>

using namespace headlab;

namespace {

// Random weights with norm gains away from 1, so the folding matters.
std::shared_ptr<core::Model> random_model(const core::ModelConfig& config, uint64_t seed) {
  auto model = core::make_random_model(config, seed);
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (auto& item : model->module->named_parameters()) {
    auto& p = item.value();
    const std::string& name = item.key();
    if (name.find("norm.weight") != std::string::npos) p.copy_(1 + 0.5 * torch::rand(p.sizes()));
    else if (p.dim() >= 2) p.copy_(torch::randn(p.sizes()) / std::sqrt(double(p.size(-1))));
  }
  return model;
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
        const auto eig = torch::linalg::eigvals(M);
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
