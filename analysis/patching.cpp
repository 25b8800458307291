#include "analysis/patching.h"

#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/transformer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace headlab::analysis {
namespace {

constexpr std::pair<PatchMetric, const char*> kMetrics[] = {
    {PatchMetric::LogitDiff, "logit-diff"}, {PatchMetric::Logit, "logit"}, {PatchMetric::Prob, "prob"}, {PatchMetric::KL, "kl"}};

// What the clean runs capture: the residual stream, so that every patched run re-runs only from
// its patched layer.
constexpr unsigned kCleanCapture = core::kCaptureResidual;

unsigned capture_for(core::Site site) {
  switch (site) {
    case core::Site::Resid: return core::kCaptureResidual;
    case core::Site::Pattern: return core::kCaptureWeights;
    case core::Site::Z: return core::kCaptureHeadOutputs;
    default: return core::kCapturePatchSites;
  }
}

// The site's activations in layer `layer` of a trace, shaped as core/model/patch.h says.
torch::Tensor site_value(const core::Trace& trace, core::Site site, int layer) {
  const auto& stack = trace.main_stack();
  const auto& s = stack.layers.at(layer).self;
  switch (site) {
    case core::Site::Resid: return stack.hidden.at(layer);
    case core::Site::Q: return s.queries;
    case core::Site::K: return s.keys;
    case core::Site::V: return s.values;
    case core::Site::Pattern: return s.weights;
    case core::Site::Z: return s.head_outputs;
    case core::Site::Mlp: return stack.layers.at(layer).mlp_out;
  }
  return {};
}

// Scores one run's logits [1, V] at the scored position.
struct Scorer {
  PatchMetric metric;
  int64_t answer, wrong;
  torch::Tensor clean_log_probs;  // [V] float64, for KL

  torch::Tensor operator()(const torch::Tensor& logits) const {
    const auto row = logits.reshape({-1}).to(torch::kFloat64);
    switch (metric) {
      case PatchMetric::LogitDiff: return row[answer] - row[wrong];
      case PatchMetric::Logit: return row[answer];
      case PatchMetric::Prob: return torch::softmax(row, 0)[answer];
      case PatchMetric::KL:
        return (clean_log_probs.exp() * (clean_log_probs - torch::log_softmax(row, 0))).sum();
    }
    return {};
  }
};

struct Setup {
  core::Stack stack;
  int layers;
  int64_t position;
  Scorer score;
  std::shared_ptr<const core::Trace> clean, corrupt;
};

core::RunRequest base_request(const PatchRequest& r, const Setup& s) {
  core::RunRequest run;
  run.ids = r.clean;
  run.controls = r.controls;
  run.capture = kCleanCapture;
  run.logit_positions = {s.position};
  run.cancel = r.cancel;
  return run;
}

void check_ids(const std::vector<int64_t>& ids, int64_t vocab, const char* which) {
  for (int64_t id : ids)
    if (id < 0 || id >= vocab)
      throw std::invalid_argument(std::string(which) + " input: id " + std::to_string(id) +
                                  " is outside the vocabulary (size " + std::to_string(vocab) + ")");
}

// The clean and corrupted runs. Without `clean_run` (attribution patching alone) only the corrupted
// run is made: the differentiable run with every weight at 0 is the clean run itself.
Setup prepare(core::Model& model, const PatchRequest& r, unsigned corrupt_capture, unsigned clean_capture = 0,
              bool clean_run = true) {
  const auto& c = model.config;
  if (c.kind == core::StackKind::EncoderDecoder)
    throw std::invalid_argument("patching runs a decoder-only or encoder-only model; this one is an encoder-decoder");
  if (r.clean.empty()) throw std::invalid_argument("patching: the clean input is empty");
  if (r.clean.size() != r.corrupt.size())
    throw std::invalid_argument("patching: the clean input has " + std::to_string(r.clean.size()) +
                                " tokens and the corrupted one " + std::to_string(r.corrupt.size()) +
                                "; patching takes activations position by position, so both must have the same length");
  check_ids(r.clean, c.vocab_size, "clean");
  check_ids(r.corrupt, c.vocab_size, "corrupted");
  if (r.metric != PatchMetric::KL) {
    if (r.answer < 0 || r.answer >= c.vocab_size)
      throw std::invalid_argument(std::string("patching: the ") + metric_name(r.metric) +
                                  " metric needs an answer token inside the vocabulary");
    if (r.metric == PatchMetric::LogitDiff && (r.wrong < 0 || r.wrong >= c.vocab_size))
      throw std::invalid_argument("patching: the logit-diff metric needs a wrong token inside the vocabulary");
  }
  if (r.site == core::Site::Mlp && c.ffn.kind == core::FfnKind::None)
    throw std::invalid_argument("patching: this model is attention-only; it has no mlp to patch");
  Setup s;
  s.stack = c.decoder ? core::Stack::Decoder : core::Stack::Encoder;
  s.layers = model.module->layer_count(s.stack);
  const int64_t T = static_cast<int64_t>(r.clean.size());
  s.position = r.position < 0 ? default_position(model, r.clean) : r.position;
  if (s.position >= T)
    throw std::invalid_argument("patching: position " + std::to_string(s.position) + " is outside the input (0.." +
                                std::to_string(T - 1) + ")");
  s.score = Scorer{r.metric, r.answer, r.wrong, {}};
  auto run = base_request(r, s);
  if (clean_run) {
    run.capture = kCleanCapture | clean_capture;
    s.clean = core::run(model, run);
    s.score.clean_log_probs = torch::log_softmax(s.clean->logits.reshape({-1}).to(torch::kFloat64), 0);  // path patching's
  }
  run.ids = r.corrupt;
  run.capture = kCleanCapture | corrupt_capture;
  s.corrupt = core::run(model, run);
  return s;
}

}  // namespace

int64_t default_position(const core::Model& model, const std::vector<int64_t>& ids) {
  const auto mask = model.tokenizer ? model.tokenizer->mask_id() : std::nullopt;
  if (mask && model.config.kind == core::StackKind::Encoder)
    for (size_t t = 0; t < ids.size(); ++t)
      if (ids[t] == *mask) return static_cast<int64_t>(t);
  return static_cast<int64_t>(ids.size()) - 1;
}

namespace {

double pearson(const PatchTable& a, const PatchTable& b) {
  std::vector<double> x, y;
  for (size_t l = 0; l < a.size(); ++l)
    for (size_t u = 0; u < a[l].size(); ++u)
      for (size_t p = 0; p < a[l][u].size(); ++p) x.push_back(a[l][u][p]), y.push_back(b[l][u][p]);
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  // Tables that are constant but for float rounding (a patch that changes nothing) have no
  // correlation: their spread is below 1e-9 of their size.
  auto flat = [n](double ss, double mean) { return !(ss > n * std::pow(1e-9 * (std::abs(mean) + 1e-6), 2)); };
  return flat(sxx, mx) || flat(syy, my) ? std::nan("") : sxy / std::sqrt(sxx * syy);
}

}  // namespace

const char* metric_name(PatchMetric metric) {
  for (const auto& [m, name] : kMetrics)
    if (m == metric) return name;
  return "?";
}

PatchMetric metric_from_name(const std::string& name) {
  for (const auto& [m, n] : kMetrics)
    if (name == n) return m;
  throw std::invalid_argument("unknown metric '" + name + "' (logit-diff, logit, prob or kl)");
}

PatchTable PatchResult::normalised(const PatchTable& table) const {
  if (clean == corrupt) return {};
  PatchTable out = table;
  for (auto& layer : out)
    for (auto& unit : layer)
      for (double& v : unit) v = (v - corrupt) / (clean - corrupt);
  return out;
}

PatchResult patch_activations(core::Model& model, const PatchRequest& request) {
  const core::Site site = request.site;
  Setup s = prepare(model, request, capture_for(site), 0, /*clean_run=*/request.exact || !request.attribution);
  PatchResult result;
  result.stack = s.stack;
  result.position = s.position;
  if (request.clean == request.corrupt)
    result.notes.push_back("the clean and corrupted inputs are the same: every patch keeps the clean result, so the "
                           "effects measure nothing and have no normalisation");
  auto score_runs = [&](const torch::Tensor& clean_logits) {  // KL scores against the clean run's distribution
    s.score.clean_log_probs = torch::log_softmax(clean_logits.reshape({-1}).to(torch::kFloat64), 0);
    result.clean = s.score(clean_logits).item<double>();
    result.corrupt = s.score(s.corrupt->logits).item<double>();
  };
  if (s.clean) score_runs(s.clean->logits);
  const bool heads = core::site_has_heads(site);
  std::vector<torch::Tensor> values(s.layers);
  for (int l = 0; l < s.layers; ++l) values[l] = site_value(*s.corrupt, site, l);
  auto units = [&](int l) { return heads ? values[l].size(0) : int64_t(1); };
  const int64_t positions = request.each_position ? values[0].size(heads ? 1 : 0) : 1;
  auto shaped = [&] {
    PatchTable t(s.layers);
    for (int l = 0; l < s.layers; ++l) t[l].assign(units(l), std::vector<double>(positions, 0.0));
    return t;
  };

  if (request.attribution) {
    // One differentiable clean run with every site patched at weight 0: ∂metric/∂weight is
    // (corrupt − clean) · ∂metric/∂site, the first-order change of patching it.
    auto run = base_request(request, s);
    run.capture = core::kCaptureNone;
    run.differentiable = true;
    std::vector<torch::Tensor> weights;
    for (int l = 0; l < s.layers; ++l) {
      std::vector<int64_t> shape(values[l].dim(), 1);
      if (heads) shape[0] = values[l].size(0);
      if (request.each_position) shape[heads ? 1 : 0] = positions;
      core::ActivationPatch patch;
      patch.stack = s.stack;
      patch.layer = l;
      patch.site = site;
      patch.value = values[l];
      patch.weight = torch::zeros(shape, torch::kFloat32).requires_grad_(true);
      weights.push_back(patch.weight);
      run.patches.push_back(patch);
    }
    torch::Tensor metric;
    {
      torch::AutoGradMode grad(true);
      const auto trace = core::run(model, run);
      if (!s.clean) score_runs(trace->logits.detach());  // every weight 0: this run's logits are the clean run's
      metric = s.score(trace->logits);
    }
    const auto grads = torch::autograd::grad({metric}, weights, {}, false, false, /*allow_unused=*/true);
    result.attribution = shaped();
    for (int l = 0; l < s.layers; ++l) {
      const auto g = grads[l].defined() ? grads[l].to(torch::kFloat64).reshape({units(l), positions}).contiguous()
                                        : torch::zeros({units(l), positions}, torch::kFloat64);
      const auto* p = g.data_ptr<double>();
      for (int64_t u = 0; u < units(l); ++u)
        for (int64_t q = 0; q < positions; ++q) result.attribution[l][u][q] = result.clean + p[u * positions + q];
    }
    if (request.metric == PatchMetric::KL)
      result.notes.push_back("attribution patching: KL(clean ‖ run) has its minimum, and a zero gradient, at the clean "
                             "run: its first-order estimate is 0 everywhere; use a logit-diff or prob metric");
    if (request.partial) request.partial(result);
  }
  if (request.exact) {
    result.exact = shaped();
    for (auto& layer : result.exact)
      for (auto& unit : layer) std::fill(unit.begin(), unit.end(), std::nan(""));
    int64_t total = 0, done = 0;
    for (int l = 0; l < s.layers; ++l) total += units(l) * positions;
    auto run = base_request(request, s);
    run.previous = s.clean;
    for (int l = 0; l < s.layers; ++l)
      for (int64_t u = 0; u < units(l); ++u)
        for (int64_t p = 0; p < positions; ++p) {
          core::ActivationPatch patch;
          patch.stack = s.stack;
          patch.layer = l;
          patch.site = site;
          patch.head = heads ? static_cast<int>(u) : -1;
          patch.position = request.each_position ? static_cast<int>(p) : -1;
          patch.value = values[l];
          run.patches = {patch};
          const auto trace = core::run(model, run);
          result.layers_run += trace->layers_computed;
          result.exact[l][u][p] = s.score(trace->logits).item<double>();
          ++done;
          if (request.partial) request.partial(result);
          if (request.progress && !request.progress(done, total)) throw core::Cancelled();
        }
  }

  if (request.exact && request.attribution) {
    const double r = pearson(result.exact, result.attribution);
    if (!std::isnan(r)) result.correlation = r;
  }
  return result;
}

void check_path_patch(core::Model& model, HeadRef sender, const std::vector<HeadRef>& receivers, core::Site site) {
  if (site != core::Site::Q && site != core::Site::K && site != core::Site::V)
    throw std::invalid_argument(std::string("path patching reaches a receiver's q, k or v, not its ") + core::site_name(site));
  if (model.config.kind == core::StackKind::EncoderDecoder)
    throw std::invalid_argument("patching runs a decoder-only or encoder-only model; this one is an encoder-decoder");
  auto& m = *model.module;
  const core::Stack stack = model.config.decoder ? core::Stack::Decoder : core::Stack::Encoder;
  const int layers = m.layer_count(stack);
  auto check_head = [&](const HeadRef& h, const char* what) {
    if (h.layer < 0 || h.layer >= layers)
      throw std::invalid_argument(std::string("path patching: ") + what + " layer " + std::to_string(h.layer) +
                                  " of " + std::to_string(layers));
    const int heads = m.block(stack, h.layer)->attn->config().output_heads();
    if (h.head < 0 || h.head >= heads)
      throw std::invalid_argument(std::string("path patching: ") + what + " head " + std::to_string(h.head) +
                                  " of layer " + std::to_string(h.layer) + " (" + std::to_string(heads) + " heads)");
  };
  if (m.block(stack, 0)->attn->config().talking_heads)
    throw std::invalid_argument("path patching: talking heads mix every head's logits and weights; a receiver head "
                                "has no queries, keys or values of its own");
  check_head(sender, "sender");
  if (receivers.empty()) throw std::invalid_argument("path patching: no receiver heads");
  for (const auto& h : receivers) {
    check_head(h, "receiver");
    if (h.layer <= sender.layer)
      throw std::invalid_argument("path patching: receiver L" + std::to_string(h.layer) + " H" + std::to_string(h.head) +
                                  " is not in a layer after the sender's (" + std::to_string(sender.layer) + ")");
  }
  if (m.block(stack, sender.layer)->attn_out_norm)
    throw std::invalid_argument("path patching: this model normalises each attention output (sandwich norms); a "
                                "head's output has no separate term in the residual stream");
}

double path_patch(core::Model& model, const PatchRequest& request, HeadRef sender, const std::vector<HeadRef>& receivers,
                  core::Site site) {
  check_path_patch(model, sender, receivers, site);
  PatchRequest r = request;
  r.site = core::Site::Z;
  Setup s = prepare(model, r, core::kCaptureHeadOutputs, core::kCaptureHeadOutputs);
  auto& m = *model.module;
  const auto& clean = s.clean;
  c10::InferenceMode inference;
  // The sender's change on its direct path: (O_corrupt − O_clean)[h] W_O^h, its bias cancelling [T, D].
  auto sender_block = m.block(s.stack, sender.layer);
  const auto& a = sender_block->attn->config();
  const int64_t dv = a.value_size;
  const auto dO = s.corrupt->main_stack().layers[sender.layer].self.head_outputs[sender.head] -
                  clean->main_stack().layers[sender.layer].self.head_outputs[sender.head];  // [T, d_v]
  auto W_O = sender_block->attn->o->weight.narrow(1, sender.head * dv, dv).to(dO.scalar_type());  // [D, d_v]
  auto delta = torch::matmul(dO, W_O.t());                                                  // [T, D]
  // Each receiver layer computes its sites once more from clean stream + the sender's change.
  std::vector<core::ActivationPatch> patches;
  const int64_t T = static_cast<int64_t>(r.clean.size());
  for (const auto& h : receivers) {
    const auto input = (clean->main_stack().hidden[h.layer] + delta).unsqueeze(0);  // [1, T, D]
    core::BlockCall call;
    call.causal = s.stack == core::Stack::Decoder;
    call.capture = core::kCapturePatchSites;
    call.rope = m.rope_tables(T, s.stack);
    call.self_controls = &r.controls.get(s.stack, h.layer);
    core::AttentionStages stages, cross;
    m.block(s.stack, h.layer)->forward(input, call, &stages, &cross);
    const auto& ra = m.block(s.stack, h.layer)->attn->config();
    core::ActivationPatch patch;
    patch.stack = s.stack;
    patch.layer = h.layer;
    patch.site = site;
    patch.head = site == core::Site::Q ? h.head : h.head / (ra.heads / std::max(1, ra.kv_heads));
    if (ra.collaborative && site == core::Site::K) patch.head = 0;  // one shared key projection
    patch.value = (site == core::Site::Q ? stages.queries : site == core::Site::K ? stages.keys : stages.values).squeeze(0);
    patches.push_back(patch);
  }
  auto run = base_request(r, s);
  run.capture = s.clean->capture;  // the clean run's, so that it re-runs from the first receiver only
  run.previous = s.clean;
  run.patches = patches;
  return s.score(core::run(model, run)->logits).item<double>();
}

}  // namespace headlab::analysis
