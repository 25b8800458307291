// The Syntax view's run: one CoNLL-U sentence through the model (with the window's controls, so
// gates and mixing apply) as a task of the window's task system, giving every head's word-level
// argmax — the prediction the head report's syntactic measure scores (Clark et al. 2019 §4). The
// model comes from the model store (no copy of its own); errors name what was being done.
// Torch-free header: GUI translation units include it.
#pragma once

#include "core/controls.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace headlab::core {
struct Model;
class ModelStore;
}
namespace headlab::analysis {
struct DatasetSentence;
}

namespace headlab::app {

class TaskManager;
class TaskTrack;

// Which sentence, on which model, under which controls: sentence `index` of a CoNLL-U file, or
// the text the user typed with its parse (pasted CoNLL-U, or a CoNLL-U file holding a sentence whose
// words spell the text).
struct SyntaxRequest {
  std::string model_folder;  // must have a tokenizer
  std::string file;          // a CoNLL-U file
  int index = 0;             // 0-based sentence of `file`
  core::ModelControls controls;
  // The typed input with its parse (used when `parse` or `parse_file` is set; `file` is then unused).
  std::string text;
  std::string parse;       // CoNLL-U text of the input's parse
  std::string parse_file;  // a CoNLL-U file: its first sentence that spells `text`
  bool on_input() const { return !parse.empty() || !parse_file.empty(); }
};

// One sentence with its gold tree and every head's word-level argmax.
struct SyntaxResult {
  std::string model_folder, file;
  int index = 0;
  int sentence_count = 0;  // sentences in `file`
  std::string source;      // "file:line" of the sentence (of its parse, for typed input)
  bool on_input = false;   // the typed input with its parse, rather than a file's sentence
  std::string text;        // the sentence as the model read it
  std::vector<std::string> words;
  std::vector<int> heads;               // gold head word per word (0-based, −1 = root)
  std::vector<bool> word_has_token;     // per word: a token of its own (arcs touching one without are not scored)
  std::vector<std::string> relations;   // as written
  // stack → [layer][head][word]: the word each word's row of the word-level map (values stage U)
  // points to, self excluded, −1 = none. Rows are dependents, so an arc d → predicted[d] is read
  // dependent → head, as the syntactic measure reads it.
  std::map<std::string, std::vector<std::vector<std::vector<int>>>> argmax;

  // The argmax of one head, or null when the result has no such head.
  const std::vector<int>* predicted(const std::string& stack, int layer, int head) const;
};

// Runs one sentence (as DatasetReader gives it) through `model` and takes every head's word-level
// argmax exactly as analysis::accumulate_layer does. Throws when the sentence does not fit the
// model's positions or has no word tokens, and core::Cancelled within one layer of `cancel` being set.
SyntaxResult syntax_argmax(core::Model& model, const analysis::DatasetSentence& sentence,
                           const core::ModelControls& controls, const std::atomic<bool>* cancel = nullptr);

struct SyntaxJobStatus {
  bool running = false;
  std::string error;  // why the last run failed ("" after a success), with what was being done
};

class SyntaxJob {
 public:
  // On its own task system and model store (tests) …
  SyntaxJob();
  // … or on the window's, shared with its other work.
  SyntaxJob(std::shared_ptr<TaskManager> tasks, std::shared_ptr<core::ModelStore> models);
  ~SyntaxJob();
  SyntaxJob(const SyntaxJob&) = delete;
  SyntaxJob& operator=(const SyntaxJob&) = delete;

  // Starts a run; a run in flight is stopped and its result dropped.
  void start(const SyntaxRequest& request);
  SyntaxJobStatus status() const;
  // The last published result; null before any and after a failure.
  std::shared_ptr<const SyntaxResult> result() const;
  // Increments with every published result or failure.
  uint64_t result_serial() const;

 private:
  struct Cache;  // the sentence counts of files read before (the lane's thread only)
  std::shared_ptr<TaskManager> tasks_;
  std::shared_ptr<core::ModelStore> models_;
  std::shared_ptr<Cache> cache_;
  std::unique_ptr<TaskTrack> track_;
  mutable std::shared_ptr<const SyntaxResult> shown_;
};

}  // namespace headlab::app
