// `headlab train-tokenizer --data PATH… --vocab-size N --out tokenizer.json [--kind wordpiece|bpe]`
#include "app/cli/cli.h"
#include "app/cli/cli_checks.h"
#include "core/atomic_file.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/trainer.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace headlab::app {

void add_train_tokenizer_command(CLI::App& app, Action& action) {
  struct Options {
    std::vector<std::string> data;
    std::string out;
    core::train::TokenizerTrainOptions train;
    bool lowercase = false, cased = false, force = false;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("train-tokenizer", command_description("train-tokenizer"));
  cmd->add_option("--data", options->data, "Text files")->required();
  cmd->add_option("--vocab-size", options->train.vocab_size, "Vocabulary size")->required()->check(number_in(300, 1000000));
  cmd->add_option("--out", options->out, "Output tokenizer.json")->required();
  cmd->add_option("--kind", options->train.kind, "wordpiece | bpe | wordlevel")->check(CLI::IsMember({"wordpiece", "bpe", "wordlevel"}));
  auto* lowercase = cmd->add_flag("--lowercase", options->lowercase, "WordPiece/WordLevel: lowercase and strip accents (the default)");
  auto* cased = cmd->add_flag("--cased", options->cased, "WordPiece/WordLevel: keep case and accents");
  auto* no_cls_sep = cmd->add_flag("--no-cls-sep", [options](int64_t) { options->train.cls_sep = false; },
                "WordPiece/WordLevel: add no [CLS]/[SEP] around a sentence (a model trained with it has no sink tokens)");
  cmd->add_option("--whole-words", options->train.whole_words,
                  "WordPiece: keep this many of the most frequent words whole; other words get subword pieces")
      ->check(non_negative());
  auto* limit_alphabet = cmd->add_option("--limit-alphabet", options->train.limit_alphabet,
                  "WordPiece: keep this many of the most frequent characters (rarer ones are [UNK])")
      ->check(positive());
  cmd->add_option("--min-frequency", options->train.min_frequency, "Never merge a pair seen fewer times (WordLevel: a rarer word is [UNK])")
      ->check(positive());
  cmd->add_flag("--force", options->force, "Replace an existing --out file");
  cmd->callback([options, &action, lowercase, cased, no_cls_sep, limit_alphabet] {
    // Which options were given, read now (the action runs after parsing).
    const bool case_or_frame = lowercase->count() + cased->count() + no_cls_sep->count() > 0;
    const bool alphabet = limit_alphabet->count() > 0;
    action = [options, case_or_frame, alphabet] {
      // An option of another kind of tokenizer would change nothing: refused by name, not ignored.
      const std::string& kind = options->train.kind;
      if (kind == "bpe" && case_or_frame)
        throw UsageError("--lowercase, --cased and --no-cls-sep are for --kind wordpiece or wordlevel (byte-level BPE "
                         "keeps every byte as it is and frames no sentence)");
      if (kind != "wordpiece" && alphabet) throw UsageError("--limit-alphabet needs --kind wordpiece");
      if (options->lowercase && options->cased) throw UsageError("--lowercase and --cased exclude each other");
      check_output_file("--out", options->out, options->force);
      if (options->train.whole_words > 0 && options->train.kind != "wordpiece")
        throw UsageError("--whole-words needs --kind wordpiece");
      options->train.lowercase = !options->cased;
      const auto doc = core::train::train_tokenizer_on_files(options->data, options->train);
      core::write_file_atomic(options->out, doc.dump(2) + "\n");
      auto tokenizer = core::Tokenizer::load(options->out);  // proves it loads
      std::cout << "wrote " << options->out << " (" << tokenizer->kind() << ", " << tokenizer->vocab_size()
                << " tokens)";
      if (tokenizer->vocab_size() < options->train.vocab_size)
        std::cout << ": fewer than the " << options->train.vocab_size << " asked — the text holds no more "
                  << (options->train.kind == "wordlevel" ? "words seen --min-frequency times" : "merges");
      std::cout << "\n";
      return 0;
    };
  });
}

}  // namespace headlab::app
