// Scripted runs of the workbench (`headlab gui --script FILE.json`): a list of actions the window
// performs one after another, each once the previous one has settled on screen. Every action is a
// command of app/document/commands.h under its name, with the same fields:
//   open_model {folder}  ("" = a random-weight model)      set_text {text[, decoder_text, run]}
//   run   set_output_position {position}   trim_input {keep?: first|around, centre?}  (a refused long text, cut)
//   select_head {layer, head[, stack, stage]}   select_attention {stack?, stage?}   select_token {query?, key?}
//   set_gate {layer, head, value[, stack]}      set_ablation {layer, mode: zero|mean[, stack]}
//   set_mix {layer, which: pre|post, preset: identity|uniform|swap|blend[, a, b, alpha] | matrix}
//   reset {layer?, stack?}
//   set_view {colormap?, log_scale?, auto_range?, thumbnail_size?, top_k?, export_scale?, export_dir?, grid_measure?,
//             workspace?: Explore|Analyse, logit_spectra?}
//   run_dataset {files: [...], metrics?: [...], limit?}  (waits until it finishes)   stop_dataset
//   set_dataset {files: [...], metrics?, limit?}  (the same choices, not run)
//   select_sentence {index[, file]}   set_parse {conllu? | file?}  (the typed input with its parse; both "" = off)
//   open_report {path}   close_report   sort_heads {by, descending?}   filter_heads {role?, layer?}
//   set_thresholds {positional?, rare?, syntactic_margin?, reset?}
//   set_lrp_target {position[, token, enabled, shading: lrp|rollout|flow]}
//   save_session {path}  open_session {path}
//   export {view, path[, scale, figure_only, overwrite]}  screenshot {path[, scale, overwrite]}  show_view {view[, open]}  select_view {view}
//   wait_frames {frames}  set_map_view {zoom[, query_from, query_to]}  set_head_view {hidden?: [heads]}  quit
//   expect_error {contains?}  (the previous action failed with such a message: printed, cleared, go on)
#pragma once

#include "app/document/commands.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace headlab::app {

struct ScriptAction {
  Command command;
  int index = 0;  // position in the file, for messages
};

// Parses and checks a script; errors name the file, the action's index and the field.
std::vector<ScriptAction> parse_script(const nlohmann::json& json, const std::string& origin);
std::vector<ScriptAction> load_script(const std::string& path);

}  // namespace headlab::app
