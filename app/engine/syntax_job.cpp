#include "app/engine/syntax_job.h"

#include "analysis/dataset.h"
#include "analysis/head_stats.h"
#include "core/model.h"
#include "core/run.h"
#include "core/system_info.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace headlab::app {
namespace {

// The stacks the head report measures, with the maps that feed the syntactic measure.
const core::AttentionStages& stages_of(const core::Trace& trace, const std::string& stack, int layer) {
  if (stack == "encoder") return trace.encoder.layers[size_t(layer)].self;
  if (stack == "decoder") return trace.decoder.layers[size_t(layer)].self;
  return trace.decoder.layers[size_t(layer)].cross;
}

std::vector<std::pair<std::string, int>> stacks_of(const core::ModelConfig& c) {
  std::vector<std::pair<std::string, int>> out;
  if (c.encoder) out.push_back({"encoder", c.encoder->layers});
  if (c.decoder) out.push_back({"decoder", c.decoder->layers});
  if (c.decoder && c.decoder->cross_attention) out.push_back({"cross", c.decoder->layers});
  return out;
}

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

const std::vector<int>* SyntaxResult::predicted(const std::string& stack, int layer, int head) const {
  auto it = argmax.find(stack);
  if (it == argmax.end() || layer < 0 || size_t(layer) >= it->second.size()) return nullptr;
  const auto& heads_of_layer = it->second[size_t(layer)];
  if (head < 0 || size_t(head) >= heads_of_layer.size()) return nullptr;
  return &heads_of_layer[size_t(head)];
}

SyntaxResult syntax_argmax(core::Model& model, const analysis::DatasetSentence& sentence,
                           const core::ModelControls& controls) {
  if (!model.tokenizer) throw std::runtime_error("the Syntax view needs a model folder with a tokenizer");
  if (!sentence.has_tree()) throw std::runtime_error(sentence.source + " has no dependency tree");
  const analysis::TokenizedSentence ts = analysis::tokenize_sentence(*model.tokenizer, sentence);
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
  const auto trace = core::run(model, request);
  for (const auto& [stack, layers] : stacks_of(model.config)) {
    auto& per_layer = r.argmax[stack];
    for (int l = 0; l < layers; ++l) {
      // accumulate_layer reads the maps as float32 before making them word-level.
      const auto maps = core::value_weights(stages_of(*trace, stack, l)).to(torch::kFloat32);  // [heads, T, S]
      per_layer.push_back(analysis::word_argmax(analysis::word_level_maps(maps, layout)));
    }
  }
  return r;
}

SyntaxJob::SyntaxJob() : thread_([this] { loop(); }) {}

SyntaxJob::~SyntaxJob() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
    pending_.reset();
  }
  wake_.notify_all();
  thread_.join();
}

void SyntaxJob::start(const SyntaxRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_ = request;
    status_.running = true;
  }
  wake_.notify_all();
}

SyntaxJobStatus SyntaxJob::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

std::shared_ptr<const SyntaxResult> SyntaxJob::result() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return result_;
}

uint64_t SyntaxJob::result_serial() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return result_serial_;
}

void SyntaxJob::loop() {
  core::use_interactive_threads();  // one intra-op thread: the window and the live worker need the other core
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return quit_ || pending_; });
    if (quit_) return;
    const SyntaxRequest request = std::move(*pending_);
    pending_.reset();
    busy_ = true;
    lock.unlock();
    std::shared_ptr<const SyntaxResult> result;
    std::string error;
    try {
      result = run(request);
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {  // nothing may leave the thread
      error = "an unknown error";
    }
    lock.lock();
    busy_ = false;
    if (pending_) continue;  // superseded: the newer request's result is the one to show
    status_.running = false;
    status_.error = error;
    result_ = std::move(result);  // null after a failure: the view shows the error, not a stale sentence
    ++result_serial_;
  }
}

std::shared_ptr<const SyntaxResult> SyntaxJob::run(const SyntaxRequest& request) {
  std::string doing = "loading the model " + request.model_folder;
  try {
    if (request.model_folder.empty())
      throw std::runtime_error("the Syntax view needs a model folder with a tokenizer (a random-weight model has none)");
    if (!model_ || model_folder_ != request.model_folder) {
      model_.reset();
      model_ = core::load_model(request.model_folder);
      model_folder_ = request.model_folder;
    }
    if (request.on_input()) {
      doing = "running the input with its parse";
      auto result = std::make_shared<SyntaxResult>(syntax_argmax(*model_, input_sentence(request), request.controls));
      result->model_folder = request.model_folder;
      result->on_input = true;
      return result;
    }
    doing = "reading sentence " + std::to_string(request.index) + " of " + request.file;
    if (request.index < 0) throw std::runtime_error("the sentence index is negative");
    std::error_code ec;
    const auto stamp = std::filesystem::last_write_time(request.file, ec);
    if (ec) throw std::runtime_error("cannot read " + request.file + ": " + ec.message());
    const std::string count_key = request.file + "@" + std::to_string(stamp.time_since_epoch().count());
    const auto known = sentence_counts_.find(count_key);
    analysis::DatasetReader reader({request.file});
    analysis::DatasetSentence sentence, found;
    int count = 0;
    bool have = false;
    while ((known == sentence_counts_.end() || !have) && reader.next(sentence)) {
      if (count == request.index) found = sentence, have = true;
      ++count;
    }
    if (known != sentence_counts_.end()) count = known->second;
    sentence_counts_[count_key] = count;
    if (!have)
      throw std::runtime_error(request.file + " has " + std::to_string(count) + " sentences (indices 0 to " +
                               std::to_string(count - 1) + ")");
    doing = "running " + found.source;
    auto result = std::make_shared<SyntaxResult>(syntax_argmax(*model_, found, request.controls));
    result->model_folder = request.model_folder;
    result->file = request.file;
    result->index = request.index;
    result->sentence_count = count;
    return result;
  } catch (const std::exception& e) {
    throw std::runtime_error(doing + ": " + e.what());
  }
}

}  // namespace headlab::app
