// The engine's command line: every command of the table (app/cli/cli.h).
#include "app/cli/cli.h"

namespace headlab::app {

std::map<std::string, AddCommand> engine_commands(const GuiEntry& gui) {
  std::map<std::string, AddCommand> commands = {
      {"info", [](CLI::App& app, Action& action) { add_info_command(app, action, info_engine); }},
      {"init", add_init_command},
      {"run", add_run_command},
      {"tokenize", add_tokenize_command},
      {"train", add_train_command},
      {"train-tokenizer", add_train_tokenizer_command},
      {"predict", add_predict_command},
      {"generate", add_generate_command},
      {"evaluate", add_evaluate_command},
      {"analyze", add_analyze_command},
      {"merge", add_merge_command},
      {"count-tokens", add_count_tokens_command},
      {"convert", add_convert_command},
      {"prune", add_prune_command},
      {"compare", add_compare_command},
      {"circuits", add_circuits_command},
      {"patch", add_patch_command},
  };
  if (gui) commands["gui"] = [gui](CLI::App& app, Action& action) { add_gui_command(app, action, gui); };
  return commands;
}

}  // namespace headlab::app
