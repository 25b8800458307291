#include "analysis/analyze.h"

#include "core/file_hash.h"
#include "core/memory_budget.h"

#include "analysis/dataset.h"
#include "analysis/head_stats.h"
#include "analysis/measure.h"
#include "analysis/lrp.h"
#include "analysis/spectra.h"
#include "core/model/model.h"
#include "core/precision.h"
#include "core/model/run.h"
#include "core/model/run_batch.h"
#include "core/model/stacks.h"
#include "core/token_counts.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace headlab::analysis {
namespace {

struct StackInfo {
  core::Stack name;
  int layers = 0, heads = 0;
};

std::vector<StackInfo> stacks_of(const core::Model& model) {
  const auto& c = model.config;
  // A report entry per head of either count: U and the LRP/importance measures have the output
  // heads h_v, W and the spectra the softmax heads h (they differ only for talking heads).
  auto entries = [](const core::AttentionConfig& a) { return std::max(a.output_heads(), a.softmax_heads()); };
  std::vector<StackInfo> out;
  for (const core::Stack s : core::stacks_of(c))
    out.push_back({s, core::layers_config(c, s).layers, entries(core::attention_of(c, s))});
  return out;
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


}  // namespace

std::pair<int, int> shard_from(const std::string& text, int shards) {
  const std::string of_n = std::to_string(shards);
  if (shards < 0) throw std::invalid_argument("--shards " + of_n + ": expected a shard count N >= 1");
  if (!text.empty()) {
    const auto slash = text.find('/');
    if (slash == std::string::npos) throw std::invalid_argument("--shard '" + text + "': expected I/N, e.g. 0/4");
    const int index = parse_nonnegative(text.substr(0, slash), "--shard index");
    const int count = parse_nonnegative(text.substr(slash + 1), "--shard count");
    if (count < 1 || index >= count)
      throw std::invalid_argument("--shard '" + text + "': needs 0 <= I < N");
    if (shards > 0 && count != shards)
      throw std::invalid_argument("--shard '" + text + "' and --shards " + of_n + " disagree on the shard count");
    return {index, count};
  }
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  // Open MPI's mpirun -np N: every rank knows the world's size.
  if (env("OMPI_COMM_WORLD_RANK") && env("OMPI_COMM_WORLD_SIZE")) {
    const int rank = parse_nonnegative(env("OMPI_COMM_WORLD_RANK"), "OMPI_COMM_WORLD_RANK");
    const int size = parse_nonnegative(env("OMPI_COMM_WORLD_SIZE"), "OMPI_COMM_WORLD_SIZE");
    if (size < 1 || rank >= size) throw std::invalid_argument("OMPI_COMM_WORLD_RANK is outside OMPI_COMM_WORLD_SIZE");
    if (shards > 0 && size != shards)
      throw std::invalid_argument("mpirun started " + std::to_string(size) + " ranks but --shards is " + of_n +
                                  " (rerun one shard with --shard I/" + of_n + ", outside mpirun)");
    return {rank, size};
  }
  // A Slurm job array task: its id is the shard index, --shards the count.
  if (const char* id_text = env("SLURM_ARRAY_TASK_ID")) {
    const int id = parse_nonnegative(id_text, "SLURM_ARRAY_TASK_ID");
    if (shards == 0)
      throw std::invalid_argument(
          "a Slurm array task needs --shards N, the analysis's shard count (its task id " + std::to_string(id) +
          " is the shard index): the array's own task count is 1 when one task is resubmitted alone (sbatch "
          "--array=" + std::to_string(id) + "), so it cannot tell how the dataset is split");
    if (id >= shards)
      throw std::invalid_argument("Slurm array task id " + std::to_string(id) + " is not a shard of --shards " + of_n +
                                  ": the array's ids are the shard indices, 0 to " + std::to_string(shards - 1) +
                                  " (sbatch --array=0-" + std::to_string(shards - 1) + ")");
    return {id, shards};
  }
  if (shards > 1)
    throw std::invalid_argument("--shards " + of_n + " without --shard I/" + of_n +
                                ", a Slurm array task or mpirun: nothing says which shard this process analyses");
  return {0, 1};
}

const std::vector<std::string>& all_metrics() {
  // Refreshed when a measure is registered (at start-up, before any analysis).
  static std::vector<std::string> names;
  if (names.size() != measures().size()) {
    names.clear();
    for (const Measure* m : measures()) names.push_back(m->name());
  }
  return names;
}

AnalyzeResult analyze(core::Model& model, const AnalyzeOptions& o) {
  const core::Tokenizer* tok = model.tokenizer.get();  // needed to read a dataset only
  AnalyzeResult result;
  HeadReport& r = result.report;
  r.settings = o.settings;
  ReportSettings& s = r.settings;
  if (s.metrics.empty()) s.metrics = all_metrics();
  s.precision = core::recorded_precision();
  // Fast precision loosens LRP's conservation (core/precision.h): the default tolerance follows, as written in the report.
  if (!s.precision.empty() && s.lrp_tolerance == ReportSettings{}.lrp_tolerance) s.lrp_tolerance = 2e-2;
  for (const auto& m : s.metrics)
    if (!find_measure(m)) {
      std::string known;
      for (const auto& name : all_metrics()) known += (known.empty() ? "" : ", ") + name;
      throw std::invalid_argument("unknown metric '" + m + "' (" + known + ")");
    }
  if (s.stage != core::Stage::U && s.stage != core::Stage::W)
    throw std::invalid_argument(std::string("the measures read stage U (values) or W (softmax), not ") +
                                core::stage_name(s.stage));
  if (s.shard_count < 1 || s.shard_index < 0 || s.shard_index >= s.shard_count)
    throw std::invalid_argument("shard " + std::to_string(s.shard_index) + "/" + std::to_string(s.shard_count) +
                                " is not 0 <= I < N");
  r.model = model.folder.empty() ? model.config.name : model.folder;
  if (!model.folder.empty()) r.model_weights = core::weights_identity(model.folder);
  if (!o.data.empty() && !tok)
    throw std::runtime_error("analysing a dataset needs a model folder with a tokenizer; the measures of the "
                             "weights (spectra, copying) and the induction probe need neither");
  if (!o.data.empty()) r.files = expand_dataset_paths(o.data);
  if (r.files.empty())
    for (const auto& m : s.metrics)
      if (find_measure(m)->needs_data())
        throw std::invalid_argument("the " + m + " measure needs a dataset (--data); without one, choose measures "
                                    "of the weights or of a probe (--metrics spectra,copying,induction)");
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

  if (o.batch > 1)
    r.notes.push_back("sentences ran " + std::to_string(o.batch) +
                      " a forward pass (--batch): values may differ in rounding from one sentence a pass");
  // The measures of this run (fresh: some keep state while measuring), in the registry's order.
  auto run_measures = measures_for_run(s);
  // A stop while a measure works on the weights (spectra, layer by layer) leaves a partial report.
  bool stopped_preparing = false;
  AnalyzeOptions preparing = o;
  preparing.preparing = [&](const std::string& what, int64_t done, int64_t total) {
    const bool go = !o.preparing || o.preparing(what, done, total);
    stopped_preparing = stopped_preparing || !go;
    return go;
  };
  size_t begun = 0;  // measures after a stop neither begin nor end: their values stay empty
  while (begun < run_measures.size()) {
    run_measures[begun++]->begin(r, model, preparing);
    if (stopped_preparing || (o.cancel && o.cancel->load())) {
      r.partial = true;
      break;
    }
  }

  // One reading pass: the sentence count for progress (and what measures count over the whole
  // dataset, whatever the shard, so shards agree: the rare-word measure's token counts).
  int64_t total_sentences = 0;
  if (tok) {
    DatasetReader reader(r.files);
    int64_t index = 0;
    for (DatasetSentence sentence; reader.next(sentence); ++index) {
      if (s.limit > 0 && index >= s.limit) break;
      if (o.cancel && o.cancel->load()) break;  // the main loop below stops at once, marked partial
      if (index % s.shard_count == s.shard_index) ++total_sentences;
      for (auto& m : run_measures) m->read_sentence(*tok, sentence.text);
    }
    // Nothing to measure is no report of zeros: every head's confidence 0 would read as measured.
    if (index == 0 && !r.files.empty() && !(o.cancel && o.cancel->load())) {
      std::string names;
      for (const auto& f : r.files) names += (names.empty() ? "" : ", ") + f;
      throw std::runtime_error(names + ": no sentences to measure (empty, or whitespace only)");
    }
    for (auto& m : run_measures) m->after_reading(r, *tok);
  }

  const int64_t max_tokens = o.max_tokens > 0 ? std::min<int64_t>(o.max_tokens, model.config.max_positions)
                                              : model.config.max_positions;
  s.max_tokens = max_tokens;
  const bool softmax_stage = s.stage == core::Stage::W;
  const bool maps_needed =
      std::any_of(run_measures.begin(), run_measures.end(), [](const auto& m) { return m->reads_maps(); });
  std::optional<TokenizedSentence> first;  // for the example maps
  int64_t done = 0;
  bool stopped = false;
  // Sentences waiting for their batch's forward pass (AnalyzeOptions::batch), in dataset order.
  struct Pending {
    DatasetSentence sentence;
    TokenizedSentence ts;
  };
  std::vector<Pending> pending;
  const size_t batch = static_cast<size_t>(std::max(1, o.batch));
  // Batched, sentences wait in a window of several batches and run grouped by length, so that a
  // batch pads each sentence to a length near its own (UD sentences run from 3 to 100+ tokens).
  const size_t window = batch == 1 ? 1 : batch * 4;
  // The window's sentences keep their maps until it is measured (per stack and layer, heads × T × T
  // floats): it is measured early once they would pass half the memory limit, so a large --batch on
  // long sentences never grows past it. The other half is the forward passes' (checked by each).
  const int64_t limit = core::memory_limit();
  const int64_t window_budget = o.window_bytes >= 0 ? o.window_bytes : limit > 0 ? limit / 2 : -1;
  auto kept_bytes = [&](const TokenizedSentence& ts) {
    const int64_t T = static_cast<int64_t>(ts.ids.size());
    int64_t bytes = 0;
    if (maps_needed)
      for (const auto& st : stacks) bytes += int64_t(st.layers) * st.heads * T * T * int64_t(sizeof(float));
    return bytes;
  };
  int64_t pending_bytes = 0, early_flushes = 0;
  const bool report_progress = static_cast<bool>(o.progress);
  auto step = [&]() {  // one sentence done (measured or skipped); false = stop
    ++done;
    if (report_progress && !o.progress(done, total_sentences)) {
      r.partial = done < total_sentences;
      return false;
    }
    return true;
  };
  // Runs the pending sentences in one forward pass and hands each its maps, in order.
  auto flush = [&]() {
    if (pending.empty()) return true;
    // Per sentence, per stack and layer, the maps the measures read, on the host and contiguous:
    // a batch's padded tensors are let go as soon as its sentences' maps are cut out of them.
    std::vector<std::vector<std::vector<torch::Tensor>>> maps_of(pending.size());
    auto keep_maps = [&](size_t i, const core::Trace& trace) {
      for (const auto& st : stacks) {
        maps_of[i].emplace_back();
        for (int l = 0; l < st.layers; ++l) {
          const auto& stages = core::stages_of(trace, st.name, l);
          maps_of[i].back().push_back(
              (softmax_stage ? stages.weights : core::value_weights(stages)).to(torch::kCPU, torch::kFloat32).contiguous());
        }
      }
    };
    if (maps_needed) {
      std::vector<size_t> by_length(pending.size());
      for (size_t i = 0; i < by_length.size(); ++i) by_length[i] = i;
      std::stable_sort(by_length.begin(), by_length.end(),
                       [&](size_t a, size_t b) { return pending[a].ts.ids.size() < pending[b].ts.ids.size(); });
      for (size_t from = 0; from < by_length.size(); from += batch) {
        std::vector<core::RunRequest> requests;
        for (size_t j = from; j < std::min(by_length.size(), from + batch); ++j) {
          core::RunRequest request;
          request.ids = pending[by_length[j]].ts.ids;
          if (enc_dec) request.decoder_ids = request.ids;
          request.capture = softmax_stage ? core::kCaptureWeights : core::kCaptureMixedWeights;
          request.logit_positions = {0};  // the measures need the maps, not the LM head
          request.cancel = o.cancel;      // a stop ends the batch within a layer (partial report)
          requests.push_back(std::move(request));
        }
        // A sentence too long for the limit alone: the refusal names it, and the option that skips it.
        auto named = [&](size_t j, const core::MemoryLimitError& e) {
          const Pending& p = pending[by_length[from + j]];
          return core::MemoryLimitError(p.sentence.source + " (" + std::to_string(p.ts.ids.size()) + " tokens): " +
                                        e.what() + " Or skip sentences that long with --max-tokens.");
        };
        try {
          std::vector<std::shared_ptr<const core::Trace>> ran;
          try {
            ran = core::run_batch(model, requests);
          } catch (const core::MemoryLimitError& e) {
            if (requests.size() == 1) throw named(0, e);
            for (size_t j = 0; j < requests.size(); ++j) {  // too big together: one at a time
              try {
                ran.push_back(core::run(model, requests[j]));
              } catch (const core::MemoryLimitError& one) {
                throw named(j, one);
              }
            }
          }
          for (size_t j = 0; j < ran.size(); ++j) keep_maps(by_length[from + j], *ran[j]);
        } catch (const core::Cancelled&) {
          r.partial = true;
          pending.clear();
          return false;
        }
      }
    }
    for (size_t b = 0; b < pending.size(); ++b) {
      const DatasetSentence& sentence = pending[b].sentence;
      const TokenizedSentence& ts = pending[b].ts;
      SentenceLayout layout;
      layout.query_word = ts.word_of;
      layout.key_word = ts.word_of;
      layout.query_special = ts.special;
      layout.key_special = ts.special;
      layout.words = ts.words;
      const std::vector<int64_t> decoder_ids = enc_dec ? ts.ids : std::vector<int64_t>{};
      SentenceWork work{model, sentence, ts, layout, decoder_ids};
      for (auto& m : run_measures) m->prepare(r, work);
      if (maps_needed) {
        for (size_t si = 0; si < stacks.size(); ++si) {
          const auto& st = stacks[si];
          for (int l = 0; l < st.layers; ++l) {
            const torch::Tensor maps = std::move(maps_of[b][si][static_cast<size_t>(l)]);
            const RowMaxima rows = row_maxima(maps, layout);
            count_queries(r, st.name, l, rows);
            for (auto& m : run_measures)
              if (m->reads_maps()) m->add_layer(r, st.name, l, st.heads, maps, rows, layout);
          }
          for (auto& m : run_measures) m->add_stack(r, st.name, st.layers * st.heads, layout);
        }
      }
      for (auto& m : run_measures) m->add_sentence(r, work);
      ++r.sentences;
      r.tokens += static_cast<int64_t>(ts.ids.size());
      if (!first) first = ts;
      if (!step()) {
        pending.clear();
        return false;
      }
    }
    pending.clear();
    return true;
  };
  DatasetReader reader(r.files);
  int64_t index = 0;
  for (DatasetSentence sentence; !stopped && reader.next(sentence);) {
    if (s.limit > 0 && index >= s.limit) break;
    const int64_t i = index++;
    if (i % s.shard_count != s.shard_index) continue;
    if (stopped_preparing || (o.cancel && o.cancel->load())) {
      r.partial = true;
      break;
    }
    TokenizedSentence ts = tokenize_sentence(model.config, *tok, sentence);  // a dataset implies a tokenizer (above)
    const int64_t T = static_cast<int64_t>(ts.ids.size());
    const bool any_word = std::any_of(ts.special.begin(), ts.special.end(), [](bool special) { return !special; });
    std::string skip;
    if (T > max_tokens) skip = "longer than " + std::to_string(max_tokens) + " tokens";
    else if (!any_word) skip = "no tokens but special ones";
    if (!skip.empty()) {
      // Counted in order: the sentences waiting before it are measured first.
      if (!flush()) break;
      ++r.skipped;
      ++r.skipped_reasons[skip];
      stopped = !step();
      continue;
    }
    const int64_t bytes = kept_bytes(ts);
    if (pending.empty()) pending_bytes = 0;
    if (!pending.empty() && window_budget > 0 && pending_bytes + bytes > window_budget) {
      ++early_flushes;
      if (!flush()) break;
      pending_bytes = 0;
    }
    pending.push_back({std::move(sentence), std::move(ts)});
    pending_bytes += bytes;
    sentence = DatasetSentence{};
    if (pending.size() >= window) stopped = !flush();
  }
  if (!stopped && !(o.cancel && o.cancel->load())) flush();
  if (o.cancel && o.cancel->load() && done < total_sentences) r.partial = true;
  if (early_flushes > 0)
    r.notes.push_back("the sentences waiting for their batch were measured early " + std::to_string(early_flushes) +
                      " times, their maps at " + core::format_bytes(window_budget) +
                      (o.window_bytes >= 0 ? "" : " (half the memory limit)") + ": the numbers are the same");
  for (size_t i = 0; i < begun; ++i) run_measures[i]->end(r);
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
      const auto& stages = core::stages_of(*trace, h->stack, h->layer);
      const auto& maps = softmax_stage ? stages.weights : core::value_weights(stages);  // [heads, T, S]
      if (h->head >= maps.size(0)) continue;  // an entry of the other head count (talking heads)
      ExampleMap m;
      m.stack = h->stack;
      m.layer = h->layer;
      m.head = h->head;
      m.tokens = first->tokens;
      auto map = maps[h->head].to(torch::kCPU, torch::kFloat32).contiguous();
      m.weights.assign(map.data_ptr<float>(), map.data_ptr<float>() + map.numel());
      m.why = by_lrp ? "high normalised LRP relevance" : "high confidence";
      result.examples.push_back(std::move(m));
    }
  }
  return result;
}

}  // namespace headlab::analysis
