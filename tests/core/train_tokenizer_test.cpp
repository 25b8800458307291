// The tokenizer trainer: byte-level BPE round-trips text exactly, WordPiece up to BERT's
// normalization; both load with core::Tokenizer.
#include "test_common.h"
#include "shared_data.h"

#include "core/atomic_file.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/framing.h"
#include "core/train/data.h"
#include "core/tokenizer/trainer.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

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
  for (const std::string& text : {std::string("The cat sat on the mat."), corpus().substr(0, 400),
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

TEST_CASE("WordPiece with whole words: frequent words are one token, every other word spelled in pieces",
          "[train][tokenizer]") {
  // Zipf-like words of 8 random letters a–h: word i appears about 3000 / (i + 1) times.
  std::vector<std::string> words;
  std::string text;
  std::mt19937 rng(11);
  for (int i = 0; i < 400; ++i) {
    std::string w;
    do {
      w.clear();
      for (int k = 0; k < 8; ++k) w += static_cast<char>('a' + rng() % 8);
    } while (std::find(words.begin(), words.end(), w) != words.end());
    words.push_back(w);
    for (int c = 0; c < 3000 / (i + 1); ++c) text += w + (c % 9 == 8 ? ".\n" : " ");
  }
  core::train::TokenizerTrainOptions o;
  o.kind = "wordpiece";
  o.vocab_size = 400;
  o.whole_words = 100;
  o.cls_sep = false;
  auto doc = core::train::train_tokenizer({text}, o);
  CHECK(doc["model"]["type"] == "WordPiece");
  auto tok = core::Tokenizer::from_json(doc.dump(), "trained-whole-words");
  CHECK(tok->vocab_size() == 400);
  // The 100 most frequent words are in the vocabulary whole, ranked by frequency right after the
  // specials and the alphabet (letters and their "##" forms, '.').
  const auto first = tok->token_to_id(words[0]);
  REQUIRE(first);
  for (int i = 0; i < 100; ++i) {
    INFO(words[i]);
    const auto id = tok->token_to_id(words[i]);
    REQUIRE(id);
    if (i < 50) CHECK(*id == *first + i);  // counts 3000/(i+1) differ there; ties would sort by spelling
    CHECK(tok->encode(words[i]).ids == std::vector<int64_t>{*id});
  }
  // Rarer words: pieces (never [UNK]), and they spell the word back.
  int split = 0;
  for (int i = 300; i < 400; ++i) {
    const auto e = tok->encode(words[i]);
    for (auto id : e.ids) CHECK(id != *tok->unk_id());
    split += e.ids.size() > 1;
    CHECK(tok->decode(e.ids) == words[i]);
  }
  CHECK(split > 50);
  // Plain WordPiece of the same size cannot afford the merges that build 100 such words whole.
  o.whole_words = 0;
  auto plain = core::Tokenizer::from_json(core::train::train_tokenizer({text}, o).dump(), "trained-plain");
  int whole_plain = 0;
  for (int i = 0; i < 100; ++i) whole_plain += plain->encode(words[i]).ids.size() == 1;
  CHECK(whole_plain < 100);
}

TEST_CASE("WordLevel training keeps the most frequent words whole", "[train][tokenizer]") {
  core::train::TokenizerTrainOptions o;
  o.kind = "wordlevel";
  o.vocab_size = 300;
  o.min_frequency = 1;
  // Zipf-like text: word i (letters only) appears about 2000 / (i + 1) times, in a shuffled order,
  // with commas and full stops between; some words capitalised.
  std::vector<std::string> tokens;
  for (int i = 0; i < 600; ++i) {
    std::string w = "k";
    for (int v = i; v > 0; v /= 26) w += static_cast<char>('a' + v % 26);
    for (int c = 0; c < 2000 / (i + 1); ++c) tokens.push_back(c % 3 == 0 ? "K" + w.substr(1) : w);
  }
  std::mt19937 rng(7);
  std::shuffle(tokens.begin(), tokens.end(), rng);
  std::string text;
  for (size_t i = 0; i < tokens.size(); ++i) text += tokens[i] + (i % 11 == 10 ? ". " : i % 7 == 6 ? ", " : " ");
  auto doc = core::train::train_tokenizer({text}, o);
  CHECK(doc["model"]["type"] == "WordLevel");
  auto tok = core::Tokenizer::from_json(doc.dump(), "trained-wordlevel");
  CHECK(tok->kind() == "wordlevel");
  CHECK(tok->id_to_token(1) == "[UNK]");
  REQUIRE(tok->mask_id());
  REQUIRE(tok->unk_id());
  // Independent count: lowercase words and punctuation marks, the way BertPreTokenizer splits them.
  std::map<std::string, int64_t> count;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) ++count[word];
    word.clear();
  };
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isspace(u)) flush();
    else if (u < 128 && std::ispunct(u)) { flush(); word = std::string(1, c); flush(); }
    else word += static_cast<char>(std::tolower(u));
  }
  flush();
  std::vector<std::pair<std::string, int64_t>> ranked(count.begin(), count.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  REQUIRE(ranked.size() > 300);
  // The 100 most frequent words are single tokens; of the rest, exactly those beyond the 295 that
  // fit become [UNK].
  for (size_t i = 0; i < 100; ++i) {
    INFO(ranked[i].first);
    auto e = tok->encode(ranked[i].first);
    REQUIRE(e.ids.size() == 1);
    CHECK(e.ids[0] != *tok->unk_id());
  }
  const int64_t kept = static_cast<int64_t>(doc["model"]["vocab"].size()) - 5;
  CHECK(kept == 295);
  int64_t unk = 0;
  for (const auto& [w, c] : ranked) unk += tok->encode(w).ids.at(0) == *tok->unk_id();
  CHECK(unk == static_cast<int64_t>(ranked.size()) - kept);
  // A sentence: [CLS] words [SEP], an unseen word is [UNK], decoding tidies punctuation.
  auto e = tok->encode("The zyzzyva sat.", true);
  REQUIRE(e.tokens.size() == 6);
  CHECK(e.tokens.front() == "[CLS]");
  CHECK(e.tokens[2] == "[UNK]");
  CHECK(e.tokens.back() == "[SEP]");
  std::vector<std::string> letters;
  for (const auto& [w, c] : ranked)
    if (std::isalpha(static_cast<unsigned char>(w[0]))) letters.push_back(w);
  const std::string known = letters[0] + " " + letters[1] + ", " + letters[2] + ".";
  CHECK(tok->decode(tok->encode(known).ids) == known);
  CHECK(core::train::train_tokenizer({text}, o) == doc);

  SECTION("without [CLS]/[SEP]: the same vocabulary, nothing added, MLM examples unwrapped") {
    auto bare_options = o;
    bare_options.cls_sep = false;
    auto bare_doc = core::train::train_tokenizer({text}, bare_options);
    CHECK(bare_doc["post_processor"].is_null());
    CHECK(bare_doc["model"] == doc["model"]);
    auto bare = core::Tokenizer::from_json(bare_doc.dump(), "trained-wordlevel-bare");
    CHECK(bare->encode("The zyzzyva sat.", true).ids == tok->encode("The zyzzyva sat.", false).ids);
    CHECK(bare->encode("The zyzzyva sat.", true).ids.size() == 4);
    auto framed = core::train::special_tokens(*tok), unframed = core::train::special_tokens(*bare);
    CHECK(framed.mlm_frame().framed());
    CHECK_FALSE(unframed.mlm_frame().framed());
    CHECK(core::sentence_frame(*tok).begin == tok->cls_id());
    CHECK(core::sentence_frame(*tok).end == tok->sep_id());
    CHECK_FALSE(core::sentence_frame(*bare).framed());
    CHECK(unframed.mask == framed.mask);
    CHECK(unframed.specials == framed.specials);  // [CLS]/[SEP] are still never masked or drawn
    const std::vector<std::vector<int64_t>> docs = {tok->encode(text.substr(0, 2000)).ids};
    auto wrapped = core::train::make_lm_dataset(docs, 16, core::train::Objective::Mlm, framed, 0.0);
    auto plain = core::train::make_lm_dataset(docs, 16, core::train::Objective::Mlm, unframed, 0.0);
    CHECK(wrapped.train.front().source.front() == *tok->cls_id());
    CHECK(wrapped.train.front().source.back() == *tok->sep_id());
    REQUIRE(plain.train.front().source.size() == 16);
    CHECK(std::vector<int64_t>(plain.train.front().source) == std::vector<int64_t>(docs[0].begin(), docs[0].begin() + 16));

    // A tokenizer that ends a sentence with [SEP] and starts it with nothing: its MLM examples are
    // framed the same way, though the vocabulary still has [CLS].
    auto eos_doc = doc;
    eos_doc["post_processor"]["single"] = nlohmann::json::array(
        {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}});
    auto eos = core::Tokenizer::from_json(eos_doc.dump(), "trained-wordlevel-eos");
    REQUIRE(eos->cls_id());
    CHECK_FALSE(core::sentence_frame(*eos).begin);
    CHECK(core::sentence_frame(*eos).end == eos->sep_id());
    auto ended = core::train::make_lm_dataset(docs, 16, core::train::Objective::Mlm, core::train::special_tokens(*eos), 0.0);
    REQUIRE(ended.train.front().source.size() == 16);
    CHECK(ended.train.front().source.back() == *eos->sep_id());
    CHECK(std::vector<int64_t>(ended.train.front().source.begin(), ended.train.front().source.end() - 1) ==
          std::vector<int64_t>(docs[0].begin(), docs[0].begin() + 15));
  }
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

TEST_CASE("the shipped default's tokenizer is regenerated byte-identical from its training text", "[.][shared]") {
  // The command tests/bench/train_rare_queries.sh runs (assets/README.md, "How the default gets its
  // roles"): WordPiece, 10,000 tokens, the 9,600 most frequent words whole, 400 characters, no
  // [CLS]/[SEP], lowercased, on the seven books, WikiText-2 valid and UD EWT train's sentences.
  const auto books = test::gutenberg_books();
  const auto shared = test::shared_data_dir();
  REQUIRE(books.size() == 7);
  test::TempDir dir("default_tokenizer");
  // UD EWT train as tests/bench/ud_sentences.py writes it: each "# text = " line, and a blank line
  // where a document starts.
  const std::string ewt = dir.str("en_ewt-ud-train.txt");
  {
    std::ifstream in(shared / "ud" / "en_ewt-ud-train.conllu");
    REQUIRE(in);
    std::ofstream out(ewt);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("# newdoc", 0) == 0) out << '\n';
      else if (line.rfind("# text = ", 0) == 0) out << line.substr(9) << '\n';
    }
  }
  const std::string wiki = (shared / "text" / "wikitext-2" / "valid.txt").string();
  std::vector<std::string> files = books;
  files.insert(files.end(), {wiki, ewt});
  core::train::TokenizerTrainOptions o;
  o.kind = "wordpiece";
  o.vocab_size = 10000;
  o.whole_words = 9600;
  o.limit_alphabet = 400;
  o.cls_sep = false;
  o.lowercase = true;
  const std::string regenerated = core::train::train_tokenizer_on_files(files, o).dump(2) + "\n";
  for (const char* model : {"default", "talking-heads"}) {
    INFO(model);
    const auto shipped = core::read_file_bytes(std::string(HEADLAB_SOURCE_DIR) + "/assets/models/" + model + "/tokenizer.json");
    CHECK(regenerated.size() == shipped.size());
    CHECK(regenerated == shipped);
  }
}
