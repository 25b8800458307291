// The workbench's named commands: every change a user, a script or a session load makes to the
// document goes through one of these. Views build them from clicks, the script runner parses them
// from JSON (one script action = one command, same name, same fields), and the Controller applies
// them. Window-only commands (export, screenshot, show/select a view, wait, quit) are in the same
// list so a script needs nothing else; the window applies those itself.
#pragma once

#include "app/work/generation_job.h"
#include "app/work/patching_job.h"
#include "app/work/workbench_engine.h"
#include "core/controls.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace headlab::app::cmd {

// --- model and input ---
struct OpenModel { std::string folder; };
// Sets the text (and the decoder's); runs it unless `run` is false (a keystroke in the input box).
struct SetText {
  std::string text;
  std::optional<std::string> decoder_text;
  bool run = true;
};
struct Run {};
// Runs the current text cut to the model's positions, after the model refused it as too long: its
// first tokens (`keep` "first") or a window of tokens around the token at `centre` ("around"). The
// text becomes the part that was kept.
struct TrimInput {
  std::string keep = "first";
  int centre = 0;
};
// Which prediction the Output view shows: -1 = the default ([MASK]s / the last token).
struct SetOutputPosition { int position = -1; };

// --- selection ---
// Selects a head everywhere (no stack: the attention shown); `stage` switches the maps shown.
struct SelectHead {
  std::optional<core::Stack> stack;
  int layer = 0, head = 0;
  std::optional<Stage> stage;
};
// Switches the attention and stage shown without changing layer/head (clamped to the stack).
struct SelectAttention {
  std::optional<core::Stack> stack;
  std::optional<Stage> stage;
  std::optional<int> mixer_layer;  // the layer the Mixer edits
};
struct SelectToken { int query = -1, key = -1; };

// --- controls (gates, ablation, mixing) ---
struct SetGate { std::optional<core::Stack> stack; int layer = 0, head = 0; float value = 1; };
struct SetAblation { std::optional<core::Stack> stack; int layer = 0; core::Ablation mode = core::Ablation::Zero; };
// A mixing matrix before ("pre") or after ("post") the softmax: a preset or an explicit h×h matrix.
struct SetMix {
  std::optional<core::Stack> stack;
  int layer = 0;
  std::string which = "post";
  std::string preset = "identity";  // identity | uniform | swap | blend
  int a = 0, b = 1;
  float alpha = 0.5f;
  std::optional<std::vector<float>> matrix;
};
// Resets one layer's controls, or every control when `layer` is empty.
struct Reset { std::optional<core::Stack> stack; std::optional<int> layer; };

// --- how maps are drawn ---
struct SetView {
  std::optional<std::string> colormap;
  // auto_range: attention weights coloured from 0 to each map's own maximum instead of over 0–1.
  std::optional<bool> log_scale, auto_range;
  std::optional<float> thumbnail_size;
  std::optional<int> top_k, export_scale;
  std::optional<std::string> export_dir;
  std::optional<std::string> grid_measure;  // the heads grid's colouring: "maps" or a head-table column
  std::optional<std::string> workspace;     // "Explore" or "Analyse"
  std::optional<bool> logit_spectra;        // the current input's logit spectra in the Spectra view
};

// --- analyses ---
// The Dataset view's choices: files (text or CoNLL-U), measures (empty = all), limit (0 = every
// sentence).
struct DatasetChoices {
  std::vector<std::string> files;
  std::vector<std::string> metrics;
  int64_t limit = 0;
};
// Runs `headlab analyze` as a task with the choices (a script waits until it finishes) …
struct RunDataset : DatasetChoices {
  RunDataset() = default;
  RunDataset(std::vector<std::string> files, std::vector<std::string> metrics = {}, int64_t limit = 0)
      : DatasetChoices{std::move(files), std::move(metrics), limit} {}
};
// … or remembers them without running (the Dataset view's edits).
struct SetDatasetChoices : DatasetChoices {
  SetDatasetChoices() = default;
  SetDatasetChoices(std::vector<std::string> files, std::vector<std::string> metrics = {}, int64_t limit = 0)
      : DatasetChoices{std::move(files), std::move(metrics), limit} {}
};
struct StopDataset {};
// The sentence the Syntax view shows: sentence `index` (0-based) of a CoNLL-U file; no file = the
// one chosen before, else the first CoNLL-U file of the dataset.
struct SelectSentence {
  std::optional<std::string> file;
  int index = 0;
};
// The Syntax view shows the typed input with its parse: CoNLL-U text (`conllu`), or a CoNLL-U file
// holding a sentence whose words spell the input (`file`). Both empty: back to the file's sentences.
struct SetParse {
  std::string conllu;
  std::string file;
};
struct OpenReport { std::string path; };
// Closes the head report (the one on screen, or one of another model kept apart).
struct CloseReport {};
// Sorts the head table by a column of head_report.csv.
struct SortHeads { std::string by; bool descending = true; };
// Filters the head table: role "" = any ("positional", "syntactic", "rare-word", "none"), layer -1 = any.
struct FilterHeads { std::string role; int layer = -1; };
// Role thresholds (ReportSettings); roles are recomputed from the stored counts, no re-run.
// (The rare-word rank cut-off is applied while counting, so it is not among them.)
struct SetThresholds {
  std::optional<double> positional, rare, syntactic_margin;
  bool reset = false;  // back to the thresholds the report was measured with
  // A measure's role threshold (analysis::Measure::role_thresholds): its key and value.
  std::optional<std::string> measure;
  std::optional<double> measure_value;
};
// What LRP explains on the current input: a logit at `position` (-1 = default) of `token`
// (-1 = the top-1 token there). `enabled` false turns the Relevance view's passes off.
// `shading`: what the Relevance view shades tokens by — "lrp", "rollout" or "flow" (flow is
// computed only while it is shown).
struct SetLrpTarget {
  int position = -1;
  int64_t token = -1;
  bool enabled = true;
  std::optional<std::string> shading;
};

// --- generation (the Generate view) ---
// Generates from `prompt` with the session's head controls; a script waits until it ends.
struct Generate {
  GenerationSettings settings;  // app/work/generation_job.h; script fields prompt, max_new, …
  int keep = 0;  // keep this many tokens of the last generation and write on from there
};
struct StopGeneration {};

// --- patching (the Patching view and the Mixer) ---
// The Patching view's choices (a field left out keeps its value): the counterfactual text, the
// answer and wrong tokens (tokens or ids), the metric (logit-diff, logit, prob, kl) and the site
// (z, pattern, q, k, v per head; resid, mlp per layer).
struct SetPatching {
  std::optional<std::string> counterfactual, answer, wrong, metric, site;
};
// Patches every head (or layer) from the counterfactual into the current input as a task: attribution
// patching at once, exact patching head by head. A script waits until it ends.
struct RunPatching {};
struct StopPatching {};
// Takes `weight` (0–1) of one head's output from the counterfactual in the live run, like a gate
// (0 = its own output); `reset` clears every head's.
struct TakeFromCounterfactual {
  int layer = 0, head = 0;
  float weight = 1;
  bool reset = false;
};

// Where the opened folder's model runs: "cpu", "cuda" or "cuda:N". The model is opened again there
// (its maps and reports are those of the same weights); a device this build or machine cannot use
// is refused with the reason, and a model that cannot open there (too large for the card) stays
// open where it was. A random-weight model stays on the CPU.
struct SetDevice { std::string device; };

// How runs compute: "exact" or "fast" (core/precision.h), for the whole process. The input runs
// again at once, so the maps shown are the new precision's; refused while a dataset analysis, patching,
// a generation, a conversion or an export runs, since it would finish at another precision.
struct SetPrecision { std::string precision; };

// --- conversion (the Model view) ---
// Converts the open model (`headlab convert`, core/model/convert.h) into `to` = "gqa" (with `groups`),
// "mqa" or "collaborative" (with `key_dim`), written to the folder `out`; with `open`, the window
// opens the converted model when it is written. A script waits until it ends.
struct ConvertModel {
  std::string to;
  int groups = 0;
  int key_dim = 0;
  std::string out;
  bool open = true;
};
struct StopConvert {};

// --- files ---
struct SaveSession { std::string path; };
struct OpenSession { std::string path; };

// --- window only (applied by the window, not the Controller) ---
// .png of a view's window, or of its figure alone (figure_only: no title bar, no controls). An
// existing file is replaced only with `overwrite`, or — with `ask` — after the window's "Replace
// file?" dialog, as the window's own export buttons do (a script answers it with answer_dialog).
struct Export {
  std::string view, path;
  int scale = 1;
  bool figure_only = false;
  bool overwrite = false;
  bool ask = false;
};
struct Screenshot { std::string path; int scale = 1; bool overwrite = false; };
struct ShowView { std::string view; bool open = true; };
struct SelectView { std::string view; };
struct WaitFrames { int frames = 1; };
// The attention map's zoom (1 = the whole map), centred on the selected token, and its query
// range (query_to < 0: every row) — the view's own state, set from a script for figures.
struct SetMapView {
  float zoom = 1;
  int query_from = 0, query_to = -1;
};
// The heads the Head view hides (its head buttons; every other head shown) — the view's own state,
// set from a script for figures.
struct SetHeadView {
  std::vector<int> hidden;
};
struct Quit {};
// Scripts only: the previous action must have failed with a message containing `contains` (any
// message when empty); the message is printed and cleared, and the script goes on. A script that
// opens damaged files checks each refusal this way; no error, or another one, fails the script.
struct ExpectError { std::string contains; };
// Scripts only: presses a button ("Replace" or "Cancel") of the open "Replace file?" dialog, as a
// click would, the next time the dialog is drawn. An error when no dialog is open.
struct AnswerDialog { std::string button; };

}  // namespace headlab::app::cmd

namespace headlab::app {

using Command = std::variant<cmd::OpenModel, cmd::SetText, cmd::Run, cmd::SetOutputPosition, cmd::SelectHead,
                             cmd::SelectAttention, cmd::SelectToken, cmd::SetGate, cmd::SetAblation, cmd::SetMix,
                             cmd::Reset, cmd::SetView, cmd::RunDataset, cmd::SetDatasetChoices, cmd::StopDataset, cmd::SelectSentence, cmd::SetParse,
                             cmd::OpenReport,
                             cmd::SortHeads, cmd::FilterHeads, cmd::SetThresholds, cmd::SetLrpTarget,
                             cmd::SaveSession, cmd::OpenSession, cmd::Export, cmd::Screenshot, cmd::ShowView,
                             cmd::SelectView, cmd::WaitFrames, cmd::SetMapView, cmd::Quit, cmd::ExpectError,
                             cmd::AnswerDialog, cmd::Generate, cmd::StopGeneration, cmd::ConvertModel,
                             cmd::StopConvert, cmd::TrimInput, cmd::CloseReport, cmd::SetPatching,
                             cmd::RunPatching, cmd::StopPatching, cmd::TakeFromCounterfactual, cmd::SetDevice,
                             cmd::SetPrecision, cmd::SetHeadView>;

// The script name of each command ("select_head", …), in the variant's order.
const std::vector<std::string>& command_names();
std::string command_name(const Command& command);
// True for the commands the window applies (export, screenshot, show_view, select_view, wait_frames,
// set_map_view, set_head_view, quit).
bool is_window_command(const Command& command);

// {"action": "select_head", "layer": 1, "head": 2} → cmd::SelectHead. Throws std::runtime_error
// naming the action and the field that is missing or of the wrong type.
Command command_from_json(const nlohmann::json& action);
// The inverse (every field written): command_from_json(command_to_json(c)) == c field by field.
nlohmann::json command_to_json(const Command& command);


}  // namespace headlab::app
