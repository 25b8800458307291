// The one translation unit of the workbench that includes torch: it turns core's Trace into the
// plain buffers of a RunSnapshot.
#include "app/work/workbench_engine.h"

#include "app/work/relevance_run.h"
#include "analysis/spectra.h"
#include "core/file_hash.h"
#include "core/memory_budget.h"
#include "core/model/attention.h"
#include "core/model/device.h"
#include "core/model/map_pool.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/stacks.h"
#include "core/precision.h"
#include "core/tokenizer/framing.h"
#include "core/tokenizer/token_lookup.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

namespace headlab::app {
namespace {

// Per attention call and layer: the tensors a buffer was made from, so an unchanged layer (the same
// tensor, shared by core's incremental run) re-uses its buffer.
struct CachedLayer {
  torch::Tensor source[kStageCount];
  LayerMaps maps;
};

// `t` [heads, rows, cols], a thumbnail of a rows_full × cols_full map when smaller.
StageMaps to_maps(const torch::Tensor& t, int rows_full, int cols_full) {
  StageMaps m;
  if (!t.defined()) return m;
  auto c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();  // [heads, T, S]
  m.heads = static_cast<int>(c.size(0));
  m.rows = static_cast<int>(c.size(1));
  m.cols = static_cast<int>(c.size(2));
  m.full_rows = c.size(1) == 1 && c.size(2) == 1 ? 1 : rows_full;  // (a sink's share is [h, T, 1])
  m.full_cols = c.size(2) == 1 ? 1 : cols_full;
  auto buffer = std::make_shared<std::vector<float>>(static_cast<size_t>(c.numel()));
  std::memcpy(buffer->data(), c.data_ptr<float>(), buffer->size() * sizeof(float));
  m.data = std::move(buffer);
  return m;
}

}  // namespace

StageMaps thumbnail(const StageMaps& maps, int side) {
  if (side <= 0 || maps.empty() || maps.pooled()) return maps;
  auto full = torch::from_blob(const_cast<float*>(maps.data->data()), {maps.heads, maps.rows, maps.cols}, torch::kFloat);
  StageMaps out = to_maps(core::pool_map(full, side), maps.full_rows, maps.full_cols);
  return out;
}

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string norm_name(core::NormKind kind) { return kind == core::NormKind::RMSNorm ? "RMSNorm" : "LayerNorm"; }

AttentionSummary summarize(core::Stack stack, const std::string& title, const core::StackConfig& s,
                           const core::AttentionConfig& a, bool causal) {
  AttentionSummary out;
  out.stack = stack;
  out.title = title;
  out.layers = s.layers;
  out.logit_heads = a.logit_heads();
  out.softmax_heads = a.softmax_heads();
  out.output_heads = a.output_heads();
  out.kv_heads = a.kv_heads;
  out.key_size = a.key_size;
  out.value_size = a.value_size;
  out.talking_heads = a.talking_heads.has_value();
  out.causal = causal;
  out.variant = a.variant_name();
  if (s.local && &a == &s.attention) {  // self-attention with local layers (Gemma's sliding-window layers)
    out.variant += ", local layers";
    for (size_t i = 0; i < s.local->layers.size(); ++i) out.variant += (i ? ", " : " ") + std::to_string(s.local->layers[i]);
    if (s.local->pattern.window > 0) out.variant += " window=" + std::to_string(s.local->pattern.window);
  }
  return out;
}

}  // namespace

struct WorkbenchEngine::Impl {
  std::shared_ptr<core::Model> model;
  ModelSummary summary;
  std::shared_ptr<const core::Trace> last_trace, base_trace;
  torch::Tensor base_logp;  // [T, V] log-probabilities of the unmodified model
  torch::Tensor base_p;     // [T, V] its probabilities (for the KL without an exp per entry)
  std::vector<PositionOutput> base_outputs;  // its top-k, re-used while the controls are default
  int64_t base_outputs_k = 0;
  std::vector<std::vector<CachedLayer>> cache;  // per attention, per layer
  uint64_t generation = 0, layer_version = 0;
  int map_side = 0;  // the thumbnails' side of the run being converted (0: full maps)
  // The last explanation and what it explained (RunInput's relevance, controls, take, counterfactual).
  std::shared_ptr<const RelevanceResult> relevance;
  RunInput relevance_input;
  std::vector<int64_t> relevance_ids, relevance_decoder_ids;
  std::shared_ptr<const std::vector<analysis::LayerSpectra>> weight_spectra;  // of this model, once asked for
  bool weight_spectra_tried = false;
  std::shared_ptr<const analysis::Composition> circuits;  // with the weight spectra
  std::string circuits_error;
  // "Take from counterfactual": the counterfactual's run (head outputs) and, per layer, the weights
  // tensor [H, 1, 1] of the take values it was made from — kept while unchanged, so that an
  // incremental run sees the same patches (core::same_patch) and recomputes nothing.
  std::vector<int64_t> cf_ids;
  std::shared_ptr<const core::Trace> cf_trace;
  std::map<int, std::pair<std::vector<float>, torch::Tensor>> take_weights;

  // `counterfactual_ids` tokenizes the counterfactual as the text is tokenized (called only when
  // some head takes from it).
  std::vector<core::ActivationPatch> take_patches(const RunInput& input, const std::vector<int64_t>& ids,
                                                  const std::function<std::vector<int64_t>()>& counterfactual_ids,
                                                  std::string& note) {
    bool any = false;
    for (const auto& layer : input.take)
      for (float w : layer) any = any || w != 0;
    if (!any) return {};
    const auto& c = model->config;
    if (c.kind == core::StackKind::EncoderDecoder) {
      note = "taking heads from a counterfactual runs on decoder-only and encoder-only models";
      return {};
    }
    const core::Stack stack = c.decoder ? core::Stack::Decoder : core::Stack::Encoder;
    const auto cf_ids_now = counterfactual_ids();
    if (cf_ids_now.size() != ids.size()) {
      note = "the counterfactual has " + std::to_string(cf_ids_now.size()) + " tokens and the text " +
             std::to_string(ids.size()) + "; heads are taken from it only when both have the same length";
      return {};
    }
    if (!cf_trace || cf_ids != cf_ids_now) {
      core::RunRequest run;
      run.ids = cf_ids_now;
      run.capture = core::kCaptureHeadOutputs;
      run.logit_positions = {static_cast<int64_t>(ids.size()) - 1};
      cf_trace = core::run(*model, run);
      cf_ids = cf_ids_now;
      take_weights.clear();
    }
    std::vector<core::ActivationPatch> patches;
    const auto& layers = cf_trace->main_stack().layers;
    for (size_t l = 0; l < input.take.size() && l < layers.size(); ++l) {
      const auto& values = layers[l].self.head_outputs;  // [h_v, T, d_v]
      std::vector<float> w = input.take[l];
      w.resize(static_cast<size_t>(values.size(0)), 0.0f);
      if (std::all_of(w.begin(), w.end(), [](float x) { return x == 0; })) continue;
      auto& cached = take_weights[static_cast<int>(l)];
      if (!cached.second.defined() || cached.first != w) cached = {w, torch::tensor(w).view({-1, 1, 1})};
      core::ActivationPatch patch;
      patch.stack = stack;
      patch.layer = static_cast<int>(l);
      patch.site = core::Site::Z;
      patch.value = values;
      patch.weight = cached.second;
      patches.push_back(patch);
    }
    return patches;
  }

  // The precision the kept traces were computed in (core/precision.h). Another one since: they are
  // dropped, so nothing shown or reused below comes from the other precision.
  core::Precision traces_precision = core::Precision::exact;
  void forget_traces_of_another_precision() {
    if (traces_precision == core::current_precision()) return;
    traces_precision = core::current_precision();
    last_trace.reset();
    base_trace.reset();
    base_logp = torch::Tensor();
    base_outputs.clear();
    base_outputs_k = 0;
    cf_trace.reset();
    cf_ids.clear();
    for (auto& layers : cache) layers.clear();  // one list per attention stays
    relevance.reset();
  }

  void reset(std::shared_ptr<core::Model> m, const std::string& folder, bool random) {
    model = std::move(m);
    weight_spectra.reset();
    weight_spectra_tried = false;
    circuits.reset();
    circuits_error.clear();
    last_trace.reset();
    base_trace.reset();
    base_logp = torch::Tensor();
    cf_trace.reset();
    cf_ids.clear();
    take_weights.clear();
    cache.clear();
    relevance.reset();
    const auto& c = model->config;
    ModelSummary s;
    s.name = c.name;
    s.description = c.description;
    s.family = c.family;
    s.kind = core::to_string(c.kind);
    s.objective = c.objective;
    s.folder = folder;
    s.random_weights = random;
    s.has_tokenizer = model->tokenizer != nullptr;
    s.tokenizer_kind = model->tokenizer ? model->tokenizer->kind() : "none (words hashed to ids)";
    s.masked_lm = c.kind == core::StackKind::Encoder;
    s.parameters = c.parameter_count();
    s.hidden_size = c.hidden_size;
    s.vocab_size = c.vocab_size;
    s.max_positions = c.max_positions;
    s.ffn_size = c.ffn.kind == core::FfnKind::None ? 0 : c.ffn.inner_size;  // 0: attention only
    s.positions = core::to_string(c.positions);
    s.norm = norm_name(c.norm) + (c.norm_placement == core::NormPlacement::Pre ? " (pre)" : " (post)");
    s.weights_dtype = model->weights_dtype;
    s.mapped_bytes = model->mapped_bytes;
    s.device = core::device_name(core::model_device(*model));
    s.devices = {"cpu"};
    for (int i = 0; i < core::cuda_device_count(); ++i) s.devices.push_back("cuda:" + std::to_string(i));
    if (s.devices.size() == 1)
      s.no_card = core::built_with_cuda() ? "no CUDA card is visible" : "this build's LibTorch has no CUDA (app/README.md, \"The GPU build\")";
    s.summary_text = c.summary();
    if (c.encoder) s.attentions.push_back(summarize(core::Stack::Encoder, "encoder self-attention", *c.encoder, c.encoder->attention, false));
    if (c.decoder) {
      const bool enc_dec = c.kind == core::StackKind::EncoderDecoder;
      s.attentions.push_back(summarize(core::Stack::Decoder, enc_dec ? "decoder self-attention (causal)" : "self-attention (causal)",
                                       *c.decoder, c.decoder->attention, true));
      if (c.decoder->cross_attention)
        s.attentions.push_back(summarize(core::Stack::Cross, "cross-attention", *c.decoder, *c.decoder->cross_attention, false));
    }
    if (!folder.empty()) s.weights_hash = core::weights_identity(folder);
    summary = std::move(s);
    cache.resize(summary.attentions.size());
  }

  const core::StackTrace& stack_of(const core::Trace& t, core::Stack stack) const {
    return stack == core::Stack::Encoder ? t.encoder : t.decoder;
  }

  // Layer l of attention a from its captured stages, whose maps are rows × cols (T × S) at full size.
  LayerMaps layer_maps(size_t a, size_t l, const core::AttentionStages& s, int rows, int cols) {
    auto& layers = cache[a];
    if (layers.size() <= l) layers.resize(l + 1);
    CachedLayer& c = layers[l];
    const torch::Tensor src[kStageCount] = {s.logits, s.mixed_logits, s.weights, core::value_weights(s)};
    bool same = true;
    for (int i = 0; i < kStageCount; ++i)
      same = same && src[i].defined() == c.source[i].defined() &&
             (!src[i].defined() || src[i].unsafeGetTensorImpl() == c.source[i].unsafeGetTensorImpl());
    if (same && c.maps.version != 0) return c.maps;
    LayerMaps maps;
    maps.version = ++layer_version;
    for (int i = 0; i < kStageCount; ++i) {
      if (i == 3 && src[3].defined() && src[2].defined() &&
          (src[3].unsafeGetTensorImpl() == src[2].unsafeGetTensorImpl() ||
           (src[3].sizes() == src[2].sizes() && torch::equal(src[3], src[2]))))
        maps.stages[i] = maps.stages[2];  // U is W (no mixing after the softmax): share the buffer
      else
        maps.stages[i] = to_maps(src[i], rows, cols);
      c.source[i] = src[i];
    }
    maps.masked = masked_cells(a, l, src, rows, cols);
    if (s.sink_share.defined()) maps.sink = to_maps(s.sink_share.unsqueeze(-1), rows, 1);  // [h, T] → [h, T, 1]
    c.maps = maps;
    return maps;
  }

  // The cells the layer's pattern forbids (core::attention_allowed) of a T × S map, at the size the
  // maps were kept: a thumbnail's cell is forbidden when its whole block is.
  std::shared_ptr<const std::vector<uint8_t>> masked_cells(size_t a, size_t l, const torch::Tensor (&src)[kStageCount],
                                                           int64_t T, int64_t S) {
    const torch::Tensor* any = nullptr;
    for (const auto& t : src)
      if (t.defined()) any = &t;
    if (!any || any->dim() < 2) return nullptr;
    const auto& att = summary.attentions[a];
    const auto& c = model->config;
    const core::StackConfig* stack = att.stack == core::Stack::Encoder ? (c.encoder ? &*c.encoder : nullptr)
                                                            : (c.decoder ? &*c.decoder : nullptr);
    if (!stack) return nullptr;
    const core::AttentionPattern pattern =
        att.stack == core::Stack::Cross ? stack->cross_attention->pattern : stack->layer_attention(static_cast<int>(l)).pattern;
    auto allowed = core::attention_allowed(T, S, att.causal, pattern).to(torch::kFloat);  // [T, S], 1 = allowed
    if (any->size(-2) != T || any->size(-1) != S)  // a thumbnail: allowed where any key of the block is
      allowed = core::pool_map(allowed.unsqueeze(0), map_side).squeeze(0);
    allowed = allowed.to(torch::kUInt8).contiguous();
    if (allowed.min().item<int>() == 1) return nullptr;
    auto out = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(allowed.numel()));
    const uint8_t* p = allowed.data_ptr<uint8_t>();
    for (size_t i = 0; i < out->size(); ++i) (*out)[i] = p[i] ? 0 : 1;
    return out;
  }
};

WorkbenchEngine::WorkbenchEngine() : impl_(std::make_unique<Impl>()) {}
WorkbenchEngine::~WorkbenchEngine() = default;

ModelSummary WorkbenchEngine::load(const std::string& folder) { return use(core::load_model(folder), folder); }

ModelSummary WorkbenchEngine::use(std::shared_ptr<core::Model> model, const std::string& folder) {
  impl_->reset(std::move(model), fs::absolute(folder).lexically_normal().string(), false);
  return impl_->summary;
}

ModelSummary WorkbenchEngine::load_random(const std::string& config_path, uint64_t seed) {
  auto config = core::load_model_config(config_path);
  impl_->reset(core::make_random_model(config, seed), "", true);
  return impl_->summary;
}

bool WorkbenchEngine::loaded() const { return impl_->model != nullptr; }
const ModelSummary& WorkbenchEngine::summary() const { return impl_->summary; }

TokenizedText WorkbenchEngine::tokenize(const std::string& text, std::vector<std::pair<size_t, size_t>>* byte_spans) const {
  if (!impl_->model) throw std::runtime_error("no model loaded");
  TokenizedText out;
  if (byte_spans) byte_spans->clear();
  if (const auto& tok = impl_->model->tokenizer) {
    auto enc = core::model_encoding(impl_->model->config, *tok, text);
    out.ids = enc.ids;
    out.tokens = enc.tokens;
    out.special = enc.special;
    out.special.resize(out.ids.size(), false);
    if (byte_spans) {
      // Offsets are in code points: the byte where each code point starts (a stray continuation
      // byte counts as a code point of its own, as the tokenizer reads ill-formed UTF-8).
      std::vector<size_t> starts;
      for (size_t i = 0; i < text.size(); ++i)
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 || starts.empty() ||
            i - starts.back() >= 4)
          starts.push_back(i);
      starts.push_back(text.size());
      auto byte_of = [&](int64_t cp) { return starts[static_cast<size_t>(std::clamp<int64_t>(cp, 0, int64_t(starts.size()) - 1))]; };
      for (size_t t = 0; t < out.ids.size(); ++t) {
        const auto [a, b] = t < enc.offsets.size() ? enc.offsets[t] : std::pair<int64_t, int64_t>{0, 0};
        byte_spans->emplace_back(byte_of(a), byte_of(b));
      }
    }
    return out;
  }
  // No tokenizer (a random model from a bare config): words and single punctuation marks, hashed.
  const int64_t vocab = std::max(impl_->model->config.vocab_size, 8);
  auto add = [&](const std::string& word, size_t end) {
    const bool mask = word == "[MASK]";
    out.ids.push_back(mask ? 3 : 5 + static_cast<int64_t>(fnv1a(word) % static_cast<uint64_t>(vocab - 5)));
    out.tokens.push_back(word);
    out.special.push_back(mask);
    if (byte_spans) byte_spans->emplace_back(end - word.size(), end);
  };
  std::string word;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (text.compare(i, 6, "[MASK]") == 0) {
      if (!word.empty()) add(word, i), word.clear();
      add("[MASK]", i + 6);
      i += 5;
    } else if (std::isspace(c)) {
      if (!word.empty()) add(word, i), word.clear();
    } else if (c < 128 && std::ispunct(c)) {
      if (!word.empty()) add(word, i), word.clear();
      add(std::string(1, static_cast<char>(c)), i + 1);
    } else {
      word += static_cast<char>(c);
    }
  }
  if (!word.empty()) add(word, text.size());
  return out;
}

std::string WorkbenchEngine::trim_to_fit(const std::string& text, InputTrim mode, int centre, std::string& note) const {
  const int64_t max_t = impl_->model->config.max_positions;
  std::vector<std::pair<size_t, size_t>> spans;
  const TokenizedText all = tokenize(text, &spans);
  // The text's own tokens (not [CLS]/[SEP]/BOS): a cut keeps a run of them; the specials come back
  // when the cut text is tokenized again.
  std::vector<int> content;
  for (size_t t = 0; t < all.ids.size(); ++t)
    if (!all.special[t] && spans[t].second > spans[t].first) content.push_back(static_cast<int>(t));
  const int64_t specials = static_cast<int64_t>(all.ids.size() - content.size());
  const int64_t m = static_cast<int64_t>(content.size());
  int64_t keep = std::min<int64_t>(m, max_t - specials);
  if (keep < 1) throw InputRefused("the model takes at most " + std::to_string(max_t) + " tokens, fewer than its special tokens");
  int64_t first = 0;
  if (mode == InputTrim::Around) {
    // The content token nearest to the centre position of the whole tokenization.
    const auto at = std::lower_bound(content.begin(), content.end(), centre);
    const int64_t c = std::min<int64_t>(at - content.begin(), m - 1);
    first = std::clamp<int64_t>(c - keep / 2, 0, m - keep);
  }
  // A cut inside a word can tokenize into more pieces than it had: shrink until it fits.
  for (int shrink = 0;; ++shrink) {
    const size_t from = spans[static_cast<size_t>(content[static_cast<size_t>(first)])].first;
    const size_t to = spans[static_cast<size_t>(content[static_cast<size_t>(first + keep - 1)])].second;
    std::string cut = text.substr(from, to - from);
    if (static_cast<int64_t>(tokenize(cut).ids.size()) <= max_t) {
      note = "kept tokens " + std::to_string(first) + "–" + std::to_string(first + keep - 1) + " of the " +
             std::to_string(m) + " the text has (the model takes " + std::to_string(max_t) + " with its special tokens)";
      return cut;
    }
    if (keep <= 1) throw InputRefused("no cut of the text fits the model's " + std::to_string(max_t) + " positions");
    --keep;
    if (mode == InputTrim::Around && shrink % 2 == 1) ++first;
  }
}

std::shared_ptr<const RunSnapshot> WorkbenchEngine::run(const RunInput& input, const std::atomic<bool>* cancel,
                                                        const EngineProgress& progress) {
  auto& m = *impl_;
  if (!m.model) throw std::runtime_error("no model loaded");
  const auto start = std::chrono::steady_clock::now();
  const bool enc_dec = m.model->config.kind == core::StackKind::EncoderDecoder;
  auto snap = std::make_shared<RunSnapshot>();
  snap->input = input;
  snap->tokens = tokenize(input.text);
  if (snap->tokens.ids.empty()) throw InputRefused("the text has no tokens");
  const int64_t max_t = m.model->config.max_positions;
  if (static_cast<int64_t>(snap->tokens.ids.size()) > max_t) {
    if (input.trim == InputTrim::None)
      throw InputRefused("the text has " + std::to_string(snap->tokens.ids.size()) + " tokens; the model takes at most " +
                             std::to_string(max_t),
                         static_cast<int64_t>(snap->tokens.ids.size()), max_t);
    snap->input.text = trim_to_fit(input.text, input.trim, input.trim_centre, snap->trimmed);
    snap->tokens = tokenize(snap->input.text);
  }
  const RunInput& run_input = snap->input;
  if (enc_dec) {
    snap->decoder_tokens = tokenize(run_input.decoder_text.empty() ? run_input.text : run_input.decoder_text);
    if (snap->decoder_tokens.ids.empty()) throw InputRefused("the decoder text has no tokens");
    // Hugging Face encoder-decoders read their target text behind the decoder's start token (BART's
    // </s>, T5's and Marian's <pad>: the labels shifted right), as in training.
    const auto& start = m.model->config.decoder_start_id;
    auto& dec = snap->decoder_tokens;
    if (start && dec.ids.front() != *start) {
      const auto* tokenizer = m.model->tokenizer.get();
      dec.ids.insert(dec.ids.begin(), *start);
      dec.tokens.insert(dec.tokens.begin(), tokenizer ? tokenizer->id_to_token(*start) : "<start>");
      dec.special.insert(dec.special.begin(), true);
    }
  }
  if (static_cast<int64_t>(snap->decoder_tokens.ids.size()) > max_t)
    throw InputRefused("the decoder text has " + std::to_string(snap->decoder_tokens.ids.size()) +
                       " tokens; the model takes at most " + std::to_string(max_t));

  // Where to predict: the requested positions, else every [MASK] (masked LM), else the last real
  // token (a masked LM without [MASK]: not [SEP]).
  const auto* tok = m.model->tokenizer.get();
  const auto& out_tokens = enc_dec ? snap->decoder_tokens : snap->tokens;
  std::optional<int64_t> mask = tok ? tok->mask_id() : std::optional<int64_t>(3);
  if (m.summary.masked_lm && mask) {
    for (size_t t = 0; t < out_tokens.ids.size(); ++t)
      if (out_tokens.ids[t] == *mask) snap->default_positions.push_back(static_cast<int>(t));
  }
  if (snap->default_positions.empty()) {
    int last = static_cast<int>(out_tokens.ids.size()) - 1;
    while (m.summary.masked_lm && last > 0 && out_tokens.special[last]) --last;
    snap->default_positions.push_back(std::max(0, last));
  }
  // A requested position the (edited) text no longer has is dropped: a stale Output-view choice
  // must not fail the run (the view resets it when the new snapshot arrives).
  std::vector<int> positions;
  for (int t : input.output_positions)
    if (t >= 0 && t < static_cast<int>(out_tokens.ids.size())) positions.push_back(t);
  if (positions.empty()) positions = snap->default_positions;

  core::RunRequest request;
  request.logit_positions.assign(positions.begin(), positions.end());
  request.ids = snap->tokens.ids;
  if (enc_dec) request.decoder_ids = snap->decoder_tokens.ids;
  request.capture = core::kCaptureWeights | core::kCaptureMixedWeights | core::kCaptureResidual;
  if (input.all_stages || input.logit_spectra) request.capture |= core::kCaptureLogits | core::kCaptureMixedLogits;
  request.cancel = cancel;
  request.progress = progress;
  // Thumbnails but for the open layer when the maps would be large (RunInput::full_maps_budget).
  const int64_t full_maps = core::estimate_run_memory(m.model->config, static_cast<int64_t>(request.ids.size()),
                                                      static_cast<int64_t>(request.decoder_ids.size()), request.capture)
                                .maps;
  const bool longer_than_thumbnail = std::max(request.ids.size(), request.decoder_ids.size()) > size_t(kThumbnailSide);
  if (input.full_maps_budget > 0 && full_maps > input.full_maps_budget && longer_than_thumbnail && !input.logit_spectra &&
      !(input.relevance.enabled && input.relevance.flow)) {
    request.maps.thumbnail_side = kThumbnailSide;
    request.maps.full_stack = input.open_stack;
    request.maps.full_layer = input.open_layer;
  }
  m.map_side = request.maps.thumbnail_side;
  snap->maps = request.maps;

  m.forget_traces_of_another_precision();
  // A trace this request can start from: same input and capture (a trace with another full layer
  // re-runs only that layer, core::run).
  auto compatible = [&](const std::shared_ptr<const core::Trace>& t) {
    return t && t->ids == request.ids && t->decoder_ids == request.decoder_ids && t->capture == request.capture &&
           t->maps.thumbnail_side == request.maps.thumbnail_side;
  };
  const auto model_start = std::chrono::steady_clock::now();
  // The unmodified model on this input: the reference for Δp and KL (at the same positions).
  if (!compatible(m.base_trace) || m.base_trace->logit_positions != request.logit_positions ||
      m.base_trace->maps != request.maps) {
    core::RunRequest base = request;
    base.controls = core::ModelControls{};
    base.previous = compatible(m.base_trace) ? m.base_trace : compatible(m.last_trace) ? m.last_trace : nullptr;
    m.base_trace = core::run(*m.model, base);
    m.base_logp = torch::log_softmax(m.base_trace->logits.to(torch::kCPU, torch::kFloat), -1).contiguous();  // read on the host
    m.base_p = m.base_logp.exp().contiguous();
    m.base_outputs.clear();
    m.base_outputs_k = 0;
  }
  std::shared_ptr<const core::Trace> trace;
  auto patches = m.take_patches(
      input, request.ids, [&] { return tokenize(input.counterfactual).ids; }, snap->counterfactual_note);
  if (input.controls.is_default() && patches.empty()) {
    trace = m.base_trace;
  } else {
    request.controls = input.controls;
    request.patches = std::move(patches);
    request.previous = compatible(m.last_trace) ? m.last_trace : m.base_trace;
    trace = core::run(*m.model, request);
  }
  m.last_trace = trace;
  snap->model_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - model_start).count();

  for (size_t a = 0; a < m.summary.attentions.size(); ++a) {
    const auto& att = m.summary.attentions[a];
    AttentionMaps maps;
    maps.stack = att.stack;
    const auto& st = m.stack_of(*trace, core::layers_of(att.stack));
    const int rows = static_cast<int>(snap->query_tokens(att.stack).ids.size());
    const int cols = static_cast<int>(snap->key_tokens(att.stack).ids.size());
    for (size_t l = 0; l < st.layers.size(); ++l)
      maps.layers.push_back(m.layer_maps(a, l, core::stages_of(*trace, att.stack, static_cast<int>(l)), rows, cols));
    snap->attentions.push_back(std::move(maps));
  }
  const auto& stack_layers = trace->main_stack().layers;
  const bool routed = std::any_of(stack_layers.begin(), stack_layers.end(), [](const auto& l) { return l.experts.defined(); });
  for (const auto& layer : stack_layers) {
    if (!routed) break;
    if (!layer.experts.defined()) {  // a dense layer among expert layers: no experts for any token
      snap->experts.emplace_back();
      continue;
    }
    const auto e = layer.experts.to(torch::kCPU, torch::kLong).contiguous();  // [T, k]
    const int64_t* ids = e.data_ptr<int64_t>();                  // read once, not one item() per cell
    const int64_t T = e.size(0), k = e.size(1);
    std::vector<std::vector<int>> tokens(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) tokens[size_t(t)].assign(ids + t * k, ids + (t + 1) * k);
    snap->experts.push_back(std::move(tokens));
  }

  // Predictions at the chosen positions, against the unmodified model, in one pass over the raw
  // logits: log p = logit − logsumexp(row); top-k by logit (the same order) with a small sorted
  // array; the KL(base ‖ this) = Σ p_base (log p_base − log p) alongside. (At all 128 positions ×
  // 8000 words this took ~1.5 ms where log_softmax + topk + a KL pass took ~5, 1 thread.)
  const int64_t k = std::min<int64_t>(std::max(1, input.top_k), trace->logits.size(1));
  if (trace == m.base_trace && m.base_outputs_k == k) {
    snap->outputs = m.base_outputs;
  } else {
    auto logits = trace->logits.to(torch::kCPU, torch::kFloat).contiguous();  // [P, V], rows = positions
    auto lse = torch::logsumexp(logits, -1).contiguous();         // [P]
    const int64_t T = logits.size(0), V = logits.size(1);
    const float* lg = logits.data_ptr<float>();
    const float* ls = lse.data_ptr<float>();
    const float* blp = m.base_logp.data_ptr<float>();
    const float* bp = m.base_p.data_ptr<float>();
    const bool is_base = trace == m.base_trace;
    std::vector<std::pair<float, int64_t>> top;  // (logit, id), best first
    for (int64_t t = 0; t < T; ++t) {
      PositionOutput po;
      po.position = positions[static_cast<size_t>(t)];
      const float* row = lg + t * V;
      const float* brow = blp + t * V;
      const float* bprow = bp + t * V;
      top.clear();
      float kl = 0;
      for (int64_t v = 0; v < V; ++v) {
        const float x = row[v];
        if (!is_base) kl += bprow[v] * (brow[v] - (x - ls[t]));
        if (static_cast<int64_t>(top.size()) < k || x > top.back().first) {
          if (static_cast<int64_t>(top.size()) == k) top.pop_back();
          auto at = std::upper_bound(top.begin(), top.end(), x, [](float a, const auto& b) { return a > b.first; });
          top.insert(at, {x, v});
        }
      }
      po.kl = std::max(0.0f, kl);
      for (const auto& [x, id] : top) {
        Prediction pr;
        pr.id = id;
        pr.p = std::exp(x - ls[t]);
        // The unmodified run is its own reference: the same number, not a second rounding of it.
        pr.p_base = is_base ? pr.p : std::exp(brow[pr.id]);
        pr.token = core::token_name(tok, pr.id);
        po.top.push_back(std::move(pr));
      }
      snap->outputs.push_back(std::move(po));
    }
    if (trace == m.base_trace) m.base_outputs = snap->outputs, m.base_outputs_k = k;
  }
  if (input.weight_spectra && !m.weight_spectra_tried) {
    m.weight_spectra_tried = true;
    try {
      torch::NoGradGuard no_grad;
      m.weight_spectra = std::make_shared<const std::vector<analysis::LayerSpectra>>(analysis::key_query_spectra(*m.model));
    } catch (const std::exception&) {
      m.weight_spectra.reset();  // the Spectra view says so; the run itself is fine
    }
    try {
      torch::NoGradGuard no_grad;
      m.circuits = std::make_shared<const analysis::Composition>(analysis::composition_scores(*m.model));
    } catch (const std::exception& e) {
      m.circuits_error = e.what();  // the Circuits view says so
    }
  }
  if (input.weight_spectra) {
    snap->weight_spectra = m.weight_spectra;
    snap->circuits = m.circuits;
    snap->circuits_error = m.circuits_error;
  }
  if (input.logit_spectra) {
    auto spectra = std::make_shared<std::map<core::Stack, std::vector<std::vector<analysis::Spectrum>>>>();
    for (const auto& att : m.summary.attentions) {
      const auto& st = m.stack_of(*trace, core::layers_of(att.stack));
      auto& layers = (*spectra)[att.stack];
      for (size_t l = 0; l < st.layers.size(); ++l)
        layers.push_back(analysis::logit_spectra(core::stages_of(*trace, att.stack, static_cast<int>(l))));
    }
    snap->logit_spectra = std::move(spectra);
  }
  // The Relevance view's explanation, with the same controls (a backward pass: about twice a forward).
  if (input.relevance.enabled) {
    if (cancel && cancel->load()) throw core::Cancelled();
    // The same input, controls, counterfactual and target as the last explanation (another layer
    // opened, another stage shown): the same numbers, not another backward pass.
    const auto& was = m.relevance_input;
    const bool same = m.relevance && m.relevance_ids == request.ids && m.relevance_decoder_ids == request.decoder_ids &&
                      was.relevance == run_input.relevance && was.take == run_input.take &&
                      was.counterfactual == run_input.counterfactual &&
                      was.controls.encoder_self == run_input.controls.encoder_self &&
                      was.controls.decoder_self == run_input.controls.decoder_self &&
                      was.controls.decoder_cross == run_input.controls.decoder_cross;
    if (!same) {
      m.relevance = explain_run(*m.model, *trace, run_input, cancel);
      m.relevance_input = run_input;
      m.relevance_ids = request.ids;
      m.relevance_decoder_ids = request.decoder_ids;
    }
    snap->relevance = m.relevance;
  }
  snap->recomputed_stack = trace->recomputed_stack;
  snap->recomputed_from = trace->recomputed_from;
  snap->layers_computed = trace->layers_computed;
  snap->generation = ++m.generation;
  snap->run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return snap;
}

}  // namespace headlab::app
