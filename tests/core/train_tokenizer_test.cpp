// The tokenizer trainer: byte-level BPE round-trips text exactly, WordPiece up to BERT's
// normalization; both load with core::Tokenizer.
#include "test_common.h"

#include "core/tokenizer.h"
#include "core/train/tokenizer_trainer.h"

using namespace headlab;

namespace {

std::string corpus() {
  std::string text;
  const char* lines[] = {
      "The cat sat on the mat. The dog sat on the log.\n",
      "It was the best of times, it was the worst of times;\n",
      "  indented line with   several spaces\tand a tab\n",
      "Émile's café served crème brûlée — naïve façade!\n",
      "Numbers: 12, 345, 6789 and 3.14159.\n",
      "\n",
      "Unicode: 東京 and emoji 🙂 and Ελληνικά.\n",
  };
  for (int i = 0; i < 40; ++i)
    for (const char* l : lines) text += l;
  return text;
}

}  // namespace

TEST_CASE("byte-level BPE training round-trips text exactly", "[train][tokenizer]") {
  core::train::TokenizerTrainOptions o;
  o.kind = "bpe";
  o.vocab_size = 420;
  auto doc = core::train::train_tokenizer({corpus()}, o);
  auto tok = core::Tokenizer::from_json(doc.dump(), "trained-bpe");
  CHECK(tok->kind() == "bpe");
  CHECK(tok->vocab_size() <= 420);
  CHECK(tok->vocab_size() > 300);
  CHECK(tok->mask_id().has_value());
  CHECK(tok->pad_id().has_value());
  for (const std::string text : {std::string("The cat sat on the mat."), corpus().substr(0, 400),
                                 std::string("  unseen   wörds, 日本語 \n\n\ttabs 🚀 and \r\n CRLF "), std::string("")}) {
    INFO(text);
    auto e = tok->encode(text);
    CHECK(tok->decode(e.ids) == text);
  }
  // Merges were learned: a frequent word is one token.
  CHECK(tok->encode(" the").ids.size() == 1);
  // Deterministic.
  CHECK(core::train::train_tokenizer({corpus()}, o) == doc);
}

TEST_CASE("WordPiece training gives a BERT tokenizer", "[train][tokenizer]") {
  core::train::TokenizerTrainOptions o;
  o.kind = "wordpiece";
  o.vocab_size = 400;
  auto doc = core::train::train_tokenizer({corpus()}, o);
  auto tok = core::Tokenizer::from_json(doc.dump(), "trained-wordpiece");
  CHECK(tok->kind() == "wordpiece");
  CHECK(tok->id_to_token(0) == "[PAD]");
  CHECK(tok->id_to_token(1) == "[UNK]");
  REQUIRE(tok->mask_id());
  CHECK(tok->id_to_token(*tok->mask_id()) == "[MASK]");
  auto e = tok->encode("The cat sat.", true);
  REQUIRE(e.ids.size() >= 3);
  CHECK(e.tokens.front() == "[CLS]");
  CHECK(e.tokens.back() == "[SEP]");
  // Round trip up to normalization (lowercase, accents stripped, punctuation split off).
  CHECK(tok->decode(tok->encode("The cat sat on the mat.").ids) == "the cat sat on the mat.");
  CHECK(tok->decode(tok->encode("Émile, café, naïve!").ids) == "emile, cafe, naive!");
  // Rare words split into continuation pieces, not [UNK].
  auto split = tok->encode("mattress");
  CHECK(split.ids.size() > 1);
  CHECK(split.tokens[1].rfind("##", 0) == 0);
  for (auto id : split.ids) CHECK(id != *tok->unk_id());
}

TEST_CASE("tokenizer training rejects bad options", "[train][tokenizer]") {
  core::train::TokenizerTrainOptions o;
  o.kind = "unigram";
  CHECK_THROWS_WITH(core::train::train_tokenizer({"x"}, o), Catch::Contains("wordpiece"));
  o.kind = "bpe";
  o.vocab_size = 10;
  CHECK_THROWS_WITH(core::train::train_tokenizer({"x"}, o), Catch::Contains("300"));
  CHECK_THROWS_WITH(core::train::train_tokenizer_on_files({"/nonexistent/file.txt"}, o), Catch::Contains("file.txt"));
}
