// Activation, attribution and path patching (analysis/patching.h, core/model/patch.h) and direct
// logit attribution with the logit lens (analysis/logit_attribution.h), against identities and
// independent computations: a patch from a copy of the clean run changes nothing; the whole residual
// stream before layer 0 taken from the corrupted run gives exactly the corrupted run; a last-layer
// head of an attention-only model patched equals replacing its term in the residual stream (closed
// form); attribution patching agrees with exact patching to first order (its error shrinks as ε²);
// path patching equals a transcription of the receiving layer; DLA's shares add up to the logit
// difference and match a float64 transcription of TransformerLens's apply_ln_to_stack.
#include "test_common.h"

#include "random_weights.h"
#include "small_models.h"

#include "analysis/heatmap_figure.h"
#include "analysis/logit_attribution.h"
#include "analysis/patching.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/transformer.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

using namespace headlab;

namespace {

std::shared_ptr<core::Model> random_model(const core::ModelConfig& config, uint64_t seed) {
  return test::unit_scale_model(config, seed, /*biases=*/true);
}

core::ModelConfig decoder(int layers = 3, bool attention_only = false) {
  auto c = test::small_model(core::StackKind::Decoder, test::attention(4, 4, 4, 4), layers, 40);
  if (attention_only) c.ffn.kind = core::FfnKind::None;
  return c;
}

const std::vector<int64_t> kClean = {3, 17, 5, 22, 9, 31, 14, 8};
const std::vector<int64_t> kCorrupt = {3, 17, 6, 22, 9, 30, 14, 8};

analysis::PatchRequest request(core::Site site) {
  analysis::PatchRequest r;
  r.clean = kClean;
  r.corrupt = kCorrupt;
  r.site = site;
  r.answer = 11;
  r.wrong = 12;
  return r;
}

}  // namespace

TEST_CASE("patching from a copy of the clean run changes nothing, at every site", "[analysis][patching]") {
  auto model = random_model(decoder(), 1);
  for (const auto site : {core::Site::Resid, core::Site::Q, core::Site::K, core::Site::V, core::Site::Pattern,
                          core::Site::Z, core::Site::Mlp}) {
    INFO(core::site_name(site));
    auto r = request(site);
    r.corrupt = r.clean;
    r.attribution = false;
    const auto result = analysis::patch_activations(*model, r);
    CHECK(result.clean == result.corrupt);
    for (const auto& layer : result.exact)
      for (const auto& unit : layer)
        for (double v : unit) CHECK(v == result.clean);
    // Said so, and no correlation is read into the rounding noise of two flat tables.
    REQUIRE(!result.notes.empty());
    CHECK_THAT(result.notes[0], Catch::Contains("the clean and corrupted inputs are the same"));
  }
  auto r = request(core::Site::Z);
  r.corrupt = r.clean;
  const auto both = analysis::patch_activations(*model, r);
  CHECK(!both.correlation);
}

TEST_CASE("the residual stream before layer 0 from the corrupted run gives the corrupted run", "[analysis][patching]") {
  auto model = random_model(decoder(), 2);
  auto r = request(core::Site::Resid);
  r.attribution = false;
  const auto result = analysis::patch_activations(*model, r);
  REQUIRE(result.clean != Approx(result.corrupt).margin(1e-3));
  CHECK(result.exact[0][0][0] == result.corrupt);
  // Every layer's whole stream carries the whole corrupted input: the same result from any layer.
  for (const auto& layer : result.exact) CHECK(layer[0][0] == Approx(result.corrupt).margin(1e-5));
  // Position by position: only the positions where the inputs differ (2 and 5) change layer 0.
  r.each_position = true;
  const auto each = analysis::patch_activations(*model, r);
  REQUIRE(each.exact[0][0].size() == kClean.size());
  for (size_t p = 0; p < kClean.size(); ++p) {
    INFO("position " << p);
    if (kClean[p] == kCorrupt[p]) CHECK(each.exact[0][0][p] == each.clean);
    else CHECK(each.exact[0][0][p] != Approx(each.clean).margin(1e-6));
  }
}

TEST_CASE("a last-layer head patched equals replacing its term in the residual stream", "[analysis][patching]") {
  auto model = random_model(decoder(2, /*attention_only=*/true), 3);
  auto r = request(core::Site::Z);
  r.attribution = false;
  const auto result = analysis::patch_activations(*model, r);
  // Closed form: final = clean final + (O_corrupt − O_clean)[h] W_O^h, through the final norm and head.
  core::RunRequest run;
  run.capture = core::kCaptureHeadOutputs | core::kCaptureResidual;
  run.ids = kClean;
  const auto clean = core::run(*model, run);
  run.ids = kCorrupt;
  const auto corrupt = core::run(*model, run);
  auto& m = *model->module;
  const int64_t dv = 4, last = 1;
  for (int h = 0; h < 4; ++h) {
    torch::NoGradGuard no_grad;
    const auto dO = corrupt->decoder.layers[last].self.head_outputs[h] - clean->decoder.layers[last].self.head_outputs[h];
    const auto term = torch::matmul(dO, m.block(core::Stack::Decoder, last)->attn->o->weight.narrow(1, h * dv, dv).t());
    const auto logits = m.head((clean->decoder.hidden.back() + term).unsqueeze(0), core::Stack::Decoder)[0][7];
    const double expected = (logits[11] - logits[12]).item<double>();
    INFO("head " << h);
    CHECK(result.exact[last][h][0] == Approx(expected).margin(1e-5));
  }
  // Incremental re-runs: a layer-l patch computes only layers l … L−1.
  CHECK(result.layers_run == 4 * 2 + 4 * 1);
}

TEST_CASE("attribution patching agrees with exact patching to first order", "[analysis][patching]") {
  auto model = random_model(decoder(), 4);
  model->module->to(torch::kFloat64);
  core::RunRequest run;
  run.ids = kClean;
  run.capture = core::kCaptureHeadOutputs | core::kCapturePatchSites | core::kCaptureResidual;
  run.logit_positions = {7};
  const auto clean = core::run(*model, run);
  auto metric = [](const torch::Tensor& logits) { return logits.reshape({-1})[11] - logits.reshape({-1})[12]; };
  const double base = metric(clean->logits).item<double>();
  torch::manual_seed(9);
  for (const auto site : {core::Site::Z, core::Site::V, core::Site::Mlp}) {
    const int layer = 1;
    const auto own = site == core::Site::Z ? clean->decoder.layers[layer].self.head_outputs
                     : site == core::Site::V ? clean->decoder.layers[layer].self.values
                                             : clean->decoder.layers[layer].mlp_out;
    const auto delta = torch::randn(own.sizes(), torch::kFloat64);
    auto error = [&](double eps) {
      core::ActivationPatch patch;
      patch.stack = core::Stack::Decoder;
      patch.layer = layer;
      patch.site = site;
      patch.head = core::site_has_heads(site) ? 1 : -1;
      patch.value = own + eps * delta;
      core::RunRequest exact = run;
      exact.capture = core::kCaptureResidual;
      exact.patches = {patch};
      const double patched = metric(core::run(*model, exact)->logits).item<double>();
      patch.weight = torch::zeros({1}, torch::kFloat64).requires_grad_(true);
      core::RunRequest grad = exact;
      grad.capture = core::kCaptureNone;
      grad.differentiable = true;
      grad.patches = {patch};
      torch::Tensor m;
      {
        torch::AutoGradMode on(true);
        m = metric(core::run(*model, grad)->logits);
      }
      const double slope = torch::autograd::grad({m}, {patch.weight})[0].item<double>();
      INFO(core::site_name(site) << " ε " << eps << ": exact " << patched - base << ", first order " << slope);
      CHECK(std::abs(slope) > 1e-8);
      return std::abs(patched - (base + slope));
    };
    const double coarse = error(0.02), fine = error(0.01), finer = error(0.005);
    INFO(core::site_name(site) << ": errors " << coarse << " " << fine << " " << finer);
    CHECK(coarse / fine == Approx(4).margin(0.5));
    CHECK(fine / finer == Approx(4).margin(0.5));
  }
  // patch_activations' attribution is that first-order estimate with the corrupted run's activations.
  auto r = request(core::Site::Z);
  const auto result = analysis::patch_activations(*model, r);
  REQUIRE(result.correlation.has_value());
  CHECK(*result.correlation > -1.0);
  double largest = 0;
  for (size_t l = 0; l < result.exact.size(); ++l)
    for (size_t h = 0; h < 4; ++h) largest = std::max(largest, std::abs(result.attribution[l][h][0] - result.clean));
  CHECK(largest > 1e-4);
  // Attribution alone takes the clean metric from its own differentiable run (every weight 0) instead
  // of a separate clean forward: the same numbers, for every metric.
  for (const auto metric : {analysis::PatchMetric::LogitDiff, analysis::PatchMetric::Prob, analysis::PatchMetric::KL}) {
    r.metric = metric;
    r.exact = true;
    const auto both = analysis::patch_activations(*model, r);
    r.exact = false;
    const auto alone = analysis::patch_activations(*model, r);
    INFO(analysis::metric_name(metric));
    CHECK(alone.clean == Approx(both.clean).margin(1e-12));
    CHECK(alone.corrupt == Approx(both.corrupt).margin(1e-12));
    CHECK(alone.exact.empty());
    for (size_t l = 0; l < both.attribution.size(); ++l)
      for (size_t h = 0; h < 4; ++h) CHECK(alone.attribution[l][h][0] == Approx(both.attribution[l][h][0]).margin(1e-12));
  }
}

TEST_CASE("patching refuses inputs of different lengths and sites the model lacks", "[analysis][patching]") {
  auto model = random_model(decoder(2, true), 5);
  auto r = request(core::Site::Z);
  r.corrupt.pop_back();
  CHECK_THROWS_WITH(analysis::patch_activations(*model, r), Catch::Contains("8 tokens") && Catch::Contains("7") &&
                                                                Catch::Contains("same length"));
  r = request(core::Site::Mlp);
  CHECK_THROWS_WITH(analysis::patch_activations(*model, r), Catch::Contains("attention-only"));
  r = request(core::Site::Z);
  r.wrong = -1;
  CHECK_THROWS_WITH(analysis::patch_activations(*model, r), Catch::Contains("wrong token"));
  r.metric = analysis::PatchMetric::KL;
  const auto kl = analysis::patch_activations(*model, r);
  CHECK(kl.clean == Approx(0).margin(1e-9));
  CHECK(kl.corrupt > 0);
}

TEST_CASE("path patching equals a transcription of the receiving layer", "[analysis][patching]") {
  // Two layers, attention only, LayerNorm: the receivers' keys computed by hand from the clean
  // stream plus the sender's change; the rest of layer 1 from the clean run.
  auto model = random_model(decoder(2, true), 6);
  model->module->to(torch::kFloat64);
  auto& m = *model->module;
  core::RunRequest run;
  run.capture = core::kCaptureHeadOutputs | core::kCaptureResidual | core::kCapturePatchSites;
  run.ids = kClean;
  const auto clean = core::run(*model, run);
  run.ids = kCorrupt;
  const auto corrupt = core::run(*model, run);
  const int64_t T = 8, dk = 4, dv = 4;
  const auto& b0 = m.block(core::Stack::Decoder, 0);
  const auto& b1 = m.block(core::Stack::Decoder, 1);
  for (const auto site : {core::Site::K, core::Site::Q, core::Site::V}) {
    torch::NoGradGuard no_grad;
    const int sender = 2;
    const std::vector<int> receivers = {0, 3};
    const auto dO = corrupt->decoder.layers[0].self.head_outputs[sender] - clean->decoder.layers[0].self.head_outputs[sender];
    const auto x = clean->decoder.hidden[1] + torch::matmul(dO, b0->attn->o->weight.narrow(1, sender * dv, dv).t());
    const auto n = torch::layer_norm(x, {16}, b1->attn_norm->weight, b1->attn_norm->bias, 1e-5);
    const auto& s = clean->decoder.layers[1].self;
    auto q = s.queries.clone(), k = s.keys.clone(), v = s.values.clone();  // [4, T, 4]
    const auto& proj = site == core::Site::Q ? b1->attn->q : site == core::Site::K ? b1->attn->k : b1->attn->v;
    const auto fresh = torch::nn::functional::linear(n, proj->weight, proj->bias).view({T, 4, dk}).transpose(0, 1);
    auto& target = site == core::Site::Q ? q : site == core::Site::K ? k : v;
    for (int h : receivers) target[h] = fresh[h];
    const auto mask = torch::ones({T, T}, torch::kBool).tril().logical_not();
    const auto W = torch::softmax((torch::matmul(q, k.transpose(1, 2)) / 2.0).masked_fill(mask, -1e300), -1);
    const auto O = torch::matmul(W, v).transpose(0, 1).reshape({T, 4 * dv});
    const auto out = clean->decoder.hidden[1] + torch::nn::functional::linear(O, b1->attn->o->weight, b1->attn->o->bias);
    const auto logits = m.head(out.unsqueeze(0), core::Stack::Decoder)[0][T - 1];
    const double expected = (logits[11] - logits[12]).item<double>();
    const double got = analysis::path_patch(*model, request(core::Site::Z), {0, sender}, {{1, 0}, {1, 3}}, site);
    INFO(core::site_name(site));
    CHECK(got == Approx(expected).margin(1e-9));
  }
  // A receiver must be in a later layer.
  CHECK_THROWS_WITH(analysis::path_patch(*model, request(core::Site::Z), {1, 0}, {{1, 2}}, core::Site::K),
                    Catch::Contains("not in a layer after"));
}

TEST_CASE("direct logit attribution adds up and matches apply_ln_to_stack in float64", "[analysis][dla]") {
  for (bool rms : {false, true}) {
    auto config = decoder();
    if (rms) config = test::llama_like(config);
    auto model = random_model(config, 7);
    core::RunRequest run;
    run.ids = kClean;
    run.capture = core::kCaptureHeadOutputs | core::kCaptureResidual | core::kCapturePatchSites;
    const auto trace = core::run(*model, run);
    const int64_t P = 6;
    const auto a = analysis::logit_attribution(*model, *trace, P, 11, 12);
    INFO((rms ? "RMSNorm" : "LayerNorm"));
    double sum = a.embed + a.biases + a.rest;
    for (const auto& layer : a.heads)
      for (double v : layer) sum += v;
    for (double v : a.mlps) sum += v;
    const auto logits = trace->logits[P].to(torch::kFloat64);
    const double value = (logits[11] - logits[12]).item<double>();
    CHECK(a.value == Approx(value).margin(1e-6));
    CHECK(sum == Approx(value).margin(1e-9));
    // The float64 transcription: one head's term through the final norm with the run's scale.
    auto p = [&](const std::string& name) { return model->module->named_parameters()[name].detach().to(torch::kFloat64); };
    const auto final = trace->decoder.hidden.back()[P].to(torch::kFloat64);
    const double sigma = rms ? std::sqrt(final.pow(2).mean().item<double>() + 1e-5)
                             : std::sqrt(final.var(/*unbiased=*/false).item<double>() + 1e-5);
    const auto W = rms ? p("head_weight") : p("tokens.weight");
    const auto u = (W[11] - W[12]) * p("decoder_norm.weight");
    for (int l = 0; l < 3; ++l)
      for (int h = 0; h < 4; ++h) {
        auto term = torch::matmul(trace->decoder.layers[l].self.gated_outputs[h][P].to(torch::kFloat64),
                                  p("decoder." + std::to_string(l) + ".attn.o.weight").narrow(1, h * 4, 4).t());
        if (!rms) term = term - term.mean();
        CHECK(a.heads[l][h] == Approx((term / sigma * u).sum().item<double>()).margin(1e-9));
      }
    // rest: the final norm's bias and the LM head's bias, nothing else.
    double rest = 0;
    if (!rms) rest += (p("decoder_norm.bias") * (W[11] - W[12])).sum().item<double>();
    if (model->config.lm_head.bias) rest += (p("head_bias")[11] - p("head_bias")[12]).item<double>();
    CHECK(a.rest == Approx(rest).margin(1e-6));
    // The logit lens ends at the model's own prediction.
    REQUIRE(a.lens.size() == 4);
    CHECK(a.lens.back().value == Approx(value).margin(1e-5));
    CHECK(a.lens.back().top[0].first == logits.argmax().item<int64_t>());
  }
  // Models whose stream is not a sum of the components at the head are refused with the reason.
  auto post = decoder();
  post.norm_placement = core::NormPlacement::Post;
  auto model = random_model(post, 8);
  core::RunRequest run;
  run.ids = kClean;
  run.capture = core::kCaptureHeadOutputs | core::kCaptureResidual | core::kCapturePatchSites;
  const auto trace = core::run(*model, run);
  CHECK_THROWS_WITH(analysis::logit_attribution(*model, *trace, 7, 11, 12), Catch::Contains("post-LN"));
}

TEST_CASE("headlab patch writes its tables, and on Ctrl-C what is complete, marked partial", "[analysis][patching][cli]") {
  test::TempDir dir("patch-cli");
  // A model whose exact re-runs take long: 12 layers of 8 heads, a patch per head and position of
  // 120 tokens (11,520 re-runs).
  auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json");
  config.encoder->layers = 12;
  core::save_model(*core::make_random_model(config, 3), dir.str("model"));
  std::string clean, corrupt;
  for (int i = 0; i < 120; ++i) {
    clean += std::to_string(i % 50 + 5) + (i + 1 < 120 ? "," : "");
    corrupt += std::to_string((i * 7) % 50 + 5) + (i + 1 < 120 ? "," : "");
  }
  const std::string base = std::string(HEADLAB_BINARY) + " patch --model " + dir.str("model") + " --clean-ids " + clean +
                           " --corrupt-ids " + corrupt + " --metric logit --answer-id 7 --no-special-tokens";
  std::string output;

  // A whole run on a short input: complete, not partial.
  const std::string short_ids = " --clean-ids 5,6,7,8 --corrupt-ids 9,6,7,8";
  const int whole = test::run_command(std::string(HEADLAB_BINARY) + " patch --model " + dir.str("model") + short_ids +
                                          " --metric logit --answer-id 7 --no-special-tokens --out " + dir.str("whole") + " 2>&1",
                                      output);
  INFO(output);
  REQUIRE(whole == 0);
  const auto done = nlohmann::json::parse(std::ifstream(dir.str("whole/patch.json")));
  CHECK(done["partial"] == false);
  // The same input twice: the exact re-runs differ from the clean run by rounding alone, which is
  // not read as a correlation, and the note says why nothing is measured.
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " patch --model " + dir.str("model") +
                                " --clean-ids 5,6,7,8 --corrupt-ids 5,6,7,8 --metric logit --answer-id 7 "
                                "--no-special-tokens --out " + dir.str("same") + " 2>&1",
                            output) == 0);
  const auto same = nlohmann::json::parse(std::ifstream(dir.str("same/patch.json")));
  CHECK(same["correlation"].is_null());
  CHECK_THAT(same["notes"].dump(), Catch::Contains("the clean and corrupted inputs are the same"));
  CHECK(done["effects"].size() == 12);
  for (const auto& layer : done["effects"])
    for (const auto& v : layer) CHECK(v.is_number());
  CHECK(std::filesystem::exists(dir.str("whole/patch_attribution.svg")));
  // kl: its first-order estimate is 0 everywhere, so no attribution figure of "all kept".
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " patch --model " + dir.str("model") + short_ids +
                                " --metric kl --no-special-tokens --out " + dir.str("kl") + " 2>&1",
                            output) == 0);
  CHECK(std::filesystem::exists(dir.str("kl/patch_exact.svg")));
  CHECK(!std::filesystem::exists(dir.str("kl/patch_attribution.svg")));

  // SIGINT a second after the first exact re-run is reported: attribution whole, some exact cells.
  const std::string log = dir.str("stderr.txt");
  const int code = test::run_command(
      "sh -c '" + base + " --positions each --out " + dir.str("stopped") + " 2>" + log +
          " & pid=$!; i=0; while ! grep -q \"exact patching\" " + log +
          " && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; sleep 1; kill -INT $pid; wait $pid'",
      output);
  INFO(output);
  CHECK(code == 130);
  const auto stopped = nlohmann::json::parse(std::ifstream(dir.str("stopped/patch.json")));
  CHECK(stopped["partial"] == true);
  int64_t measured = 0, missing = 0;
  for (const auto& layer : stopped["effects"])
    for (const auto& unit : layer)
      for (const auto& v : unit) (v.is_null() ? missing : measured) += 1;
  CHECK(measured > 0);
  CHECK(missing > 0);
  for (const auto& layer : stopped["attribution"])  // one backward pass, done before any re-run
    for (const auto& unit : layer)
      for (const auto& v : unit) CHECK(v.is_number());
  bool noted = false;
  for (const auto& n : stopped["notes"]) noted = noted || n.get<std::string>().find("stopped (Ctrl-C)") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("a patching figure names the model, both inputs and what was scored where", "[analysis][patching][figures]") {
  analysis::PatchFigureFacts f;
  f.model = "induction";
  f.clean = "The old man looked at the sky. The old man looked at the";
  f.counterfactual = "The old man looked at the sun. The old man looked at the";
  f.metric = "logit-diff";
  f.answer = "'·sky' (6766)";
  f.wrong = "'·sun' (4252)";
  f.position = 19;
  f.clean_value = 3.193;
  f.counterfactual_value = -4.584;
  const auto notes = analysis::patch_figure_notes(f);
  REQUIRE(notes.size() == 4);
  CHECK(notes[0] == "model: induction");
  CHECK(notes[1] == "clean: \u201c" + f.clean + "\u201d");
  CHECK(notes[2] == "counterfactual: \u201c" + f.counterfactual + "\u201d");
  CHECK(notes[3] == "logit-diff at position 19: clean 3.193, counterfactual -4.584; answer '·sky' (6766), wrong '·sun' (4252)");
  // Only the tokens a metric reads: prob the answer, kl none.
  f.metric = "prob";
  CHECK(analysis::patch_figure_notes(f)[3] == "prob at position 19: clean 3.193, counterfactual -4.584; answer '·sky' (6766)");
  f.metric = "kl";
  CHECK(analysis::patch_figure_notes(f)[3] == "kl at position 19: clean 3.193, counterfactual -4.584");
  f.metric = "logit-diff";
  // Drawn under the subtitle: the page grows a line per note, and a long text is cut, not the page widened.
  test::TempDir dir("patch-figure-notes");
  auto map = analysis::effect_heatmap("Activation patching", "subtitle", "head", {"H0", "H1"}, {{1.0, 0.5}, {0.2, 1.0}});
  analysis::write_heatmap_file(map, dir.str("bare.svg"));
  map.notes = notes;
  map.notes[1] = "clean: " + std::string(2000, 'x');
  analysis::write_heatmap_file(map, dir.str("notes.svg"));
  auto size_of = [&](const std::string& file, const char* attribute) {
    std::ifstream in(dir.str(file));
    const std::string svg(std::istreambuf_iterator<char>(in), {});
    const size_t at = svg.find(std::string(attribute) + "=\"");
    REQUIRE(at != std::string::npos);
    return std::stod(svg.substr(at + std::string(attribute).size() + 2));
  };
  CHECK(size_of("notes.svg", "height") - size_of("bare.svg", "height") == Approx(4 * 12.0));
  CHECK(size_of("notes.svg", "width") < 800);
}
