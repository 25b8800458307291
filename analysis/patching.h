// Activation patching, path patching and attribution patching (core/model/patch.h) with a metric of
// the next-token prediction, for every head, layer or layer × position at once:
//   exact patching (Vig et al. 2020; Meng et al. 2022): the clean run with one site taken from the
//     corrupted run, each re-run from the patched layer only (the engine's incremental run);
//   attribution patching (Nanda 2023): the metric's gradient at the clean run, dotted with
//     corrupt − clean, for every site from one forward and one backward pass;
//   path patching (Wang et al. 2022; Goldowsky-Dill et al. 2023): a sender head's corrupted output
//     reaches only the chosen receiver heads' queries, keys or values.
#pragma once

#include "core/controls.h"
#include "core/model/patch.h"

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace headlab::core {
struct Model;
struct Trace;
}  // namespace headlab::core

namespace headlab::analysis {

// What a run is scored by, at one position's next-token logits:
//   LogitDiff  logit(answer) − logit(wrong) (the default);
//   Logit      logit(answer);
//   Prob       p(answer);
//   KL         KL(clean ‖ run) over the vocabulary (needs no answer).
enum class PatchMetric { LogitDiff, Logit, Prob, KL };
const char* metric_name(PatchMetric metric);              // "logit-diff", "logit", "prob", "kl"
PatchMetric metric_from_name(const std::string& name);    // throws std::invalid_argument

struct PatchRequest {
  std::vector<int64_t> clean, corrupt;  // token ids of the two runs, the same length
  core::Site site = core::Site::Z;
  bool each_position = false;  // a patch per position too (else every position at once)
  PatchMetric metric = PatchMetric::LogitDiff;
  int64_t answer = -1, wrong = -1;
  int64_t position = -1;  // the scored position; −1 = default_position (a masked LM's [MASK], else the last)
  core::ModelControls controls;  // applied to every run (gates, ablation, mixing)
  bool exact = true;        // exact patching of every unit
  bool attribution = true;  // attribution patching of every unit
  // Called after each exact re-run with (done, total); returning false stops (core::Cancelled).
  std::function<bool(int64_t done, int64_t total)> progress;
  // Called with the result so far: once attribution patching is done (before any exact re-run),
  // then after each exact re-run (the cells not yet run are NaN).
  std::function<void(const struct PatchResult& partial)> partial;
  const std::atomic<bool>* cancel = nullptr;
};

// [layer][unit][position]: unit = head of the site's head axis (q: query heads; k, v: stored key /
// value heads; pattern: softmax heads; z: output heads) or 1 for resid and mlp; position = 1 unless
// each_position.
using PatchTable = std::vector<std::vector<std::vector<double>>>;

struct PatchResult {
  core::Stack stack = core::Stack::Decoder;
  int64_t position = 0;  // the scored position
  double clean = 0, corrupt = 0;  // the metric of the two runs
  PatchTable exact;        // the patched run's metric (empty unless requested)
  PatchTable attribution;  // the first-order estimate of the same, clean + gradient · (corrupt − clean)
  // Pearson correlation of exact and attribution effects over every unit (when both ran).
  std::optional<double> correlation;
  int64_t layers_run = 0;  // layers the exact re-runs computed (the cost of incremental re-runs)
  std::vector<std::string> notes;
  // (patched − corrupt) / (clean − corrupt): 1 = the clean metric kept, 0 = the corrupted one; empty where
  // clean == corrupt.
  PatchTable normalised(const PatchTable& table) const;
};

// The position a prediction is scored at by default: a masked LM's first [MASK], else the last.
int64_t default_position(const core::Model& model, const std::vector<int64_t>& ids);

// Patches `request.site` of every layer × unit (× position) of the main stack from the corrupted
// run into the clean one. Throws std::invalid_argument when the two inputs differ in length (saying
// how), when an id is outside the vocabulary, when a metric needs an answer and has none, or when
// the site does not exist in this model (mlp in an attention-only one).
PatchResult patch_activations(core::Model& model, const PatchRequest& request);

// Path patching: the clean run in which `sender`'s output (its z, through W_O) is taken from the
// corrupted run on its direct path into `receivers`' `site` (q, k or v) only; every other head and
// layer reads the clean stream, and what the receivers then write propagates as usual. Returns the
// metric of that run.
struct HeadRef {
  int layer = 0, head = 0;
};
double path_patch(core::Model& model, const PatchRequest& request, HeadRef sender, const std::vector<HeadRef>& receivers,
                  core::Site site);
// What path_patch checks before it runs anything — the site, the heads inside the model, every
// receiver in a layer after the sender's, a model whose heads have their own outputs and inputs —
// for a caller that refuses a request before long work. std::invalid_argument naming the problem.
void check_path_patch(core::Model& model, HeadRef sender, const std::vector<HeadRef>& receivers, core::Site site);

}  // namespace headlab::analysis
