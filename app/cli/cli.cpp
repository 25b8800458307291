#include "app/cli/cli.h"

#include "core/memory_budget.h"
#include "core/precision.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <vector>

namespace headlab::app {

const std::vector<CommandInfo>& command_table() {
  static const std::vector<CommandInfo> table = {
      {"gui", "Open the workbench window (the default with no command)"},
      {"info", "Describe a model folder (from its config and weight headers), or this machine's BLAS and threads"},
      {"init", "Write a model folder with random weights for any config"},
      {"run", "Run a model on ids or text and dump logits and every head's attention"},
      {"tokenize", "Tokenize JSON strings from stdin (one per line) into JSON lines of ids, tokens, offsets"},
      {"train", "Train a model of any config on text (masked LM, causal LM or seq2seq)"},
      {"train-tokenizer", "Train a WordPiece, byte-level BPE or WordLevel tokenizer (tokenizer.json)"},
      {"predict", "Top-k fills of [MASK] (masked LM) or the next token (causal LM)"},
      {"generate", "Write text token by token from the KV cache (causal LM or encoder-decoder), dumping each step's attention"},
      {"evaluate", "How well a model reads text: its [UNK] share, masked-LM / next-token loss and top-1"},
      {"analyze", "Measure every head over a dataset: confidence, roles, LRP, importance, spectra"},
      {"merge", "Join sharded head reports into the report of one pass"},
      {"count-tokens", "Count a corpus's tokens into a model folder (rare-word ranks)"},
      {"convert", "Turn a trained model into grouped-query / multi-query attention (mean-pooled key/value heads) or collaborative attention (CP decomposition of the key-query products)"},
      {"compare", "Compare models trained alike: quality, parameters, speed, KV cache, head roles, spectra and the attention logits' rank"},
      {"circuits", "A model's weight circuits, no data needed: Q/K/V-composition scores between heads, OV eigenvalues and copying scores"},
      {"patch", "Activation, path and attribution patching: every head's (or layer's) effect on the prediction when taken from a counterfactual"},
      {"prune", "Prune heads with Hard Concrete L0 gates over a sweep of λ, as Voita et al. 2019: heads kept, quality, which roles survive"},
  };
  return table;
}

const char* command_description(const std::string& name) {
  for (const auto& c : command_table())
    if (name == c.name) return c.description;
  throw std::logic_error("no command '" + name + "' in the command table");
}

int cli_main(int argc_in, char** argv_in, const std::map<std::string, AddCommand>& commands, bool with_gui,
             const GuiEntry& gui) {
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
  // Every command: how runs compute (core/precision.h).
  std::string precision;
  app.add_option("--precision", precision,
                 "How runs compute: exact (float32 throughout; the default) or fast (BF16 weights kept as stored "
                 "multiply in BF16, TF32 on a card; maps and logits move by ~1e-2); any command accepts it");
  app.fallthrough();
  Action action;
  for (const auto& c : command_table()) {
    if (std::string(c.name) == "gui" && !with_gui) continue;
    auto add = commands.find(c.name);
    if (add != commands.end()) {
      add->second(app, action);
      continue;
    }
    // Listed, not served here: the front end hands it to the engine before parsing.
    auto* cmd = app.add_subcommand(c.name, c.description);
    cmd->allow_extras();
    const std::string name = c.name;
    cmd->callback([name, &action] {
      action = [name]() -> int { throw std::logic_error("'" + name + "' runs in headlab-engine"); };
    });
  }
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
  if (!precision.empty()) {
    try {
      core::set_precision(core::parse_precision(precision));
    } catch (const std::invalid_argument& e) {
      std::cerr << "headlab: --precision: " << e.what() << "\n";
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
