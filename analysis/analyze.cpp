#include "analysis/analyze.h"

#include "core/file_hash.h"

#include "analysis/dataset.h"
#include "analysis/head_stats.h"
#include "analysis/lrp.h"
#include "analysis/spectra.h"
#include "core/model.h"
#include "core/run.h"
#include "core/token_counts.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace headlab::analysis {
namespace {

struct StackInfo {
  std::string name;  // "encoder", "decoder", "cross"
  int layers = 0, heads = 0;
};

std::vector<StackInfo> stacks_of(const core::Model& model) {
  const auto& c = model.config;
  // A report entry per head of either count: U and the LRP/importance measures have the output
  // heads h_v, W and the spectra the softmax heads h (they differ only for talking heads).
  auto entries = [](const core::AttentionConfig& a) { return std::max(a.output_heads(), a.softmax_heads()); };
  std::vector<StackInfo> out;
  if (c.encoder) out.push_back({"encoder", c.encoder->layers, entries(c.encoder->attention)});
  if (c.decoder) out.push_back({"decoder", c.decoder->layers, entries(c.decoder->attention)});
  if (c.decoder && c.decoder->cross_attention)
    out.push_back({"cross", c.decoder->layers, entries(*c.decoder->cross_attention)});
  return out;
}

const core::AttentionStages& stages_of(const core::Trace& trace, const std::string& stack, int layer) {
  if (stack == "encoder") return trace.encoder.layers[layer].self;
  if (stack == "decoder") return trace.decoder.layers[layer].self;
  return trace.decoder.layers[layer].cross;
}

int parse_nonnegative(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    const long value = std::stol(text, &used);
    if (used != text.size() || value < 0 || value > 1000000) throw std::invalid_argument(text);
    return static_cast<int>(value);
  } catch (const std::exception&) {
    throw std::invalid_argument(what + " '" + text + "' is not a non-negative integer");
  }
}

// The position LRP explains on a dataset sentence: the last word token (its top-1 logit). A masked
// LM's default (the first [MASK]) does not exist in plain sentences, and its last token is [SEP].
int64_t lrp_position(const TokenizedSentence& ts) {
  for (int64_t t = static_cast<int64_t>(ts.word_of.size()) - 1; t >= 0; --t)
    if (!ts.special[size_t(t)]) return t;
  return static_cast<int64_t>(ts.ids.size()) - 1;
}

}  // namespace

std::pair<int, int> shard_from(const std::string& text) {
  if (!text.empty()) {
    const auto slash = text.find('/');
    if (slash == std::string::npos) throw std::invalid_argument("--shard '" + text + "': expected I/N, e.g. 0/4");
    const int index = parse_nonnegative(text.substr(0, slash), "--shard index");
    const int count = parse_nonnegative(text.substr(slash + 1), "--shard count");
    if (count < 1 || index >= count)
      throw std::invalid_argument("--shard '" + text + "': needs 0 <= I < N");
    return {index, count};
  }
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  // A Slurm job array (sbatch --array=0-N-1 or 1-N; ids counted from SLURM_ARRAY_TASK_MIN).
  if (env("SLURM_ARRAY_TASK_ID") && env("SLURM_ARRAY_TASK_COUNT")) {
    const int id = parse_nonnegative(env("SLURM_ARRAY_TASK_ID"), "SLURM_ARRAY_TASK_ID");
    const int min = env("SLURM_ARRAY_TASK_MIN") ? parse_nonnegative(env("SLURM_ARRAY_TASK_MIN"), "SLURM_ARRAY_TASK_MIN") : 0;
    const int step = env("SLURM_ARRAY_TASK_STEP") ? parse_nonnegative(env("SLURM_ARRAY_TASK_STEP"), "SLURM_ARRAY_TASK_STEP") : 1;
    const int count = parse_nonnegative(env("SLURM_ARRAY_TASK_COUNT"), "SLURM_ARRAY_TASK_COUNT");
    if (count < 1 || step < 1 || id < min || (id - min) % step != 0 || (id - min) / step >= count)
      throw std::invalid_argument("Slurm array task " + std::to_string(id) + " is not one of the array's " +
                                  std::to_string(count) + " tasks from " + std::to_string(min) + " in steps of " +
                                  std::to_string(step));
    return {(id - min) / step, count};
  }
  // Open MPI's mpirun -np N.
  if (env("OMPI_COMM_WORLD_RANK") && env("OMPI_COMM_WORLD_SIZE")) {
    const int rank = parse_nonnegative(env("OMPI_COMM_WORLD_RANK"), "OMPI_COMM_WORLD_RANK");
    const int size = parse_nonnegative(env("OMPI_COMM_WORLD_SIZE"), "OMPI_COMM_WORLD_SIZE");
    if (size < 1 || rank >= size) throw std::invalid_argument("OMPI_COMM_WORLD_RANK is outside OMPI_COMM_WORLD_SIZE");
    return {rank, size};
  }
  return {0, 1};
}

AnalyzeResult analyze(core::Model& model, const AnalyzeOptions& o) {
  if (!model.tokenizer) throw std::runtime_error("analysing a dataset needs a model folder with a tokenizer");
  const auto& tok = *model.tokenizer;
  AnalyzeResult result;
  HeadReport& r = result.report;
  r.settings = o.settings;
  ReportSettings& s = r.settings;
  if (s.metrics.empty()) s.metrics = all_metrics();
  for (const auto& m : s.metrics)
    if (std::find(all_metrics().begin(), all_metrics().end(), m) == all_metrics().end())
      throw std::invalid_argument("unknown metric '" + m +
                                  "' (confidence, positional, rare, syntactic, lrp, importance, spectra)");
  if (s.stage != "values" && s.stage != "softmax")
    throw std::invalid_argument("unknown stage '" + s.stage + "' (values: U, the weights that multiply the values; softmax: W)");
  if (s.shard_count < 1 || s.shard_index < 0 || s.shard_index >= s.shard_count)
    throw std::invalid_argument("shard " + std::to_string(s.shard_index) + "/" + std::to_string(s.shard_count) +
                                " is not 0 <= I < N");
  r.model = model.folder.empty() ? model.config.name : model.folder;
  if (!model.folder.empty()) r.model_weights = core::weights_identity(model.folder);
  r.files = expand_dataset_paths(o.data);
  const bool enc_dec = model.config.kind == core::StackKind::EncoderDecoder;
  const auto stacks = stacks_of(model);
  for (const auto& st : stacks)
    for (int l = 0; l < st.layers; ++l)
      for (int h = 0; h < st.heads; ++h) {
        HeadEntry e;
        e.stack = st.name;
        e.layer = l;
        e.head = h;
        r.heads.push_back(e);
      }
  if (enc_dec)
    r.notes.push_back("encoder-decoder: the decoder reads the sentence itself (teacher-forced on its own tokens), "
                      "so decoder and cross-attention offsets compare positions of the same sentence");

  // Spectra need no data.
  if (s.has("spectra")) {
    for (const auto& layer : key_query_spectra(model)) {
      r.layers.push_back(LayerEntry{layer.stack, layer.layer, layer.query, layer.key, layer.product});
      for (size_t h = 0; h < layer.heads.size(); ++h)
        if (HeadEntry* e = r.find(layer.stack, layer.layer, static_cast<int>(h))) e->spectrum = layer.heads[h];
    }
    const auto pos = model.config.positions;
    if (pos == core::PositionKind::Rope || pos == core::PositionKind::RopeLearned)
      r.notes.push_back("spectra: with RoPE a head's scores are x_tᵀ W_Q R(s − t) W_Kᵀ x_s; the spectrum is the "
                        "form at offset 0 (no rotation), W_Q W_Kᵀ");
    for (const auto& h : r.heads)
      if (h.spectrum && !h.spectrum->applicable) {
        r.notes.push_back("spectra: additive scoring has no bilinear key-query form; its heads have no spectrum");
        break;
      }
  }

  // Frequency ranks for the rare-word measure: a frequency corpus, the model folder's training
  // counts, or the dataset itself (counted over every sentence, whatever the shard, so shards agree).
  const bool rare = s.has("rare");
  std::vector<int64_t> ranks;
  int64_t total_sentences = 0;
  {
    core::TokenCounts counts;
    const std::string folder_counts = model.folder.empty() ? "" : model.folder + "/token_counts.json";
    bool count_dataset = false;
    if (rare) {
      if (!o.freq_files.empty()) {
        counts = core::count_tokens_in_files(tok, o.freq_files);
        s.frequency_source = "freq-files";
        s.frequency_files = o.freq_files;
      } else if (!folder_counts.empty() && std::filesystem::exists(folder_counts)) {
        counts = core::load_token_counts(folder_counts);
        s.frequency_source = "model-folder";
        s.frequency_files = counts.files;
      } else {
        count_dataset = true;
        s.frequency_source = "dataset";
        s.frequency_files = r.files;
        counts.counts.assign(static_cast<size_t>(tok.vocab_size()), 0);
      }
    }
    // One reading pass: the sentence count for progress (and the dataset's token counts).
    DatasetReader reader(r.files);
    int64_t index = 0;
    for (DatasetSentence sentence; reader.next(sentence); ++index) {
      if (s.limit > 0 && index >= s.limit) break;
      if (o.cancel && o.cancel->load()) break;  // the main loop below stops at once, marked partial
      if (index % s.shard_count == s.shard_index) ++total_sentences;
      if (count_dataset) core::count_tokens(tok, sentence.text, counts);
    }
    if (rare) ranks = core::frequency_ranks(counts, tok);
  }

  const int64_t max_tokens = o.max_tokens > 0 ? std::min<int64_t>(o.max_tokens, model.config.max_positions)
                                              : model.config.max_positions;
  s.max_tokens = max_tokens;
  const bool softmax_stage = s.stage == "softmax";
  const bool maps_needed = s.has("confidence") || s.has("positional") || rare || s.has("syntactic");
  std::optional<TokenizedSentence> first;  // for the example maps
  int64_t done = 0;
  DatasetReader reader(r.files);
  int64_t index = 0;
  for (DatasetSentence sentence; reader.next(sentence);) {
    if (s.limit > 0 && index >= s.limit) break;
    const int64_t i = index++;
    if (i % s.shard_count != s.shard_index) continue;
    if (o.cancel && o.cancel->load()) {
      r.partial = true;
      break;
    }
    TokenizedSentence ts = tokenize_sentence(tok, sentence);
    const int64_t T = static_cast<int64_t>(ts.ids.size());
    const bool any_word = std::any_of(ts.special.begin(), ts.special.end(), [](bool special) { return !special; });
    std::string skip;
    if (T > max_tokens) skip = "longer than " + std::to_string(max_tokens) + " tokens";
    else if (!any_word) skip = "no tokens but special ones";
    if (!skip.empty()) {
      ++r.skipped;
      ++r.skipped_reasons[skip];
    } else {
      SentenceLayout layout;
      layout.query_word = ts.word_of;
      layout.key_word = ts.word_of;
      layout.query_special = ts.special;
      layout.key_special = ts.special;
      layout.words = ts.words;
      if (rare) {
        std::vector<int64_t> token_ranks(ts.ids.size(), 0);
        for (size_t t = 0; t < ts.ids.size(); ++t)
          if (ts.ids[t] >= 0 && ts.ids[t] < static_cast<int64_t>(ranks.size())) token_ranks[t] = ranks[size_t(ts.ids[t])];
        set_rare_positions(layout, token_ranks, s.rare_min_rank);
      }
      if (s.has("syntactic") && sentence.has_tree()) {
        ++r.tree_sentences;
        layout.arcs = scored_arcs(sentence.heads, sentence.relations, s.strip_subtypes,
                                  words_with_tokens(ts.word_of, ts.words), &r.skipped_arcs);
      }
      if (maps_needed) {
        core::RunRequest request;
        request.ids = ts.ids;
        if (enc_dec) request.decoder_ids = ts.ids;
        request.capture = softmax_stage ? core::kCaptureWeights : core::kCaptureMixedWeights;
        request.logit_positions = {0};  // the measures need the maps, not the LM head
        auto trace = core::run(model, request);
        for (const auto& st : stacks) {
          for (int l = 0; l < st.layers; ++l) {
            const auto& stages = stages_of(*trace, st.name, l);
            accumulate_layer(r, st.name, l, st.heads, softmax_stage ? stages.weights : core::value_weights(stages), layout);
          }
          accumulate_arcs(r, st.name, st.layers * st.heads, layout);
        }
      }
      const std::vector<int64_t> decoder_ids = enc_dec ? ts.ids : std::vector<int64_t>{};
      if (s.has("lrp")) {
        LrpTarget target;
        target.position = lrp_position(ts);
        const LrpResult lrp = lrp_relevance(model, ts.ids, target, {}, decoder_ids);
        const HeadValues normalized = normalize_per_layer(lrp.heads);
        for (const auto& [stack, layers] : lrp.heads)
          for (size_t l = 0; l < layers.size(); ++l)
            for (size_t h = 0; h < layers[l].size(); ++h)
              if (HeadEntry* e = r.find(stack, static_cast<int>(l), static_cast<int>(h))) {
                e->lrp_raw_sum += layers[l][h];
                e->lrp_normalized_sum += normalized.at(stack)[l][h];
                ++e->lrp_sentences;
              }
        const double residual = lrp.relative_residual();
        r.lrp_max_relative_residual = std::max(r.lrp_max_relative_residual, residual);
        if (residual > s.lrp_tolerance) {
          ++r.lrp_sentences_over_tolerance;
          if (r.lrp_failures.size() < 10) r.lrp_failures.push_back(sentence.source);
        }
      }
      if (s.has("importance")) {
        // A masked LM's loss masks every 7th word token from the 3rd (head_importance's rule); a
        // sentence shorter than that masks its last word token instead of being left out.
        std::vector<int64_t> masked;
        for (int64_t t = 0, k = 0; t < T; ++t)
          if (!ts.special[size_t(t)] && k++ % 7 == 2) masked.push_back(t);
        if (masked.empty()) masked.push_back(lrp_position(ts));
        const ImportanceResult imp = head_importance(model, ts.ids, {}, masked, decoder_ids);
        for (const auto& [stack, layers] : imp.heads)
          for (size_t l = 0; l < layers.size(); ++l)
            for (size_t h = 0; h < layers[l].size(); ++h)
              if (HeadEntry* e = r.find(stack, static_cast<int>(l), static_cast<int>(h))) {
                e->importance_sum += layers[l][h];
                ++e->importance_sentences;
              }
      }
      ++r.sentences;
      r.tokens += T;
      if (!first) first = ts;
    }
    ++done;
    if (o.progress && !o.progress(done, total_sentences)) {
      r.partial = done < total_sentences;
      break;
    }
  }
  if (o.cancel && o.cancel->load() && done < total_sentences) r.partial = true;
  if (rare && s.frequency_source == "dataset")
    r.notes.push_back("rare-word ranks come from the dataset itself; on a small dataset most tokens tie, so give "
                      "--freq FILE… (or a model folder with token_counts.json) for ranks from a larger corpus");
  r.finalize();

  // The maps of the most relevant heads on the first measured sentence.
  if (first && o.examples > 0 && maps_needed) {
    std::vector<const HeadEntry*> order;
    for (const auto& h : r.heads) order.push_back(&h);
    const bool by_lrp = s.has("lrp");
    std::stable_sort(order.begin(), order.end(), [&](const HeadEntry* a, const HeadEntry* b) {
      return by_lrp ? std::abs(a->lrp_normalized) > std::abs(b->lrp_normalized) : a->confidence > b->confidence;
    });
    order.resize(std::min<size_t>(order.size(), static_cast<size_t>(o.examples)));
    core::RunRequest request;
    request.ids = first->ids;
    if (enc_dec) request.decoder_ids = first->ids;
    request.capture = softmax_stage ? core::kCaptureWeights : core::kCaptureMixedWeights;
    request.logit_positions = {0};
    auto trace = core::run(model, request);
    for (const HeadEntry* h : order) {
      const auto& stages = stages_of(*trace, h->stack, h->layer);
      const auto& maps = softmax_stage ? stages.weights : core::value_weights(stages);  // [heads, T, S]
      if (h->head >= maps.size(0)) continue;  // an entry of the other head count (talking heads)
      ExampleMap m;
      m.stack = h->stack;
      m.layer = h->layer;
      m.head = h->head;
      m.tokens = first->tokens;
      auto map = maps[h->head].to(torch::kFloat32).contiguous();
      m.weights.assign(map.data_ptr<float>(), map.data_ptr<float>() + map.numel());
      m.why = by_lrp ? "high normalised LRP relevance" : "high confidence";
      result.examples.push_back(std::move(m));
    }
  }
  return result;
}

}  // namespace headlab::analysis
