#include "app/cli/cli.h"

#include "core/memory_budget.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <vector>

namespace headlab::app {

void refuse_overwrite(const std::string& path, bool force) {
  if (!force && std::filesystem::exists(path)) throw UsageError(path + " exists; pass --force to replace it");
}

int cli_main(int argc_in, char** argv_in, const GuiEntry& gui) {
  // `headlab --model DIR …` means `headlab gui --model DIR …`.
  std::vector<char*> args(argv_in, argv_in + argc_in);
  static char gui_word[] = "gui";
  if (gui && args.size() > 1) {
    const std::string first = args[1];
    if (first == "--model" || first == "--session" || first == "--script" || first == "--screenshot" ||
        first.rfind("--model=", 0) == 0 || first.rfind("--session=", 0) == 0)
      args.insert(args.begin() + 1, gui_word);
  }
  int argc = static_cast<int>(args.size());
  char** argv = args.data();
  CLI::App app{"HeadLab — find out what each attention head of a transformer does.\n"
               "With no command, opens the workbench window."};
  app.set_version_flag("--version", std::string("headlab ") + HEADLAB_VERSION);
  app.require_subcommand(0, 1);
  // Every command: runs refuse what would need more memory than this (core/memory_budget.h).
  std::string memory_limit;
  app.add_option("--memory-limit", memory_limit,
                 "Refuse runs estimated to need more memory than this (e.g. 8G, 'none'; default: half the free "
                 "memory, or $HEADLAB_MEMORY_LIMIT); any command accepts it");
  app.fallthrough();
  Action action;
  if (gui) add_gui_command(app, action, gui);
  add_info_command(app, action);
  add_init_command(app, action);
  add_run_command(app, action);
  add_tokenize_command(app, action);
  add_train_command(app, action);
  add_train_tokenizer_command(app, action);
  add_predict_command(app, action);
  add_evaluate_command(app, action);
  add_analyze_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "headlab: " << e.what() << " (see headlab --help)\n";
    return 2;
  }
  if (!memory_limit.empty()) {
    try {
      core::set_memory_limit(memory_limit == "none" ? -1 : core::parse_byte_size(memory_limit));
    } catch (const std::invalid_argument& e) {
      std::cerr << "headlab: --memory-limit: " << e.what() << "\n";
      return 2;
    }
  }
  if (!action) {
    if (gui) return gui(GuiOptions{});
    std::cout << app.help();
    return 0;
  }
  const std::string command = app.get_subcommands().empty() ? "" : app.get_subcommands().front()->get_name();
  try {
    return action();
  } catch (const UsageError& e) {
    std::cerr << "headlab " << command << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "headlab " << command << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace headlab::app
