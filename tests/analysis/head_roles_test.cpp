// CoNLL-U reading and the head-role measurement (positional / rare-word / syntactic heads).
#include "test_common.h"

#include "analysis/conllu.h"
#include "analysis/head_roles.h"
#include "core/model.h"
#include "core/tokenizer.h"
#include "core/train/tokenizer_trainer.h"

#include <fstream>

using namespace headlab;

namespace {

const char* kConllu =
    "# sent_id = s1\n"
    "# text = The cat sat.\n"
    "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
    "2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n"
    "3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n"
    "\n"
    "# sent_id = s2\n"
    "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tdo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n"
    "2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_\n"
    "3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\t_\n"
    "3.1\tgone\tgo\tVERB\tVB\t_\t_\t_\t_\t_\n"
    "4\thome\thome\tADV\tRB\t_\t3\tobl:npmod\t_\t_\n";

}  // namespace

TEST_CASE("read_conllu keeps words, heads and base relations", "[analysis]") {
  test::TempDir dir("conllu");
  const std::string path = dir.str("x.conllu");
  std::ofstream(path) << kConllu;
  auto sentences = analysis::read_conllu(path);
  REQUIRE(sentences.size() == 2);
  CHECK(sentences[0].id == "s1");
  REQUIRE(sentences[0].words.size() == 4);
  CHECK(sentences[0].words[1].form == "cat");
  CHECK(sentences[0].words[1].head == 3);
  CHECK(sentences[0].words[1].relation == "nsubj");
  REQUIRE(sentences[1].words.size() == 4);  // the "1-2" range and the "3.1" empty node are skipped
  CHECK(sentences[1].words[3].relation == "obl");
  CHECK_THROWS_WITH(analysis::read_conllu(dir.str("none.conllu")), Catch::Contains("none.conllu"));
}

TEST_CASE("measure_head_roles reports every head with shares in [0, 1]", "[analysis]") {
  test::TempDir dir("head_roles");
  std::string text;
  for (int i = 0; i < 50; ++i) text += "the cat sat on the mat . do n't go home . the dog ate a bone .\n";
  core::train::TokenizerTrainOptions to;
  to.vocab_size = 300;
  const std::string tok_path = dir.str("tokenizer.json");
  std::ofstream(tok_path) << core::train::train_tokenizer({text}, to).dump();
  auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json");
  auto tokenizer = core::Tokenizer::load(tok_path);
  config.vocab_size = static_cast<int>(tokenizer->vocab_size());
  auto model = core::make_random_model(config, 1);
  model->tokenizer = tokenizer;
  const std::string path = dir.str("x.conllu");
  std::ofstream(path) << kConllu;
  auto sentences = analysis::read_conllu(path);
  auto freq = analysis::token_frequencies(*tokenizer, {text});
  analysis::HeadRoleOptions o;
  o.min_relation_count = 1;
  auto report = analysis::measure_head_roles(*model, sentences, freq, o);
  CHECK(report.sentences == 2);
  CHECK(report.queries >= 8);
  REQUIRE(report.heads.size() == 2 * 4);
  for (const auto& h : report.heads) {
    CHECK(h.positional_share >= 0.0);
    CHECK(h.positional_share <= 1.0);
    CHECK(h.rare_share <= 1.0);
    CHECK(h.special_share + h.positional_share >= 0.0);
  }
  CHECK_FALSE(report.relations.empty());
  // Voita's sentence filter: with no common tokens every sentence counts, and the filtered share is
  // the plain one; with every token common no sentence does.
  o.rare_common_tokens = 0;
  auto all = analysis::measure_head_roles(*model, sentences, freq, o);
  CHECK(all.uncommon_queries == all.queries);
  for (const auto& h : all.heads) CHECK(h.rare_share_uncommon == Approx(h.rare_share));
  o.rare_common_tokens = tokenizer->vocab_size();
  auto none = analysis::measure_head_roles(*model, sentences, freq, o);
  CHECK(none.uncommon_queries == 0);
  for (const auto& h : none.heads) CHECK(h.rare_share_uncommon == 0.0);
  auto j = report.to_json();
  CHECK(j["heads"].size() == 8);
  CHECK(report.summary().find("positional heads:") != std::string::npos);
}
