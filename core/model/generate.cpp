#include "core/model/generate.h"

#include "core/model/device.h"
#include "core/model/kv_cache.h"
#include "core/memory_budget.h"
#include "core/model/run.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

namespace headlab::core {
namespace {

// The last query's row of U [1, h_v, T, S] over keys at `key_positions`, spread over T_s positions.
torch::Tensor last_row(const AttentionStages& stages, const torch::Tensor& key_positions, int64_t total) {
  const auto& u = value_weights(stages);
  auto row = u.select(0, 0).select(1, u.size(2) - 1);  // [h_v, S]
  if (!key_positions.defined() || (key_positions.size(0) == total && row.size(1) == total)) return row.clone();
  auto full = torch::zeros({row.size(0), total}, row.options());
  full.index_copy_(1, key_positions, row);
  return full;
}

// The last query's sink share [h] of `sink_share` [.., h, T] (batch dimension stripped or not), or
// an undefined tensor in a layer without sinks.
torch::Tensor last_sink_share(const torch::Tensor& sink_share) {
  if (!sink_share.defined()) return {};
  const auto rows = sink_share.dim() == 3 ? sink_share.select(0, 0) : sink_share;  // [h, T]
  return rows.select(1, rows.size(1) - 1).clone();
}

// Feeds tokens through a model with a cache: the encoder once, then the decoder chunk by chunk.
class CachedDecoder {
 public:
  CachedDecoder(Model& model, const GenerateRequest& request) : model_(model), request_(request) {
    auto& m = *model.module;
    layers_ = m.layer_count(Stack::Decoder);
    cache_.self.resize(layers_);
    if (model.config.kind == StackKind::EncoderDecoder) {
      cache_.cross.resize(layers_);
      // The encoder runs once; the decoder's cross-attention caches its keys and values.
      const int enc_layers = m.layer_count(Stack::Encoder);
      torch::Tensor h = m.embed(ids_on_device(request.prompt, model));
      BlockCall call;
      call.rope = m.rope_tables(h.size(1), Stack::Encoder);
      for (int l = 0; l < enc_layers; ++l) {
        check_cancel();
        call.self_controls = &request.controls.get(Stack::Encoder, l);
        h = m.block(Stack::Encoder, l)->forward(h, call, nullptr, nullptr);
      }
      memory_ = m.encoder_final_norm ? m.encoder_final_norm(h) : h;
    }
  }

  // Feeds `ids` at the next positions; returns the last position's logits [V] and fills the
  // step's attention rows.
  torch::Tensor feed(const std::vector<int64_t>& ids, GenerationStep& step) {
    auto& m = *model_.module;
    const int64_t position = cache_.next_position, T = static_cast<int64_t>(ids.size());
    torch::Tensor h = m.embed(ids_on_device(ids, model_), {}, false, position, Stack::Decoder);
    BlockCall call;
    call.causal = true;
    call.memory = memory_;
    call.capture = kCaptureWeights | kCaptureMixedWeights;
    call.rope = m.rope_tables(position + T, Stack::Decoder);
    call.position = position;
    step.attention.clear();
    step.cross_attention.clear();
    step.sink_share.clear();
    for (int l = 0; l < layers_; ++l) {
      check_cancel();
      call.self_controls = &request_.controls.get(Stack::Decoder, l);
      call.cross_controls = &request_.controls.get(Stack::Cross, l);
      call.self_cache = &cache_.self[l];
      call.cross_cache = cache_.cross.empty() ? nullptr : &cache_.cross[l];
      AttentionStages self, cross;
      h = m.block(Stack::Decoder, l)->forward(h, call, &self, &cross);
      step.attention.push_back(last_row(self, cache_.self[l].positions, position + T));
      step.sink_share.push_back(last_sink_share(self.sink_share));
      if (memory_.defined()) step.cross_attention.push_back(last_row(cross, {}, memory_.size(1)));
      if (request_.progress && !request_.progress(l + 1, layers_)) throw Cancelled();
    }
    cache_.next_position = position + T;
    step.cache_bytes = cache_.bytes();
    return m.head(h.narrow(1, T - 1, 1), Stack::Decoder).view(-1);
  }

 private:
  // A Stop takes effect within one layer of the step under way (the step is then dropped).
  void check_cancel() const {
    if (request_.cancel && request_.cancel->load()) throw Cancelled();
  }

  Model& model_;
  const GenerateRequest& request_;
  int layers_ = 0;
  KvCache cache_;
  torch::Tensor memory_;  // [1, S, D] the encoder's output (encoder-decoder)
};

// The baseline: every step runs the whole sequence (core::run) and reads its last position.
torch::Tensor recompute(Model& model, const GenerateRequest& request, const std::vector<int64_t>& sequence,
                        GenerationStep& step) {
  const bool enc_dec = model.config.kind == StackKind::EncoderDecoder;
  RunRequest r;
  r.ids = enc_dec ? request.prompt : sequence;
  if (enc_dec) r.decoder_ids = sequence;
  r.controls = request.controls;
  r.capture = kCaptureWeights | kCaptureMixedWeights;
  r.logit_positions = {static_cast<int64_t>(sequence.size()) - 1};
  r.cancel = request.cancel;  // checked between layers: run() throws Cancelled
  r.progress = request.progress;
  const auto trace = run(model, r);
  step.attention.clear();
  step.cross_attention.clear();
  step.sink_share.clear();
  for (const auto& layer : trace->decoder.layers) {
    const auto& u = value_weights(layer.self);  // [h_v, T, T]
    step.attention.push_back(u.select(1, u.size(1) - 1).clone());
    step.sink_share.push_back(last_sink_share(layer.self.sink_share));
    if (enc_dec) {
      const auto& c = value_weights(layer.cross);
      step.cross_attention.push_back(c.select(1, c.size(1) - 1).clone());
    }
  }
  return trace->logits.view(-1);
}

}  // namespace

int64_t sample_token(const torch::Tensor& device_logits, const Sampling& sampling, at::Generator& generator) {
  // On the host, where the generator draws: the same seed samples the same tokens on a card.
  const torch::Tensor logits = device_logits.to(torch::kCPU);
  if (sampling.temperature <= 0) return logits.argmax().item<int64_t>();
  auto probs = torch::softmax(logits.to(torch::kFloat64) / double(sampling.temperature), -1);  // [V]
  const int64_t V = probs.size(0);
  if (sampling.top_k > 0 && sampling.top_k < V) {
    const double kth = std::get<0>(probs.topk(sampling.top_k)).min().item<double>();
    probs = torch::where(probs.lt(kth), torch::zeros_like(probs), probs);
  }
  if (sampling.top_p < 1) {
    // Nucleus: the most probable tokens until their sum reaches p (the one crossing p included).
    auto [sorted, order] = probs.sort(-1, /*descending=*/true);
    auto before = sorted.cumsum(0) - sorted;  // probability mass ahead of each token
    auto drop = before.ge(double(sampling.top_p) * probs.sum().item<double>());
    probs = probs.index_put({order.masked_select(drop)}, torch::zeros({}, probs.options()));
  }
  return at::multinomial(probs / probs.sum(), 1, false, generator).item<int64_t>();
}

Generation generate(Model& model, const GenerateRequest& request,
                    const std::function<void(const GenerationStep&)>& on_step) {
  c10::InferenceMode inference;
  const auto& config = model.config;
  if (!config.decoder)
    throw std::invalid_argument(config.name + " has no decoder: generation needs a causal LM or an encoder-decoder");
  const bool enc_dec = config.kind == StackKind::EncoderDecoder;
  if (request.prompt.empty()) throw std::invalid_argument("generate: the prompt is empty");
  if (enc_dec && request.decoder_prompt.empty())
    throw std::invalid_argument("generate: an encoder-decoder needs the decoder's first token");
  if (request.max_new < 0) throw std::invalid_argument("generate: max_new must be >= 0");
  const Sampling& sampling = request.sampling;
  if (!(sampling.temperature >= 0) || !std::isfinite(sampling.temperature))
    throw std::invalid_argument("generate: the temperature must be a finite number >= 0 (0: greedy), not " +
                                std::to_string(sampling.temperature));
  if (!(sampling.top_p > 0 && sampling.top_p <= 1))
    throw std::invalid_argument("generate: top_p must be in (0, 1] (1: every token; greedy is temperature 0), not " +
                                std::to_string(sampling.top_p));
  if (sampling.top_k < 0) throw std::invalid_argument("generate: top_k must be >= 0 (0: every token)");
  std::vector<int64_t> sequence = enc_dec ? request.decoder_prompt : request.prompt;
  const int64_t total = static_cast<int64_t>(sequence.size()) + request.max_new;
  // Dynamic RoPE (transformers' dynamic NTK) exists to run past max_positions: its base grows with
  // the sequence's length. Every other model generates within its context (`run` reads longer
  // inputs of a rotary model, to study how its heads extrapolate).
  const bool dynamic_rope = config.rope_scaling.kind == RopeScalingKind::Dynamic;
  if (config.max_positions > 0 && total > config.max_positions && !dynamic_rope)
    throw std::invalid_argument("a prompt of " + std::to_string(sequence.size()) +
                                (sequence.size() == 1 ? " token and " : " tokens and ") +
                                std::to_string(request.max_new) + (request.max_new == 1 ? " new one" : " new ones") +
                                " is more than the " +
                                std::to_string(config.max_positions) + " positions this model takes");

  // Refused before anything is allocated when it cannot fit (core/memory_budget.h): the attention
  // rows every step keeps (half of a full run's maps), and the KV cache.
  const int64_t source = enc_dec ? static_cast<int64_t>(request.prompt.size()) : total;
  auto estimate = estimate_run_memory(config, source, enc_dec ? total : 0, kCaptureMixedWeights, 1);
  estimate.captured += kv_cache_bytes(config, total);
  check_run_memory(estimate, model, "this generation", total);

  auto generator = at::make_generator<at::CPUGeneratorImpl>(request.sampling.seed);
  Generation out;
  out.stopped = "max_new";
  std::unique_ptr<CachedDecoder> decoder;
  std::vector<int64_t> feed = sequence;
  try {
    if (request.use_cache) decoder = std::make_unique<CachedDecoder>(model, request);
  } catch (const Cancelled&) {
    out.stopped = "cancelled";
    return out;
  }
  for (int s = 0; s < request.max_new; ++s) {
    if (request.cancel && request.cancel->load()) {
      out.stopped = "cancelled";
      break;
    }
    GenerationStep step;
    if (decoder && dynamic_rope && static_cast<int64_t>(sequence.size()) > config.max_positions) {
      // Past max_positions dynamic RoPE's base changes with every token, and the cached keys were
      // rotated at an older one (transformers keeps them so): from here each step recomputes the
      // sequence, so that it is the model's own run.
      decoder.reset();
      out.notes.push_back("dynamic RoPE: the steps past the model's " + std::to_string(config.max_positions) +
                          " positions recompute the sequence (its base grows with the length, so cached keys "
                          "would be stale)");
    }
    try {
      // A Stop within the step (between its layers) drops the step: the steps before it stand.
      step.logits = decoder ? decoder->feed(feed, step) : recompute(model, request, sequence, step);
    } catch (const Cancelled&) {
      out.stopped = "cancelled";
      break;
    }
    step.token = static_cast<size_t>(s) < request.forced.size() ? request.forced[size_t(s)]
                                                               : sample_token(step.logits, request.sampling, generator);
    sequence.push_back(step.token);
    feed = {step.token};
    out.tokens.push_back(step.token);
    if (on_step) on_step(step);
    const bool stop = std::find(request.stop_ids.begin(), request.stop_ids.end(), step.token) != request.stop_ids.end();
    out.steps.push_back(std::move(step));
    if (stop) {
      out.stopped = "end of sequence";
      break;
    }
  }
  return out;
}

}  // namespace headlab::core
