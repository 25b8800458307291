// The workbench's torch-free view of the engine: load a model folder into a plain ModelSummary,
// run text with ModelControls into an immutable RunSnapshot of plain float buffers. GUI
// translation units include this header, never <torch/torch.h> (a LibTorch include costs ~13 s of
// compile time per translation unit).
// Not thread-safe: one WorkbenchEngine is driven by one worker thread.
#pragma once

#include "core/asset_paths.h"
#include "analysis/composition.h"
#include "analysis/spectra.h"
#include "core/controls.h"
#include "core/map_detail.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace headlab::core {
struct Model;
}

namespace headlab::app {

// The stages of one attention call (core/controls.h).
using core::kStageCount;
using core::Stage;
using core::stage_from_name;
using core::stage_name;

// One kind of attention in a model: "encoder" / "decoder" self-attention, or "cross".
struct AttentionSummary {
  core::Stack stack = core::Stack::Encoder;
  std::string title;     // "encoder self-attention", …
  int layers = 0;
  int logit_heads = 0;   // h_k (J)
  int softmax_heads = 0; // h (L, W)
  int output_heads = 0;  // h_v (U; gates act here)
  int kv_heads = 0;
  int key_size = 0, value_size = 0;
  bool talking_heads = false;
  bool causal = false;
  std::string variant;   // "MHA", "talking-heads(6/4/8)", …
  int heads(Stage stage) const;
};

struct ModelSummary {
  std::string name, description, family, kind, objective;
  std::string folder;            // "" for an in-memory random model
  std::string weights_hash;      // FNV-1a 64 of the weight file(s), hex; "" for random weights
  bool random_weights = false;
  bool has_tokenizer = false;
  bool masked_lm = false;        // encoder with objective mlm: predictions at [MASK]
  int64_t parameters = 0;
  int hidden_size = 0, vocab_size = 0, max_positions = 0, ffn_size = 0;
  std::string positions, norm, tokenizer_kind, weights_dtype;
  int64_t mapped_bytes = 0;  // weights left as views of the mapped files (core::Model::mapped_bytes)
  std::string device = "cpu";  // where the model runs (core/model/device.h)
  std::vector<std::string> devices;  // where it could run here: "cpu", then each card ("cuda:0", …)
  std::string no_card;               // why `devices` holds no card ("" when it does)
  std::vector<AttentionSummary> attentions;  // encoder, decoder, cross (those present)
  std::string summary_text;                  // core's one-paragraph summary
  const AttentionSummary* find(core::Stack stack) const;
};

// Maps of one attention call at one stage: [heads, rows (queries), cols (keys)]. A thumbnail
// (RunSnapshot::maps) has fewer rows and columns than the map it was pooled from: each cell is the
// largest weight of a block of full_rows / rows queries × full_cols / cols keys (core/map_detail.h).
struct StageMaps {
  int heads = 0, rows = 0, cols = 0;
  int full_rows = 0, full_cols = 0;  // the map's own size (T, S): rows and cols unless pooled
  std::shared_ptr<const std::vector<float>> data;
  bool empty() const { return !data || data->empty(); }
  bool pooled() const { return rows != full_rows || cols != full_cols; }
  const float* head(int h) const { return data->data() + static_cast<size_t>(h) * rows * cols; }
  float at(int h, int q, int k) const { return (*data)[(static_cast<size_t>(h) * rows + q) * cols + k]; }
};

struct LayerMaps {
  StageMaps stages[kStageCount];  // J, L, W, U (a stage not captured is empty)
  // AttentionConfig::sinks: each query's share of the learned sink [heads, rows, 1]; empty otherwise.
  StageMaps sink;
  uint64_t version = 0;           // changes whenever this layer was recomputed
  // [rows, cols]: 1 where the layer's attention pattern forbids the key (causal, sliding window,
  // dilation, global tokens), so a view can shade it apart from a weight that is merely small;
  // null when every key is allowed. A thumbnail's cell is 1 when every key of its block is forbidden.
  std::shared_ptr<const std::vector<uint8_t>> masked;
  bool is_masked(int q, int k) const { return masked && (*masked)[static_cast<size_t>(q) * cols() + k]; }
  int cols() const {
    for (const auto& s : stages)
      if (!s.empty()) return s.cols;
    return 0;
  }
  // True when the layer's maps are thumbnails (every captured stage is pooled alike).
  bool pooled() const {
    for (const auto& s : stages)
      if (!s.empty()) return s.pooled();
    return false;
  }
};

struct AttentionMaps {
  core::Stack stack = core::Stack::Encoder;
  std::vector<LayerMaps> layers;
};

// `maps` max-pooled as a run pools its thumbnails (core/model/map_pool.h): for a figure of every
// head where the open layer is whole and the rest are thumbnails. `maps` itself when already pooled
// or when side ≤ 0.
StageMaps thumbnail(const StageMaps& maps, int side);

struct Prediction {
  int64_t id = 0;
  std::string token;
  float p = 0, p_base = 0;  // probability now and in the unmodified model
};

// Top-k at one position (the distribution over the next / masked token).
struct PositionOutput {
  int position = 0;
  std::vector<Prediction> top;
  float kl = 0;  // KL(unmodified ‖ now) over the whole vocabulary, nats
};

struct TokenizedText {
  std::vector<int64_t> ids;
  std::vector<std::string> tokens;
  std::vector<bool> special;
};

// What the Relevance view asks to explain with each run: a logit at `position` (-1 = the default:
// the first [MASK] of a masked LM, else the last position; the decoder's for an encoder-decoder) of
// `token` (-1 = the top-1 token there), with the run's own controls.
struct RelevanceRequest {
  bool enabled = false;
  int position = -1;
  int64_t token = -1;
  bool flow = false;  // also the attention flow (a max-flow per input token: the slow part)
  bool operator==(const RelevanceRequest& o) const {
    return enabled == o.enabled && position == o.position && token == o.token && flow == o.flow;
  }
};

// Why the model predicts what it does on this input (analysis/LRP.md's rules; Abnar & Zuidema 2020
// for rollout and flow). Plain numbers, torch-free.
struct RelevanceResult {
  std::string error;       // why nothing could be explained ("" when the numbers below hold)
  int position = 0;        // the explained position (decoder side for an encoder-decoder)
  int64_t token = 0;       // the explained token id
  std::string token_text;  // its text
  double target = 0;       // f, the logit explained
  double bias = 0;         // relevance of the additive constants (biases, positions)
  double residual = 0;     // |Σ input + bias − f|: 0 for a conservative propagation
  double relative_residual = 0;  // residual / |f|
  std::vector<double> input;          // [T] LRP relevance per input token (encoder side)
  std::vector<double> decoder_input;  // [T_dec] encoder-decoder only
  // Raw head relevance R_i by stack: [layers][output heads].
  std::map<core::Stack, std::vector<std::vector<double>>> heads;
  core::Stack flow_stack = core::Stack::Encoder;  // the stack rollout and flow are read on (the target's)
  std::vector<double> rollout;  // [T] the target position's row of the attention rollout
  std::vector<double> flow;     // [T] attention flow into the target position (when requested)
  double ms = 0;                // the time the explanation took
};

// An input the model would not run: too long for its positions, no tokens, more memory than the
// limit. Thrown before any work; `tokens` and `limit` are set when the length is the reason.
class InputRefused : public std::runtime_error {
 public:
  InputRefused(const std::string& what, int64_t tokens = 0, int64_t limit = 0)
      : std::runtime_error(what), tokens(tokens), limit(limit) {}
  int64_t tokens, limit;
};

// An input that was refused, as the window keeps it: the views go on showing the last accepted
// input, marked as such, until a run succeeds.
struct RefusedInput {
  std::string text;    // the refused text
  std::string reason;  // "the text has 3131 tokens; the model takes at most 512"
  int64_t tokens = 0;  // its token count when the reason is its length (0 otherwise)
  int64_t limit = 0;   // the model's positions then
};

// What an input longer than the model's positions is cut to, instead of being refused.
enum class InputTrim {
  None,    // refused
  First,   // its first tokens
  Around,  // a window of tokens centred on RunInput::trim_centre
};

// Captured maps above this many bytes are kept as thumbnails of at most kThumbnailSide² cells per
// head, all but the open layer's (RunInput::full_maps_budget). The default model at 512 tokens keeps
// 84 MB of maps and stays exact; an 8B model's 1,024 heads at 256 tokens would keep 537 MB.
constexpr int64_t kFullMapsBudget = int64_t(128) << 20;
constexpr int kThumbnailSide = 64;

// What to run: the text(s), the controls and which stages to keep.
struct RunInput {
  std::string text;
  // A text too long for the model is cut at token boundaries (the run's snapshot holds the text
  // that was run, and `trimmed` says what was kept).
  InputTrim trim = InputTrim::None;
  int trim_centre = 0;  // a token of the whole text (InputTrim::Around)
  std::string decoder_text;  // encoder-decoder only ("" = same as text)
  core::ModelControls controls;
  bool all_stages = false;   // keep J and L too (W and U are always kept)
  // The attention call the views open (the selected layer): exact even when the rest are thumbnails.
  core::Stack open_stack = core::Stack::Encoder;
  int open_layer = 0;
  // When every captured map at full size would take more bytes than this, the run keeps thumbnails
  // (kThumbnailSide) but for the open layer; 0 keeps every map whole. Per-head logit spectra and
  // attention flow read every map whole: with those the maps stay full (the memory limit decides).
  int64_t full_maps_budget = kFullMapsBudget;
  int top_k = 10;
  // Positions to predict at (decoder side for enc-dec); empty = the default ones ([MASK]s of a
  // masked LM, else the last real token). Only these run through the LM head. Positions outside
  // the text are dropped (the defaults are used when none remain).
  std::vector<int> output_positions;
  RelevanceRequest relevance;  // explain the run (LRP, rollout, flow) when enabled
  // The singular values of each head's T×S logit matrix for this input (Bhojanapalli et al. 2020:
  // rank ≤ key size); captures the logits.
  bool logit_spectra = false;
  // The key-query spectra of every attention layer from the weights (Cordonnier et al. 2020), and
  // the weight circuits (composition scores, OV eigenvalues, copying; analysis/composition.h):
  // computed once per model on the first run that asks (~0.1 s for the default model, a few seconds
  // for a 12 × 12 model), then shared by every snapshot.
  bool weight_spectra = false;
  // "Take from counterfactual" (the Mixer; activation patching live, core/model/patch.h): head h of
  // layer l of the main stack outputs own + take[l][h]·(z_cf − own), z_cf its output O (before the
  // gates) on `counterfactual`, run by the model without controls. Like a gate: 0 = its own, 1 = the
  // counterfactual's. The counterfactual must have as many tokens as the text.
  std::string counterfactual;
  std::vector<std::vector<float>> take;
};

// One immutable result. Layer buffers not recomputed are shared with the previous snapshot.
struct RunSnapshot {
  uint64_t generation = 0;
  RunInput input;        // as run: a trimmed text is the part that was kept
  std::string trimmed;   // "kept tokens 0–509 of 3,131" when the input was cut; "" otherwise
  // Why the counterfactual's heads were not taken ("" when they were, or none was asked for).
  std::string counterfactual_note;
  TokenizedText tokens;          // encoder (or the only stack)
  TokenizedText decoder_tokens;  // encoder-decoder only
  std::vector<AttentionMaps> attentions;  // same order as ModelSummary::attentions
  // How the maps were kept: thumbnail_side 0 = every map whole; else thumbnails but for
  // (full_stack, full_layer), the open layer.
  core::MapDetail maps;
  // A mixture-of-experts model: the experts each token of the main stack ran, [layer][token] → the
  // top_k expert ids, highest router weight first; empty for a dense model.
  std::vector<std::vector<std::vector<int>>> experts;
  std::vector<PositionOutput> outputs;    // one per predicted position (input.output_positions or the defaults)
  std::vector<int> default_positions;     // [MASK] positions (masked LM) or the last position
  std::optional<core::Stack> recomputed_stack;  // empty: nothing was recomputed
  int recomputed_from = 0;
  int layers_computed = 0;
  double run_ms = 0;   // the whole request
  double model_ms = 0; // of which core::run (the forward passes)
  std::shared_ptr<const RelevanceResult> relevance;  // when input.relevance.enabled
  // When input.weight_spectra: every attention layer's spectra (null when they could not be computed).
  std::shared_ptr<const std::vector<analysis::LayerSpectra>> weight_spectra;
  // When input.weight_spectra: the main stack's composition scores, OV eigenvalues and copying
  // scores (null when they could not be computed; circuits_error says why).
  std::shared_ptr<const analysis::Composition> circuits;
  std::string circuits_error;
  // When input.logit_spectra: by stack, [layers][softmax heads].
  std::shared_ptr<const std::map<core::Stack, std::vector<std::vector<analysis::Spectrum>>>> logit_spectra;
  const AttentionMaps* find(core::Stack stack) const;
  const PositionOutput* output_at(int position) const;  // nullptr when not predicted
  const TokenizedText& query_tokens(core::Stack stack) const;
  const TokenizedText& key_tokens(core::Stack stack) const;
};

using EngineProgress = std::function<bool(int done, int total)>;

class WorkbenchEngine {
 public:
  WorkbenchEngine();
  ~WorkbenchEngine();
  WorkbenchEngine(const WorkbenchEngine&) = delete;
  WorkbenchEngine& operator=(const WorkbenchEngine&) = delete;

  // Loads a native or Hugging Face folder; throws with the folder named.
  ModelSummary load(const std::string& folder);
  // Runs `model` (loaded from `folder`, shared read-only with others: core/model/model_store.h).
  ModelSummary use(std::shared_ptr<core::Model> model, const std::string& folder);
  // A random-weight model from a config.json (no trained model found).
  ModelSummary load_random(const std::string& config_path, uint64_t seed);
  bool loaded() const;
  const ModelSummary& summary() const;

  // Text → ids with the model's tokenizer (special tokens added); without a tokenizer words and
  // punctuation are hashed to ids and "[MASK]" maps to a fixed id.
  // `byte_spans`, when given, receives each token's [begin, end) in the text's bytes ((0, 0) for a
  // special token).
  TokenizedText tokenize(const std::string& text, std::vector<std::pair<size_t, size_t>>* byte_spans = nullptr) const;
  // The part of `text` that fits the model's positions: its first tokens, or a window around the
  // token at `centre`, cut at token boundaries; `note` says what was kept. Throws InputRefused when
  // nothing fits.
  std::string trim_to_fit(const std::string& text, InputTrim mode, int centre, std::string& note) const;

  // Runs `input`; re-uses the previous run's residual stream when only controls changed (the
  // engine's incremental run). Throws core::Cancelled when `cancel` is set or `progress` returns false.
  std::shared_ptr<const RunSnapshot> run(const RunInput& input, const std::atomic<bool>* cancel,
                                         const EngineProgress& progress);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Where the workbench looks for models and configs (core/asset_paths.h).
using core::find_assets_dir;
using core::find_default_model;

}  // namespace headlab::app
