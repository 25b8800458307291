// Scripted runs of the workbench (`headlab gui --script FILE.json`): a list of actions the window
// performs one after another, each once the previous one's run has been drawn.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace headlab::app {

// One action: {"action": "set_text", "text": "…"}. Kinds:
//   open_model {folder}            set_text {text[, decoder_text]}     run (wait for the current run)
//   select_head {layer, head[, stack, stage]}   select_token {query | key}
//   set_gate {layer, head, value[, stack]}      set_ablation {layer, mode: zero|mean[, stack]}
//   set_mix {layer, which: pre|post, preset: identity|uniform|swap|blend[, a, b, alpha] | matrix}
//   reset {layer?}                 set_view {colormap?, log_scale?, fixed_range?}
//   save_session {path}            open_session {path}
//   export {view, path[, scale]}   (view: attention_map | heads_grid | head_view | any window title;
//                                   .png at scale 1/2/4, .svg and .pdf for the three figure views)
//   screenshot {path}              wait_frames {frames}                quit
//   show_view {view, open}         (open or close a window by its title)
struct ScriptAction {
  std::string kind;
  nlohmann::json args;
  int index = 0;  // position in the file, for messages
};

// Parses and checks a script; errors name the file, the action's index and the field.
std::vector<ScriptAction> parse_script(const nlohmann::json& json, const std::string& origin);
std::vector<ScriptAction> load_script(const std::string& path);

}  // namespace headlab::app
