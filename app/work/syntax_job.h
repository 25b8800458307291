// The Syntax view's run: one CoNLL-U sentence through the model (with the window's controls, so
// gates and mixing apply) as a task of the window's task system, giving every head's word-level
// argmax — the prediction the head report's syntactic measure scores (Clark et al. 2019 §4). The
// model comes from the model store (no copy of its own); errors name what was being done.
// Torch-free header: GUI translation units include it.
#pragma once

#include "app/work/job.h"
#include "core/controls.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace headlab::core {
struct Model;
}
namespace headlab::analysis {
struct DatasetSentence;
}

namespace headlab::app {

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
  std::map<core::Stack, std::vector<std::vector<std::vector<int>>>> argmax;

  // The argmax of one head, or null when the result has no such head.
  const std::vector<int>* predicted(core::Stack stack, int layer, int head) const;
};

// Runs one sentence (as DatasetReader gives it) through `model` and takes every head's word-level
// argmax exactly as analysis::accumulate_layer does. Throws when the sentence does not fit the
// model's positions or has no word tokens, and core::Cancelled within one layer of `cancel` being set.
SyntaxResult syntax_argmax(core::Model& model, const analysis::DatasetSentence& sentence,
                           const core::ModelControls& controls, const std::atomic<bool>* cancel = nullptr);

// status() says whether a sentence is under way and why the last one failed.
class SyntaxJob : public Job {
 public:
  // Null `tasks` or `models`: a task system and model store of its own (tests); the window passes its own.
  explicit SyntaxJob(std::shared_ptr<TaskManager> tasks = nullptr, std::shared_ptr<core::ModelStore> models = nullptr);

  // Starts a run; a run in flight is stopped and its result dropped.
  void start(const SyntaxRequest& request);
  // The last published result (kept on show while the next sentence runs); null before any and
  // after a failure.
  std::shared_ptr<const SyntaxResult> result() const { return shown<SyntaxResult>(); }

 private:
  struct Cache;  // the sentence counts of files read before (the lane's thread only)
  std::shared_ptr<Cache> cache_;
};

}  // namespace headlab::app
