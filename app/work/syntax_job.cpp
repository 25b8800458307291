#include "app/work/syntax_job.h"

#include "analysis/dataset.h"
#include "analysis/head_stats.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/stacks.h"
#include "core/cancelled.h"
#include "core/model/model_store.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace headlab::app {
namespace {

// The typed input with its parse: pasted CoNLL-U (its one sentence, or the one that spells the
// input), or the first sentence of a CoNLL-U file that spells the input.
analysis::DatasetSentence input_sentence(const SyntaxRequest& request) {
  if (request.text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw std::runtime_error("the input is empty: type the sentence the parse is of");
  if (!request.parse.empty()) {
    const auto parses = analysis::parse_conllu(request.parse, "the pasted parse");
    if (parses.empty()) throw std::runtime_error("the pasted parse has no words");
    if (parses.size() == 1) return analysis::parse_on_text(parses.front(), request.text);
    for (const auto& p : parses)
      if (analysis::parse_spells(p, request.text)) return analysis::parse_on_text(p, request.text);
    throw std::runtime_error("none of the pasted parse's " + std::to_string(parses.size()) +
                             " sentences spells the input");
  }
  analysis::ConlluReader reader(request.parse_file);
  int count = 0;
  for (analysis::UdSentence s; reader.next(s); ++count)
    if (analysis::parse_spells(s, request.text)) return analysis::parse_on_text(s, request.text);
  throw std::runtime_error("none of the " + std::to_string(count) + " sentences of " + request.parse_file +
                           " spells the input (its words must match the input's, whitespace aside)");
}

}  // namespace

const std::vector<int>* SyntaxResult::predicted(core::Stack stack, int layer, int head) const {
  auto it = argmax.find(stack);
  if (it == argmax.end() || layer < 0 || size_t(layer) >= it->second.size()) return nullptr;
  const auto& heads_of_layer = it->second[size_t(layer)];
  if (head < 0 || size_t(head) >= heads_of_layer.size()) return nullptr;
  return &heads_of_layer[size_t(head)];
}

SyntaxResult syntax_argmax(core::Model& model, const analysis::DatasetSentence& sentence,
                           const core::ModelControls& controls, const std::atomic<bool>* cancel) {
  if (!model.tokenizer) throw std::runtime_error("the Syntax view needs a model folder with a tokenizer");
  if (!sentence.has_tree()) throw std::runtime_error(sentence.source + " has no dependency tree");
  const analysis::TokenizedSentence ts = analysis::tokenize_sentence(model.config, *model.tokenizer, sentence);
  const int64_t T = static_cast<int64_t>(ts.ids.size());
  if (T > model.config.max_positions)
    throw std::runtime_error(sentence.source + " is " + std::to_string(T) + " tokens, longer than the model's " +
                             std::to_string(model.config.max_positions) + " positions");
  if (std::all_of(ts.special.begin(), ts.special.end(), [](bool s) { return s; }))
    throw std::runtime_error(sentence.source + " has no tokens but special ones");

  SyntaxResult r;
  r.source = sentence.source;
  r.text = sentence.text;
  r.heads = sentence.heads;
  r.relations = sentence.relations;
  r.word_has_token = analysis::words_with_tokens(ts.word_of, ts.words);
  for (const auto& [start, end] : sentence.word_spans) {
    // Spans count code points; the words are cut from the text by walking its UTF-8.
    std::string word;
    int64_t cp = 0;
    for (size_t i = 0; i < sentence.text.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(sentence.text[i]);
      if ((c & 0xC0) != 0x80 && i > 0) ++cp;
      if (cp >= end) break;
      if (cp >= start) word += sentence.text[i];
    }
    r.words.push_back(word);
  }

  // The same layout, request and maps as analysis::analyze for the syntactic measure at the
  // "values" stage: U, the weights that multiply the values.
  analysis::SentenceLayout layout;
  layout.query_word = ts.word_of;
  layout.key_word = ts.word_of;
  layout.query_special = ts.special;
  layout.key_special = ts.special;
  layout.words = ts.words;
  core::RunRequest request;
  request.ids = ts.ids;
  if (model.config.kind == core::StackKind::EncoderDecoder) request.decoder_ids = ts.ids;
  request.controls = controls;
  request.capture = core::kCaptureMixedWeights;
  request.logit_positions = {0};  // the maps, not the LM head
  request.cancel = cancel;        // checked between layers
  const auto trace = core::run(model, request);
  for (const core::Stack stack : core::stacks_of(model.config)) {
    auto& per_layer = r.argmax[stack];
    for (int l = 0; l < core::layers_config(model.config, stack).layers; ++l) {
      // accumulate_layer reads the maps as float32 before making them word-level.
      const auto maps = core::value_weights(core::stages_of(*trace, stack, l)).to(torch::kFloat32);  // [heads, T, S]
      per_layer.push_back(analysis::word_argmax(analysis::word_level_maps(maps, layout)));
    }
  }
  return r;
}

struct SyntaxJob::Cache {
  std::map<std::string, int> sentence_counts;  // "file@mtime" → its sentences
};

namespace {

std::shared_ptr<const SyntaxResult> run_sentence(Task& task, const SyntaxRequest& request, core::ModelStore& models,
                                                 std::map<std::string, int>& sentence_counts) {
  std::string doing = "loading the model " + request.model_folder;
  try {
    if (request.model_folder.empty())
      throw std::runtime_error("the Syntax view needs a model folder with a tokenizer (a random-weight model has none)");
    task.phase("loading the model");
    const auto model = models.get(request.model_folder);
    task.check();
    if (request.on_input()) {
      doing = "running the input with its parse";
      task.phase(doing);
      auto result = std::make_shared<SyntaxResult>(syntax_argmax(*model, input_sentence(request), request.controls, task.stop_flag()));
      result->model_folder = request.model_folder;
      result->on_input = true;
      return result;
    }
    doing = "reading sentence " + std::to_string(request.index) + " of " + request.file;
    task.phase("reading the sentence");
    if (request.index < 0) throw std::runtime_error("the sentence index is negative");
    std::error_code ec;
    const auto stamp = std::filesystem::last_write_time(request.file, ec);
    if (ec) throw std::runtime_error("cannot read " + request.file + ": " + ec.message());
    const std::string count_key = request.file + "@" + std::to_string(stamp.time_since_epoch().count());
    const auto known = sentence_counts.find(count_key);
    analysis::DatasetReader reader({request.file});
    analysis::DatasetSentence sentence, found;
    int count = 0;
    bool have = false;
    while ((known == sentence_counts.end() || !have) && reader.next(sentence)) {
      if (count == request.index) found = sentence, have = true;
      ++count;
    }
    if (known != sentence_counts.end()) count = known->second;
    sentence_counts[count_key] = count;
    if (!have)
      throw std::runtime_error(request.file + " has " + std::to_string(count) + " sentences (indices 0 to " +
                               std::to_string(count - 1) + ")");
    task.check();
    doing = "running " + found.source;
    task.phase("running the sentence");
    auto result = std::make_shared<SyntaxResult>(syntax_argmax(*model, found, request.controls, task.stop_flag()));
    result->model_folder = request.model_folder;
    result->file = request.file;
    result->index = request.index;
    result->sentence_count = count;
    return result;
  } catch (const core::Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error(doing + ": " + e.what());
  }
}

}  // namespace

SyntaxJob::SyntaxJob(std::shared_ptr<TaskManager> tasks, std::shared_ptr<core::ModelStore> models)
    : Job(std::move(tasks), std::move(models)), cache_(std::make_shared<Cache>()) {}

void SyntaxJob::start(const SyntaxRequest& request) {
  TaskOptions o;
  o.name = "the Syntax view's sentence";
  o.lane = "syntax";  // one at a time: the runs share the sentence counts
  o.kind = "sentence";
  o.replaces = {"sentence"};
  launch<SyntaxResult>(o, [request, models = models_, cache = cache_](Task& task) {
    return run_sentence(task, request, *models, cache->sentence_counts);
  });
}

}  // namespace headlab::app
