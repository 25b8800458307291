// The Patching view's run: every head's z taken from a counterfactual text into the Input view's
// text (analysis/patching.h), with attribution patching at once and exact patching filling in head
// by head, and the direct logit attribution of the clean run (analysis/logit_attribution.h) — a
// task of the window's task system with progress and Stop, on the model store's model. Torch-free
// header: GUI translation units include it.
#pragma once

#include "app/work/job.h"
#include "core/controls.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace headlab::app {

// What the user asks of patching: the Patching view, its command, the session and the job hold it.
struct PatchingSettings {
  std::string counterfactual;  // the corrupted text (token ids for a model without a tokenizer)
  std::string answer, wrong;   // tokens or ids: the clean and the counterfactual answer
  std::string metric = "logit-diff";  // logit-diff | logit | prob | kl
  std::string site = "z";             // z | pattern | q | k | v (per head), resid | mlp (per layer)
  bool operator==(const PatchingSettings& o) const {
    return counterfactual == o.counterfactual && answer == o.answer && wrong == o.wrong && metric == o.metric &&
           site == o.site;
  }
  bool operator!=(const PatchingSettings& o) const { return !(*this == o); }
};

struct PatchingRequest {
  std::string model_folder;
  std::vector<int64_t> clean_ids;  // the Input view's tokens as it ran them
  std::string clean_text;          // when clean_ids is empty: the text, tokenized as the Input view does
  PatchingSettings settings;
  core::ModelControls controls;    // the Mixer's gates and mixing, applied to every run
};

struct PatchingResult {
  std::string model_folder;
  PatchingSettings settings;
  std::vector<int64_t> clean_ids;  // the clean input it measured
  core::ModelControls controls;    // the Mixer's controls it ran with
  int64_t answer = -1, wrong = -1, position = 0;
  std::string answer_token, wrong_token;
  double clean = 0, corrupt = 0;   // the metric of the two runs
  // [layer][unit] (unit: a head, or the layer for resid and mlp), normalised:
  // (patched − corrupt) / (clean − corrupt); NaN where exact patching has not run yet.
  std::vector<std::vector<float>> exact, attribution;
  std::optional<double> correlation;
  int64_t done = 0, total = 0;     // exact re-runs
  bool finished = false;
  // Direct logit attribution of the clean run [layer][head] at the scored position, or the reason
  // it has none (dla_note).
  std::vector<std::vector<float>> dla;
  std::string dla_note;
  std::vector<std::string> notes;
};

class PatchingJob : public Job {
 public:
  explicit PatchingJob(std::shared_ptr<TaskManager> tasks = nullptr, std::shared_ptr<core::ModelStore> models = nullptr)
      : Job(std::move(tasks), std::move(models)) {}
  // Starts a run; one in flight is stopped. Stop ends it after the re-run under way; what was
  // measured stays on show.
  void start(const PatchingRequest& request);
  std::shared_ptr<const PatchingResult> result() const { return shown<PatchingResult>(); }
};

}  // namespace headlab::app
