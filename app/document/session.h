// The session: every choice a user made in the workbench, as plain data, and its versioned JSON
// file (sorted keys, so saving an unchanged session again gives identical bytes).
#pragma once

#include "app/document/window_state.h"
#include "app/work/generation_job.h"
#include "app/work/patching_job.h"
#include "app/work/workbench_engine.h"
#include "core/atomic_file.h"
#include "core/controls.h"

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <string>
#include <vector>

namespace headlab::app {

inline constexpr int kSessionVersion = 1;

// What is selected and highlighted.
struct Selection {
  core::Stack stack = core::Stack::Encoder;  // attention shown: "encoder", "decoder", "cross"
  int layer = 0;
  int head = 0;
  Stage stage = Stage::U;
  int query = -1;  // highlighted query token (row), -1 = none
  int key = -1;    // highlighted key token (column), -1 = none
  int output_position = -1;  // Output view position, -1 = the default ([MASK] / last)
  int mixer_layer = 0;
};

struct ViewSettings {
  std::string colormap = "viridis";
  bool log_scale = false;
  // Attention weights coloured from 0 to each map's own maximum; false (the default): over 0–1 for
  // every map, so a uniform head looks as faint as it is.
  bool auto_range = false;
  float thumbnail_size = 84.0f;
  int top_k = 10;
  int export_scale = 1;
  std::string export_dir;  // "" = current directory
  std::string grid_measure = "maps";  // heads grid: attention maps, or a head-table column as a heatmap
  bool logit_spectra = false;         // the Spectra view also shows the current input's logit spectra
  std::string workspace = "Explore";  // the set of views on screen: "Explore" (maps, mixing) or "Analyse"
};

// The analyses' choices: the dataset run, the report on screen, the head table's order and filter,
// edited role thresholds and the LRP target of the current input.
struct AnalysisChoices {
  std::vector<std::string> dataset_files;
  std::vector<std::string> metrics;  // empty = every measure
  int64_t limit = 0;                 // 0 = every sentence
  std::string report_path;           // head_report.json on screen; "" = none, or embedded below
  std::string report_hash;           // hash of that file when the session was saved
  std::string report_embedded;       // a report made in the window, as JSON text (when small)
  std::string sort_by;               // head table column; "" = the report's order
  bool sort_descending = true;
  std::string filter_role;           // "" = any
  int filter_layer = -1;             // -1 = any
  bool thresholds_edited = false;    // false: the report's own thresholds
  double positional_threshold = 0.90, rare_threshold = 0.50, syntactic_margin = 0.10;
  // The measures' own role thresholds once edited (analysis::Measure::role_thresholds), by key.
  std::map<std::string, double> measure_thresholds;
  bool lrp_enabled = false;          // the Relevance view's passes run with every run
  int lrp_position = -1;             // -1 = the default target position
  int64_t lrp_token = -1;            // -1 = the top-1 token there
  std::string lrp_shading = "lrp";   // tokens shaded by "lrp", "rollout" or "flow"
  std::string syntax_file;           // the Syntax view's CoNLL-U file; "" = the dataset's first
  int syntax_index = 0;              // its sentence (0-based)
  // The typed input's parse instead of a file's sentence: CoNLL-U text, or a CoNLL-U file holding
  // a sentence whose words spell the input. Both "" = the file's sentence above.
  std::string syntax_parse;
  std::string syntax_parse_file;
};

// The Generate view's last generation: its settings and the tokens it wrote (a loaded session
// generates again with them: the same seed writes the same tokens).
struct GenerationChoices {
  GenerationSettings settings;     // app/work/generation_job.h
  std::vector<int64_t> generated;  // ids written; empty = nothing generated
};

// The Patching view and the Mixer's "take from counterfactual".
struct PatchingChoices {
  PatchingSettings settings;  // app/work/patching_job.h
  // [layer][head] of the main stack: how much of each head's output comes from the counterfactual
  // (0 = its own, 1 = the counterfactual's); empty = none taken.
  std::vector<std::vector<float>> take;
  bool ran = false;  // Patch was run: a loaded session runs it again, with what it measured with
  // What the last Patch measured with: the clean text (the text last run), its settings and the
  // Mixer's controls. A loaded session measures again with these, so its result — and the marks
  // saying it is stale against the views — come back as they were saved.
  std::string measured_text;
  PatchingSettings measured_settings;
  core::ModelControls measured_controls;
};

struct SessionState {
  std::string model_folder;      // "" = the random-weight fallback model
  std::string model_hash;        // weights hash when saved
  std::string random_config;     // config.json of the random model (model_folder == "")
  std::string device = "cpu";    // where the folder's model runs: "cpu" or "cuda:N" (core/model/device.h)
  std::string precision;  // how runs compute: "exact" or "fast" (core/precision.h); "" in a session from before
  std::string text;
  std::string decoder_text;
  core::ModelControls controls;
  Selection selection;
  ViewSettings view;
  AnalysisChoices analysis;
  GenerationChoices generation;
  PatchingChoices patching;
  WindowState window;           // the window's layout, open views and views' own state
  // Not written to session files: kept across sessions in recent.json (see below).
  std::vector<std::string> recent_folders;
};

nlohmann::json controls_to_json(const core::ModelControls& controls);
core::ModelControls controls_from_json(const nlohmann::json& json);  // throws naming the key

nlohmann::json session_to_json(const SessionState& state);
// The text of a session file: 2-space JSON, sorted keys, trailing newline.
std::string session_text(const SessionState& state);

struct SessionLoad {
  SessionState state;
  std::vector<std::string> warnings;  // "written by a newer HeadLab (version 3) …", "… ignored: …"
};
// Keeps whatever it can read; throws only when the text is not a HeadLab session at all.
SessionLoad session_from_json(const nlohmann::json& json);
SessionLoad load_session_file(const std::string& path);
// Replaces `path` atomically (its folder is created); a crash mid-save leaves the previous file.
void save_session_file(const std::string& path, const SessionState& state);

// Every file the window writes goes through core's atomic writer (core/atomic_file.h).
using core::write_file_atomic;

// $XDG_STATE_HOME/headlab (default ~/.local/state/headlab), created on demand.
std::string state_dir();
std::string autosave_path();      // state_dir()/autosave.json
std::string recent_list_path();   // state_dir()/recent.json
// The recent-folders list; none when the file does not exist. Throws naming the file when it
// cannot be read or is not a JSON list of strings.
std::vector<std::string> load_recent_folders();
void save_recent_folders(const std::vector<std::string>& folders);
// Moves `folder` to the front, keeps at most 10.
void remember_folder(std::vector<std::string>& folders, const std::string& folder);

}  // namespace headlab::app
