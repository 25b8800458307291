// Unit tests of the tokenizer pieces: alignment-tracking normalization, loading the older file
// formats, decoding, special tokens, errors and the `headlab tokenize` command.
#include "test_common.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/cli/cmd_tokenize.h"
#include "core/tokenizer/framing.h"
#include "core/tokenizer/token_lookup.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/normalized_text.h"
#include "core/tokenizer/normalizer.h"
#include "core/tokenizer/unicode.h"

using headlab::core::Encoding;
using headlab::core::Tokenizer;
namespace tok = headlab::core::tok;

namespace {

std::string data_dir() { return std::string(HEADLAB_SOURCE_DIR) + "/tests/data/tokenizers"; }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// The "text" of every record of an expected_*.jsonl file (each line once).
std::vector<std::string> conformance_lines(const std::string& name) {
  std::vector<std::string> lines;
  std::ifstream in(data_dir() + "/expected_" + name + ".jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto r = nlohmann::json::parse(line);
    if (!r["add_special_tokens"].get<bool>()) lines.push_back(r["text"].get<std::string>());
  }
  return lines;
}

std::shared_ptr<const Tokenizer> shared_tokenizer(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const Tokenizer>> cache;
  auto& t = cache[name];
  if (!t) t = Tokenizer::load(data_dir() + "/" + name);
  return t;
}

std::vector<std::pair<uint32_t, uint32_t>> spans(const tok::NormalizedText& t) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const auto& a : t.align) out.emplace_back(a.start, a.end);
  return out;
}

using Spans = std::vector<std::pair<uint32_t, uint32_t>>;

}  // namespace

TEST_CASE("utf-8 decoding repairs ill-formed input like from_utf8_lossy", "[tokenizer]") {
  CHECK(tok::utf8_to_u32("a\xC3\xA9") == std::u32string{U'a', 0xE9});
  CHECK(tok::utf8_to_u32("\xC3(") == std::u32string{0xFFFD, U'('});
  CHECK(tok::utf8_to_u32("\xF0\x9F\x98") == std::u32string{0xFFFD});  // truncated 4-byte sequence
  CHECK(tok::utf8_to_u32("\xED\xA0\x80") == std::u32string{0xFFFD, 0xFFFD, 0xFFFD});  // surrogate
  CHECK_FALSE(tok::is_valid_utf8("\xFF"));
  CHECK(tok::sanitize_utf8("x\xFFy") == "x\xEF\xBF\xBDy");
}

TEST_CASE("character classes follow HF's BERT definitions", "[tokenizer]") {
  CHECK(tok::is_bert_punctuation(U'$'));   // ASCII symbol counted as punctuation
  CHECK(tok::is_bert_punctuation(U'`'));
  CHECK(tok::is_bert_punctuation(0x00BF));  // ¿ (Po)
  CHECK_FALSE(tok::is_bert_punctuation(0x20AC));  // € is a symbol (Sc)
  CHECK(tok::is_bert_control(0x200B));      // zero width space (Cf) is removed
  CHECK(tok::is_bert_control(0x0085));      // NEL (Cc)
  CHECK_FALSE(tok::is_bert_control(U'\t'));
  CHECK(tok::is_whitespace(0x00A0));
  CHECK_FALSE(tok::is_whitespace(0x200B));
  CHECK(tok::is_chinese_char(0x4E2D));
  CHECK_FALSE(tok::is_chinese_char(0x3042));  // Hiragana is not padded
}

TEST_CASE("NFD keeps every decomposed code point aligned to its source char", "[tokenizer]") {
  auto t = tok::NormalizedText::from_original(U"\u00E9x", 0);
  t.nfd();
  CHECK(t.chars == std::u32string{U'e', 0x301, U'x'});
  CHECK(spans(t) == Spans{{0, 1}, {0, 1}, {1, 2}});
}

TEST_CASE("NFC aligns a composed char to its first source char as HF does", "[tokenizer]") {
  auto t = tok::NormalizedText::from_original(U"e\u0301x", 10);
  t.nfc();
  CHECK(t.chars == std::u32string{0xE9, U'x'});
  CHECK(spans(t) == Spans{{10, 11}, {12, 13}});
  // Canonical reordering before composition: a + acute (230) + grave-below (220) -> á + grave-below.
  auto r = tok::NormalizedText::from_original(U"a\u0301\u0316", 0);
  r.nfc();
  CHECK(r.chars == std::u32string{0xE1, 0x316});
}

TEST_CASE("lowercase of U+0130 gives two code points aligned to it", "[tokenizer]") {
  auto t = tok::NormalizedText::from_original(U"\u0130A", 0);
  t.lowercase();
  CHECK(t.chars == std::u32string{U'i', 0x307, U'a'});
  CHECK(spans(t) == Spans{{0, 1}, {0, 1}, {1, 2}});
}

TEST_CASE("BertNormalizer cleans text and pads CJK and strips accents and lowercases with alignments", "[tokenizer]") {
  tok::BertNormalizerOptions o;
  auto n = tok::make_bert_normalizer(o);
  const std::u32string input{U'A', 0, U'\t', U'B', 0x4E2D, 0xC9};  // a NUL inside: no literal
  auto t = tok::NormalizedText::from_original(input, 0);
  n->normalize(t);
  CHECK(t.chars == U"a b \u4E2D e");
  CHECK(spans(t) == Spans{{0, 1}, {2, 3}, {3, 4}, {4, 5}, {4, 5}, {4, 5}, {5, 6}});

  o.lowercase = false;
  o.strip_accents = false;  // cased BERT keeps accents
  o.handle_chinese_chars = false;
  auto cased = tok::make_bert_normalizer(o);
  auto c = tok::NormalizedText::from_original(U"\u00C9t\u00E9\u00A0X", 0);
  cased->normalize(c);
  CHECK(c.chars == U"\u00C9t\u00E9 X");
}

TEST_CASE("tokenizer basics: kind sizes and special ids", "[tokenizer]") {
  auto bert = shared_tokenizer("bert-base-uncased");
  CHECK(bert->kind() == "wordpiece");
  CHECK(bert->vocab_size() == 30522);
  CHECK(bert->mask_id() == 103);
  CHECK(bert->pad_id() == 0);
  CHECK(bert->unk_id() == 100);
  CHECK(bert->cls_id() == 101);
  CHECK(bert->sep_id() == 102);
  CHECK(bert->token_to_id("hello") == 7592);
  CHECK(bert->id_to_token(7592) == "hello");
  CHECK(bert->id_to_token(999999).empty());
  CHECK(bert->is_special(101));
  CHECK_FALSE(bert->is_special(7592));

  auto gpt2 = shared_tokenizer("gpt2");
  CHECK(gpt2->kind() == "bpe");
  CHECK(gpt2->vocab_size() == 50257);
  CHECK(gpt2->bos_id() == 50256);
  CHECK(gpt2->eos_id() == 50256);
  CHECK_FALSE(gpt2->mask_id());

  auto qwen = shared_tokenizer("qwen3");
  CHECK(qwen->vocab_size() == 151669);
  CHECK(qwen->eos_id() == 151645);  // <|im_end|> from tokenizer_config.json
  CHECK(qwen->pad_id() == 151643);
  CHECK_FALSE(qwen->bos_id());      // explicitly null in the config
  CHECK(qwen->added_tokens().size() == 26);
}

TEST_CASE("an id is shown as its token, or as #id past the tokenizer's vocabulary", "[tokenizer]") {
  auto qwen = shared_tokenizer("qwen3");
  // Qwen3's embedding has 151,936 rows for 151,669 tokens: a model can predict a row with no token.
  CHECK(headlab::core::token_name(qwen.get(), 151645) == "<|im_end|>");
  CHECK(headlab::core::token_name(qwen.get(), 151900) == "#151900");
  CHECK(headlab::core::token_name(nullptr, 7) == "#7");
}

TEST_CASE("Llama's and Gemma's tokenizer classes frame a text as their add_bos and add_eos flags say", "[tokenizer]") {
  // transformers rebuilds these classes' post-processor from the flags when it loads them
  // (LlamaTokenizerFast.update_post_processor); GPT-2's files stand in for a Llama vocabulary.
  headlab::test::TempDir dir("llama_flags");
  const std::string gpt2_json = read_all(data_dir() + "/gpt2/tokenizer.json");
  write_all(dir.str("tokenizer.json"), gpt2_json);
  auto framed = [&](const std::string& config) {
    write_all(dir.str("tokenizer_config.json"), config);
    return Tokenizer::load(dir.str())->encode("Hello world", true).ids;
  };
  const std::string names = R"("bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>")";
  using Ids = std::vector<int64_t>;
  CHECK(framed("{" + names + "}") == Ids{15496, 995});  // no class named: tokenizer.json's ByteLevel adds nothing
  CHECK(framed(R"({"tokenizer_class": "LlamaTokenizerFast", )" + names + "}") == Ids{50256, 15496, 995});
  CHECK(framed(R"({"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": false, "add_eos_token": true, )" + names + "}") ==
        Ids{15496, 995, 50256});
  CHECK(framed(R"({"tokenizer_class": "GemmaTokenizerFast", "add_eos_token": true, )" + names + "}") ==
        Ids{50256, 15496, 995, 50256});
  CHECK(framed(R"({"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": true, )" + names + "}") ==
        Ids{15496, 995});  // Llama 3's class keeps tokenizer.json's post-processor
  CHECK(Tokenizer::load(dir.str())->encode("Hello world", false).ids == Ids{15496, 995});
  write_all(dir.str("tokenizer_config.json"), R"({"tokenizer_class": "LlamaTokenizerFast", "bos_token": null})");
  CHECK_THROWS_WITH(Tokenizer::load(dir.str()), Catch::Matchers::Contains("adds a begin token, and none is named"));
}

TEST_CASE("an imported model reads a text as its tokenizer frames it, a HeadLab decoder the bare ids", "[tokenizer]") {
  auto gpt2 = shared_tokenizer("gpt2");
  using Ids = std::vector<int64_t>;
  headlab::core::ModelConfig c;
  c.kind = headlab::core::StackKind::Decoder;
  c.vocab_size = 50257;
  c.family = "gpt2";  // transformers' GPT-2 tokenizer(text) adds no begin token
  CHECK(headlab::core::model_encoding(c, *gpt2, "Hello world").ids == Ids{15496, 995});
  c.family = "native";
  CHECK(headlab::core::model_encoding(c, *gpt2, "Hello world").ids == Ids{15496, 995});
  auto bert = shared_tokenizer("bert-base-uncased");
  c.family = "llama";  // a template with a begin token: the one place it is added
  const std::string with_bos = R"({"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "<s>": 1, "a": 2}},
    "pre_tokenizer": {"type": "WhitespaceSplit"},
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
      {"Sequence": {"id": "A", "type_id": 0}}], "pair": [],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}})";
  auto llama_like = Tokenizer::from_json(with_bos);
  const Encoding e = headlab::core::model_encoding(c, *llama_like, "a a");
  CHECK(e.ids == Ids{1, 2, 2});
  CHECK(e.special == std::vector<bool>{true, false, false});
  c.family = "native";
  CHECK(headlab::core::model_encoding(c, *llama_like, "a a").ids == Ids{2, 2});
  c.kind = headlab::core::StackKind::Encoder;  // a masked LM reads [CLS] … [SEP], HeadLab's or not
  CHECK(headlab::core::model_encoding(c, *bert, "hello").ids == Ids{101, 7592, 102});
}

TEST_CASE("a text whose tokens the model has no embedding for is refused naming the token", "[tokenizer]") {
  // A folder whose tokenizer is not its weights': GPT-2's 50,257 tokens before a smaller embedding.
  auto gpt2 = shared_tokenizer("gpt2");
  headlab::core::ModelConfig c;
  c.kind = headlab::core::StackKind::Decoder;
  c.family = "gpt2";
  c.vocab_size = 990;  // ", world" is [11, 995]
  CHECK_THROWS_WITH(headlab::core::model_encoding(c, *gpt2, ", world"),
                    Catch::Matchers::Contains("token 1 ('·world') the id 995") &&
                        Catch::Matchers::Contains("outside the model's vocabulary of 990 ids") &&
                        Catch::Matchers::Contains("tokenizer (50257 tokens) does not match"));
  c.vocab_size = 996;  // every id below the vocabulary size: read as before
  CHECK(headlab::core::model_encoding(c, *gpt2, ", world").ids == std::vector<int64_t>{11, 995});
}

TEST_CASE("a token is labelled with the text it spells where its bytes are text", "[tokenizer]") {
  using headlab::core::readable_token;
  auto gpt2 = shared_tokenizer("gpt2");
  // GPT-2 spells the two bytes of "é" as two stand-ins ("Ã©"), a newline and a tab as one each.
  const Encoding e = gpt2->encode("He said wow at the caf\u00E9\nthen\tleft");
  std::string labels;
  for (const auto& t : e.tokens) labels += readable_token(t);
  CHECK(labels == "He\u00B7said\u00B7wow\u00B7at\u00B7the\u00B7caf\u00E9\u21B5then\u21E5left");
  // Its curly quotes come in pieces of a character ("Ġâ", "Ģľ"): each keeps its spelling.
  const Encoding quoted = gpt2->encode(" \u201Cwow\u201D");
  std::string pieces;
  for (const auto& t : quoted.tokens) pieces += readable_token(t);
  CHECK(pieces.find("\u201C") == std::string::npos);
  CHECK(pieces.rfind("\u00B7", 0) == 0);
  CHECK(readable_token("\u0120\u00E2\u0122\u013E") == "\u00B7\u201C");  // "ĠâĢľ"
  CHECK(readable_token("\u0120\u00E2\u0122\u013E", false) == "\u00B7\u00E2\u0122\u013E");
  // Half of an emoji's four bytes is no text: the spelling stays, with its space mark.
  CHECK(readable_token("\u0120\u00F0\u0141") == "\u00B7\u00F0\u0141");
  // WordPiece and SentencePiece spellings: "é" alone and "ć" (a control byte) are no byte-level text.
  CHECK(readable_token("\u00E9") == "\u00E9");
  CHECK(readable_token("\u0107") == "\u0107");
  CHECK(readable_token("##ing") == "##ing");
  CHECK(readable_token("\u2581the") == "\u00B7the");
  CHECK(readable_token("<0x0A>") == "<0x0A>");
}

TEST_CASE("BERT adds CLS and SEP with zero offsets when asked", "[tokenizer]") {
  auto bert = shared_tokenizer("bert-base-uncased");
  const Encoding plain = bert->encode("Hello [MASK]!");
  CHECK(plain.ids == std::vector<int64_t>{7592, 103, 999});
  CHECK(plain.special == std::vector<bool>{false, true, false});
  const Encoding e = bert->encode("Hello [MASK]!", true);
  CHECK(e.ids == std::vector<int64_t>{101, 7592, 103, 999, 102});
  CHECK(e.tokens.front() == "[CLS]");
  CHECK(e.offsets.front() == std::pair<int64_t, int64_t>{0, 0});
  CHECK(e.offsets.back() == std::pair<int64_t, int64_t>{0, 0});
  CHECK(e.offsets[2] == std::pair<int64_t, int64_t>{6, 12});
  CHECK(e.special == std::vector<bool>{true, false, true, false, true});
  CHECK(bert->decode(e.ids, true) == "hello!");
}

TEST_CASE("byte-level decode of encode gives the text back or its NFC form for Qwen3", "[tokenizer]") {
  auto gpt2 = shared_tokenizer("gpt2");
  auto qwen = shared_tokenizer("qwen3");
  size_t checked = 0;
  for (const std::string& line : conformance_lines("gpt2")) {
    CHECK(gpt2->decode(gpt2->encode(line).ids) == line);
    auto nfc = tok::NormalizedText::from_original(tok::utf8_to_u32(line), 0);
    nfc.nfc();
    CHECK(qwen->decode(qwen->encode(line).ids) == tok::u32_to_utf8(nfc.chars));
    ++checked;
  }
  CHECK(checked > 300);
  // A token covering part of a multi-byte char maps to the whole char.
  const Encoding e = gpt2->encode("\xF0\x9F\x98\x80!");  // 😀!
  REQUIRE(e.ids.size() == 3);
  CHECK(e.offsets[0] == std::pair<int64_t, int64_t>{0, 1});
  CHECK(e.offsets[1] == std::pair<int64_t, int64_t>{0, 1});
  CHECK(e.offsets[2] == std::pair<int64_t, int64_t>{1, 2});
  // Ill-formed input is read as U+FFFD and still round-trips to the repaired text.
  CHECK(gpt2->decode(gpt2->encode("a\xFFz").ids) == "a\xEF\xBF\xBDz");
}

TEST_CASE("WordPiece decode joins sub-words and applies HF's cleanup", "[tokenizer]") {
  auto bert = shared_tokenizer("bert-base-uncased");
  CHECK(bert->decode(bert->encode("Hello, world! How are you?").ids) == "hello, world! how are you?");
  CHECK(bert->decode(bert->encode("Tokenization works.").ids) == "tokenization works.");
  const Encoding e = bert->encode("Tokenization");
  CHECK(e.tokens == std::vector<std::string>{"token", "##ization"});
  CHECK(e.offsets == std::vector<std::pair<int64_t, int64_t>>{{0, 5}, {5, 12}});
  // A word longer than max_input_chars_per_word (100) is one [UNK] over the whole word.
  const Encoding long_word = bert->encode(std::string(101, 'a') + " b");
  CHECK(long_word.ids == std::vector<int64_t>{100, 1038});
  CHECK(long_word.offsets.front() == std::pair<int64_t, int64_t>{0, 101});
}

TEST_CASE("vocab.txt loads as the same WordPiece tokenizer", "[tokenizer]") {
  headlab::test::TempDir dir("tok-vocab-txt");
  const auto j = nlohmann::json::parse(read_all(data_dir() + "/bert-base-uncased/tokenizer.json"));
  std::vector<std::string> by_id(j["model"]["vocab"].size());
  for (const auto& [token, id] : j["model"]["vocab"].items()) by_id.at(id.get<size_t>()) = token;
  std::string text;
  for (const auto& t : by_id) text += t + "\n";
  write_all(dir.str("vocab.txt"), text);
  auto reference = shared_tokenizer("bert-base-uncased");
  for (const std::string& path : {dir.str(), dir.str("vocab.txt")}) {
    auto legacy = Tokenizer::load(path);
    CHECK(legacy->kind() == "wordpiece");
    CHECK(legacy->mask_id() == 103);
    size_t same = 0, total = 0;
    for (const std::string& line : conformance_lines("bert-base-uncased")) {
      for (bool add : {false, true}) {
        const Encoding a = legacy->encode(line, add), b = reference->encode(line, add);
        same += a.ids == b.ids && a.offsets == b.offsets;
        ++total;
      }
    }
    CHECK(same == total);
  }
}

TEST_CASE("vocab.json + merges.txt load as the same byte-level BPE tokenizer", "[tokenizer]") {
  headlab::test::TempDir dir("tok-vocab-merges");
  const auto j = nlohmann::json::parse(read_all(data_dir() + "/gpt2/tokenizer.json"));
  write_all(dir.str("vocab.json"), j["model"]["vocab"].dump());
  std::string merges = "#version: 0.2\n";
  for (const auto& m : j["model"]["merges"]) merges += m.get<std::string>() + "\n";
  write_all(dir.str("merges.txt"), merges);
  auto reference = shared_tokenizer("gpt2");
  for (const std::string& path : {dir.str(), dir.str("vocab.json"), dir.str("merges.txt")}) {
    auto legacy = Tokenizer::load(path);
    CHECK(legacy->kind() == "bpe");
    size_t same = 0, total = 0;
    for (const std::string& line : conformance_lines("gpt2")) {
      const Encoding a = legacy->encode(line), b = reference->encode(line);
      same += a.ids == b.ids && a.offsets == b.offsets;
      ++total;
    }
    CHECK(same == total);
  }
}

TEST_CASE("a tokenizer from in-memory JSON", "[tokenizer]") {
  // A tiny WordPiece vocabulary, built here rather than committed.
  nlohmann::json j = {
      {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                 {"max_input_chars_per_word", 8},
                 {"vocab", {{"[UNK]", 0}, {"un", 1}, {"##believ", 2}, {"##able", 3}, {"!", 4}}}}},
      {"normalizer", {{"type", "BertNormalizer"}, {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}}};
  auto t = Tokenizer::from_json(j.dump(), "tiny.json");
  const Encoding e = t->encode("UnBeliev! unbelievable");
  CHECK(e.ids == std::vector<int64_t>{1, 2, 4, 0});  // the 12-char word is over the limit of 8
  CHECK(e.offsets == std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 8}, {8, 9}, {10, 22}});
  CHECK(t->decode({1, 2, 3, 4}) == "unbelievable!");
}

TEST_CASE("malformed tokenizer files give errors naming the file", "[tokenizer]") {
  headlab::test::TempDir dir("tok-bad");
  auto message_of = [](const std::string& path) {
    try {
      Tokenizer::load(path);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  write_all(dir.str("broken.json"), "{\"model\": {\"type\": \"BPE\", ");
  std::string m = message_of(dir.str("broken.json"));
  CHECK(m.find(dir.str("broken.json")) != std::string::npos);
  CHECK(m.find("invalid JSON") != std::string::npos);

  write_all(dir.str("unigram.json"), R"({"model": {"type": "Unigram", "vocab": []}})");
  m = message_of(dir.str("unigram.json"));
  CHECK(m.find("unigram.json") != std::string::npos);
  CHECK(m.find("Unigram") != std::string::npos);

  write_all(dir.str("empty_vocab.json"), R"({"model": {"type": "BPE", "vocab": {}, "merges": []}})");
  m = message_of(dir.str("empty_vocab.json"));
  CHECK(m.find("empty_vocab.json") != std::string::npos);
  CHECK(m.find("model.vocab is empty") != std::string::npos);

  write_all(dir.str("bad_merge.json"),
            R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]},
                "pre_tokenizer": {"type": "ByteLevel"}})");
  m = message_of(dir.str("bad_merge.json"));
  CHECK(m.find("bad_merge.json") != std::string::npos);
  CHECK(m.find("'a b'") != std::string::npos);

  write_all(dir.str("regex.json"),
            R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}},
                "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"}})");
  m = message_of(dir.str("regex.json"));
  CHECK(m.find("regex.json") != std::string::npos);
  CHECK(m.find("(unclosed") != std::string::npos);

  // A broken tokenizer_config.json beside a good tokenizer.json is named, not silently ignored
  // (it decides the special tokens).
  std::filesystem::create_directories(dir.str("with_config"));
  write_all(dir.str("with_config/tokenizer.json"),
            R"({"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 1}}})");
  CHECK(message_of(dir.str("with_config")) == "no error");
  write_all(dir.str("with_config/tokenizer_config.json"), "{\"eos_token\": ");
  m = message_of(dir.str("with_config"));
  CHECK(m.find(dir.str("with_config/tokenizer_config.json")) != std::string::npos);
  CHECK(m.find("invalid JSON") != std::string::npos);
  write_all(dir.str("with_config/tokenizer_config.json"), "[1, 2]");
  CHECK(message_of(dir.str("with_config")).find("tokenizer_config.json: not a JSON object") != std::string::npos);

  CHECK(message_of(dir.str("missing")).find("does not exist") != std::string::npos);
  CHECK(message_of(dir.str()).find("holds no tokenizer.json") != std::string::npos);
}

TEST_CASE("a tokenizer_config.json with a wrong value is named by file and key", "[tokenizer]") {
  // Every format reads the special tokens from tokenizer_config.json; vocab.txt and vocab.json +
  // merges.txt also read its added_tokens_decoder and flags.
  headlab::test::TempDir dir("tok-config");
  std::filesystem::create_directories(dir.str("fast"));
  write_all(dir.str("fast/tokenizer.json"),
            R"({"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 1}}})");
  std::filesystem::create_directories(dir.str("vocab"));
  write_all(dir.str("vocab/vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\na\n");
  std::filesystem::create_directories(dir.str("bpe"));
  write_all(dir.str("bpe/vocab.json"), R"({"a": 0, "b": 1, "ab": 2})");
  write_all(dir.str("bpe/merges.txt"), "#version: 0.2\na b\n");
  auto message_of = [&](const std::string& folder, const std::string& config) {
    write_all(dir.str(folder + "/tokenizer_config.json"), config);
    try {
      Tokenizer::load(dir.str(folder));
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string file = "tokenizer_config.json: ";
  CHECK(message_of("vocab", R"({"added_tokens_decoder": {"abc": {"content": "<x>"}}})")
            .find(file + "added_tokens_decoder['abc']: the key must be a token id") != std::string::npos);
  CHECK(message_of("vocab", R"({"added_tokens_decoder": [{"content": "<x>"}]})")
            .find(file + "'added_tokens_decoder' must be an object of id -> token, not array") != std::string::npos);
  CHECK(message_of("vocab", R"({"added_tokens_decoder": {"5": {"special": true}}})")
            .find(file + "added_tokens_decoder['5']: must be an object with a \"content\" string") != std::string::npos);
  CHECK(message_of("vocab", R"({"added_tokens_decoder": {"5": {"content": "<x>", "special": "yes"}}})")
            .find(file + "added_tokens_decoder['5']: 'special' must be true or false") != std::string::npos);
  CHECK(message_of("bpe", R"({"add_prefix_space": "yes"})").find(file + "'add_prefix_space' must be true or false") !=
        std::string::npos);
  CHECK(message_of("fast", R"({"eos_token": {"content": 5}})").find(file + "'eos_token' must be a token") !=
        std::string::npos);
  CHECK(message_of("fast", R"({"mask_token": 7})").find(file + "'mask_token' must be a token") != std::string::npos);
  // The values real files hold load as before, and an added token's id comes from its key.
  CHECK(message_of("bpe", R"({"add_prefix_space": null, "eos_token": null})") == "no error");
  CHECK(message_of("vocab", R"({"strip_accents": null, "mask_token": {"content": "[MASK]", "__type": "AddedToken"},
                                "added_tokens_decoder": {"5": {"content": "[MASK]", "special": true}}})") == "no error");
  CHECK(Tokenizer::load(dir.str("vocab"))->mask_id() == 5);
}

TEST_CASE("encode is thread-safe and deterministic", "[tokenizer]") {
  auto qwen = shared_tokenizer("qwen3");
  const auto lines = conformance_lines("qwen3");
  std::vector<std::vector<int64_t>> expected;
  for (const auto& l : lines) expected.push_back(qwen->encode(l).ids);
  std::atomic<size_t> mismatches{0};
  auto work = [&](size_t offset) {
    for (size_t k = 0; k < lines.size(); ++k) {
      size_t i = (k + offset) % lines.size();
      if (qwen->encode(lines[i]).ids != expected[i]) ++mismatches;
    }
  };
  std::thread a(work, 0), b(work, lines.size() / 2);
  a.join();
  b.join();
  CHECK(mismatches == 0);
}

TEST_CASE("headlab tokenize writes one JSON object per input line", "[tokenizer][cli]") {
  std::istringstream in("\"Hello world\"\n\"\"\n\"caf\\u00e9 \\ud83d\\ude00\"\n");
  std::ostringstream out;
  CHECK(headlab::app::run_tokenize_command(data_dir() + "/gpt2", false, in, out) == 0);
  std::istringstream lines(out.str());
  std::string l1, l2, l3;
  std::getline(lines, l1);
  std::getline(lines, l2);
  std::getline(lines, l3);
  CHECK(l1 == R"({"ids":[15496,995],"tokens":["Hello","Ġworld"],"offsets":[[0,5],[5,11]]})");
  CHECK(l2 == R"({"ids":[],"tokens":[],"offsets":[]})");
  const auto r3 = nlohmann::json::parse(l3);
  CHECK(r3["offsets"].back() == nlohmann::json::array({5, 6}));  // code points, not UTF-16 units

  std::istringstream special("\"Hi\"\n");
  std::ostringstream special_out;
  CHECK(headlab::app::run_tokenize_command(data_dir() + "/bert-base-uncased", true, special, special_out) == 0);
  CHECK(nlohmann::json::parse(special_out.str())["ids"] == nlohmann::json::array({101, 7632, 102}));
}

TEST_CASE("headlab tokenize rejects a line that is not a JSON string", "[tokenizer][cli]") {
  std::istringstream in("\"ok\"\n{\"text\": 1}\n\"never read\"\n");
  std::ostringstream out;
  CHECK(headlab::app::run_tokenize_command(data_dir() + "/gpt2", false, in, out) == 2);
  const std::string written = out.str();
  CHECK(std::count(written.begin(), written.end(), '\n') == 1);  // the good line only

  // A blank line is named as one, not as "got: " and nothing.
  std::istringstream blank("\"ok\"\n\n");
  std::ostringstream blank_out, said;
  auto* before = std::cerr.rdbuf(said.rdbuf());
  const int code = headlab::app::run_tokenize_command(data_dir() + "/gpt2", false, blank, blank_out);
  std::cerr.rdbuf(before);
  CHECK(code == 2);
  CHECK_THAT(said.str(), Catch::Matchers::Contains("line 2 is blank"));

  std::istringstream none("\"x\"\n");
  std::ostringstream none_out;
  CHECK(headlab::app::run_tokenize_command(data_dir() + "/no-such-tokenizer", false, none, none_out) == 1);
}

// Found by fuzzing (fuzz_tokenizer_json): a vocabulary id far beyond the entries made the id table
// allocate tens of gigabytes. It is refused by name instead.
TEST_CASE("a tokenizer.json whose vocabulary ids are far beyond its entries is refused", "[tokenizer]") {
  const std::string doc = R"({"model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
    "vocab": {"[UNK]": 0, "the": 777777777}}, "normalizer": null, "pre_tokenizer": {"type": "BertPreTokenizer"}})";
  CHECK_THROWS_WITH(headlab::core::Tokenizer::from_json(doc, "hostile"), Catch::Contains("777777777"));
  // A gap that real files have (ids not quite dense) still loads.
  const std::string gap = R"({"model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
    "vocab": {"[UNK]": 0, "the": 5}}, "normalizer": null, "pre_tokenizer": {"type": "BertPreTokenizer"}})";
  CHECK(headlab::core::Tokenizer::from_json(gap, "gap")->encode("the").ids == std::vector<int64_t>{5});
}

TEST_CASE("SentencePiece tokenizers: kind, special ids and Llama-2's lossless round trip", "[tokenizer]") {
  auto unigram = shared_tokenizer("spm-unigram");
  CHECK(unigram->kind() == "unigram");
  REQUIRE(unigram->unk_id().has_value());
  CHECK(unigram->id_to_token(*unigram->unk_id()) == "<unk>");
  CHECK(unigram->eos_id() == unigram->token_to_id("</s>"));
  CHECK(unigram->pad_id() == unigram->token_to_id("<pad>"));
  // T5's template appends </s>.
  const Encoding plain = unigram->encode("Hello world"), framed = unigram->encode("Hello world", true);
  REQUIRE(framed.ids.size() == plain.ids.size() + 1);
  CHECK(framed.ids.back() == *unigram->token_to_id("</s>"));
  CHECK(framed.special.back());

  auto bpe = shared_tokenizer("spm-bpe");
  CHECK(bpe->kind() == "bpe");
  CHECK(bpe->bos_id() == bpe->token_to_id("<s>"));
  // Byte fallback covers every character and the decoder undoes the "▁" marking and the prepended
  // space, so decode(encode(text)) is the text itself.
  size_t checked = 0;
  for (const auto& line : conformance_lines("spm-bpe")) {
    const Encoding e = bpe->encode(line);
    CHECK(std::find(e.ids.begin(), e.ids.end(), *bpe->unk_id()) == e.ids.end());
    CHECK(bpe->decode(e.ids) == tok::sanitize_utf8(line));
    ++checked;
  }
  CHECK(checked > 300);
}

TEST_CASE("unsupported SentencePiece options give errors naming the file and the key", "[tokenizer]") {
  auto message_of = [](const nlohmann::json& j) {
    try {
      Tokenizer::from_json(j.dump(), "sp.json");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  using Array = nlohmann::json::array_t;  // a braced list of [string, x] pairs would read as an object
  const nlohmann::json unigram = {
      {"type", "Unigram"}, {"unk_id", 0}, {"vocab", Array{Array{"<unk>", 0.0}, Array{"\xe2\x96\x81" "a", -1.0}}}};
  auto with = [&](nlohmann::json model, const char* key, nlohmann::json value) {
    nlohmann::json j = {{"model", std::move(model)}};
    j[key] = std::move(value);
    return j;
  };
  auto has = [](const std::string& message, std::initializer_list<const char*> parts) {
    INFO(message);
    CHECK(message.rfind("sp.json: ", 0) == 0);
    for (const char* p : parts) CHECK(message.find(p) != std::string::npos);
  };
  CHECK(message_of({{"model", unigram}}) == "no error");

  nlohmann::json m = unigram;
  m["alpha"] = 0.1;
  has(message_of({{"model", m}}), {"model Unigram", "'alpha'"});
  m = unigram;
  m["unk_id"] = 5;
  has(message_of({{"model", m}}), {"Unigram", "unk_id 5"});
  m = unigram;
  m["vocab"] = Array{Array{"a", "high"}};
  has(message_of({{"model", m}}), {"vocab[0]", "[piece, score]"});

  const nlohmann::json bpe = {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", nlohmann::json::array()}, {"dropout", 0.1}};
  has(message_of({{"model", bpe}}), {"model BPE", "dropout"});

  has(message_of(with(unigram, "pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "sometimes"}})),
      {"pre_tokenizer Metaspace", "prepend_scheme", "'sometimes'"});
  has(message_of(with(unigram, "pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "_"}, {"add_prefix_space", false}})),
      {"pre_tokenizer Metaspace", "add_prefix_space", "'always'"});
  has(message_of(with(unigram, "pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "__"}})),
      {"pre_tokenizer Metaspace", "replacement"});
  has(message_of(with(unigram, "decoder", {{"type", "Metaspace"}, {"replacement", "_"}, {"legacy", true}})),
      {"decoder Metaspace", "'legacy'"});

  has(message_of(with(unigram, "normalizer", {{"type", "Replace"}, {"pattern", {{"Glob", "*"}}}, {"content", ""}})),
      {"normalizer Replace", "pattern"});
  has(message_of(with(unigram, "normalizer", {{"type", "Precompiled"}, {"precompiled_charsmap", "not base64!"}})),
      {"normalizer Precompiled", "base64"});
  has(message_of(with(unigram, "normalizer", {{"type", "Precompiled"}, {"precompiled_charsmap", "/////wAAAAA="}})),
      {"normalizer Precompiled", "trie size"});
  has(message_of(with(unigram, "normalizer", {{"type", "Precompiled"}, {"precompiled_charsmap", nullptr}})),
      {"normalizer Precompiled", "precompiled_charsmap"});

  has(message_of(with(unigram, "decoder", {{"type", "Strip"}, {"content", "ab"}, {"start", 1}, {"stop", 0}})),
      {"decoder Strip", "content"});
  has(message_of(with(unigram, "decoder", {{"type", "ByteFallback"}, {"strict", true}})), {"decoder ByteFallback", "'strict'"});
  has(message_of(with(unigram, "decoder", {{"type", "CTC"}})), {"unsupported decoder type 'CTC'"});
}

TEST_CASE("SentencePiece decoders on token sequences encoding cannot produce", "[tokenizer]") {
  // Pieces with inner "▁", malformed byte runs, '+' in a byte token and padded pieces: no encoding
  // of text yields these ids, so the conformance files cannot hold them. The expected strings were
  // produced by Hugging Face `tokenizers` (npm tokenizers@0.23.2) decoding the same ids with the
  // same tokenizer.json.
  using Array = nlohmann::json::array_t;
  Array vocab;
  for (const char* p : {"<unk>", "\xe2\x96\x81" "a" "\xe2\x96\x81" "b", "c\xe2\x96\x81", "<0xE6>", "<0x9D>", "<0xB1>", "<0xe6>",
                        "<0x9d>", "<0xb1>", "x", "<0x+9>", "  y  "})
    vocab.push_back(Array{p, vocab.empty() ? 0.0 : -1.0});
  auto decoder_with = [&](nlohmann::json decoder) {
    nlohmann::json j = {{"model", {{"type", "Unigram"}, {"unk_id", 0}, {"vocab", vocab}}}, {"decoder", std::move(decoder)}};
    return Tokenizer::from_json(j.dump(), "decoders.json");
  };
  const std::vector<std::vector<int64_t>> sequences = {{1, 1}, {2, 1}, {3, 4, 5, 9}, {3, 4, 9}, {6, 7, 8}, {10, 9}, {11, 11}, {9, 3}};
  auto decode_all = [&](const std::shared_ptr<const Tokenizer>& t) {
    std::vector<std::string> out;
    for (const auto& s : sequences) out.push_back(t->decode(s));
    return out;
  };
  const std::string rep = "\xe2\x96\x81", bad = "\xef\xbf\xbd";

  // The first token loses every replacement char, not only a leading one, unless nothing was
  // prepended.
  auto first = decoder_with({{"type", "Metaspace"}, {"replacement", rep}, {"prepend_scheme", "first"}, {"split", true}});
  CHECK(decode_all(first) == std::vector<std::string>{"ab a b", "c a b", "<0xE6><0x9D><0xB1>x", "<0xE6><0x9D>x",
                                                      "<0xe6><0x9d><0xb1>", "<0x+9>x", "  y    y  ", "x<0xE6>"});
  auto never = decoder_with({{"type", "Metaspace"}, {"replacement", rep}, {"prepend_scheme", "never"}, {"split", true}});
  CHECK(decode_all(never)[0] == " a b a b");
  CHECK(decode_all(never)[1] == "c  a b");

  // ByteFallback: a run that is not UTF-8 becomes one U+FFFD per byte; lowercase hex and Rust's
  // accepted '+' sign decode too. Strip then takes at most 1 leading and 2 trailing spaces per token.
  auto chain = decoder_with({{"type", "Sequence"},
                             {"decoders", Array{{{"type", "ByteFallback"}},
                                                {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 2}},
                                                {{"type", "Fuse"}}}}});
  CHECK(decode_all(chain) == std::vector<std::string>{rep + "a" + rep + "b" + rep + "a" + rep + "b", "c" + rep + rep + "a" + rep + "b",
                                                      "\xe6\x9d\xb1x", bad + bad + "x", "\xe6\x9d\xb1", "\tx", " y y", "x" + bad});
}
