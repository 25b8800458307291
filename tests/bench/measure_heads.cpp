// measure_heads --model DIR [--conllu FILE] [--corpus FILE…] [--max-sentences N] [--json OUT]:
// Voita-style positional / rare-word heads and Clark-style syntactic heads of a model.
#include "analysis/head_roles.h"
#include "core/model.h"
#include "core/system_info.h"
#include "core/train/tokenizer_trainer.h"
#include "shared_data.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
  headlab::core::use_passive_openmp(argv);  // as headlab does
  CLI::App app{"Measure positional, rare-word and syntactic heads over a UD treebank"};
  // Defaults: ../shared/data beside the checkout.
  std::string model_dir, conllu = (headlab::test::shared_data_dir() / "ud" / "en_ewt-ud-dev.conllu").string(), json_out;
  std::vector<std::string> corpus;
  headlab::analysis::HeadRoleOptions options;
  app.add_option("--model", model_dir, "Model folder")->required();
  app.add_option("--conllu", conllu, "UD treebank (.conllu)");
  app.add_option("--corpus", corpus, "Text files for token frequencies (default: the Gutenberg books)");
  app.add_option("--max-sentences", options.max_sentences, "Sentences to use (0 = all)");
  app.add_option("--json", json_out, "Write the report as JSON");
  CLI11_PARSE(app, argc, argv);
  try {
    if (corpus.empty()) corpus = headlab::test::gutenberg_books();
    std::sort(corpus.begin(), corpus.end());
    headlab::core::use_batch_threads();
    auto model = headlab::core::load_model(model_dir);
    if (!model->tokenizer) throw std::runtime_error(model_dir + " has no tokenizer");
    std::vector<std::string> texts;
    for (const auto& p : corpus) texts.push_back(headlab::core::train::read_text_file(p));
    auto freq = headlab::analysis::token_frequencies(*model->tokenizer, texts);
    auto sentences = headlab::analysis::read_conllu(conllu);
    auto report = headlab::analysis::measure_head_roles(*model, sentences, freq, options);
    std::cout << report.summary();
    if (!json_out.empty()) std::ofstream(json_out) << report.to_json().dump(2) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "measure_heads: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
