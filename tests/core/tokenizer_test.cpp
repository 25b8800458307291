// Conformance of the tokenizers with Hugging Face `tokenizers` on real vocabulary files: the
// expected ids / tokens / offsets / decodes come from tests/data/tokenizers/generate_expected.js.
#include "test_common.h"

#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"

using headlab::core::Encoding;
using headlab::core::Tokenizer;

namespace {

std::string data_dir() { return std::string(HEADLAB_SOURCE_DIR) + "/tests/data/tokenizers"; }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A variant from variants.json: the base tokenizer.json with the same edits the generator made.
std::shared_ptr<const Tokenizer> load_variant(const std::string& name) {
  const auto variants = nlohmann::json::parse(read_all(data_dir() + "/variants.json"));
  const auto& spec = variants.at(name);
  auto j = nlohmann::json::parse(read_all(data_dir() + "/" + spec.at("base").get<std::string>() + "/tokenizer.json"));
  // Locals: iterating items() of a temporary returned by value() would dangle.
  const auto set = spec.value("set", nlohmann::json::object());
  const auto model_set = spec.value("model_set", nlohmann::json::object());
  const auto append = spec.value("added_tokens_append", nlohmann::json::array());
  const auto normalizer_prepend = spec.value("normalizer_prepend", nlohmann::json::array());
  const auto normalizer_append = spec.value("normalizer_append", nlohmann::json::array());
  for (const auto& [k, v] : set.items()) j[k] = v;
  for (const auto& [k, v] : model_set.items()) j["model"][k] = v;
  for (const auto& t : append) j["added_tokens"].push_back(t);
  if (!normalizer_prepend.empty() || !normalizer_append.empty()) {
    auto steps = nlohmann::json::array();
    for (const auto& n : normalizer_prepend) steps.push_back(n);
    if (!j["normalizer"].is_null()) steps.push_back(j["normalizer"]);
    for (const auto& n : normalizer_append) steps.push_back(n);
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", steps}};
  }
  return Tokenizer::from_json(j.dump(), name);
}

// Each tokenizer is loaded once per test run (Qwen3's 11 MB tokenizer.json takes a moment).
std::shared_ptr<const Tokenizer> tokenizer_for(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const Tokenizer>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  auto t = name.find("-variant") != std::string::npos ? load_variant(name) : Tokenizer::load(data_dir() + "/" + name);
  cache[name] = t;
  return t;
}

std::string show(const std::vector<int64_t>& v) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? " " : "") << v[i];
  return s.str();
}

std::string show(const std::vector<std::pair<int64_t, int64_t>>& v) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? " " : "") << "(" << v[i].first << "," << v[i].second << ")";
  return s.str();
}

struct Tally {
  size_t records = 0, ids = 0, tokens = 0, offsets = 0, decoded = 0, decoded_skip = 0;
  std::string first_mismatches;  // details of the first few, shown when a check fails
};

// Runs every expected record of one tokenizer; reports how many match and the first mismatches.
Tally run_conformance(const std::string& name) {
  auto tok = tokenizer_for(name);
  std::ifstream in(data_dir() + "/expected_" + name + ".jsonl");
  REQUIRE(in.good());
  Tally t;
  size_t shown = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto r = nlohmann::json::parse(line);
    const std::string text = r.at("text").get<std::string>();
    const bool add = r.at("add_special_tokens").get<bool>();
    const auto ids = r.at("ids").get<std::vector<int64_t>>();
    const auto tokens = r.at("tokens").get<std::vector<std::string>>();
    std::vector<std::pair<int64_t, int64_t>> offsets;
    for (const auto& o : r.at("offsets")) offsets.emplace_back(o[0].get<int64_t>(), o[1].get<int64_t>());
    const Encoding e = tok->encode(text, add);
    ++t.records;
    const bool ids_ok = e.ids == ids, tokens_ok = e.tokens == tokens, off_ok = e.offsets == offsets;
    const std::string decoded = tok->decode(ids, false), decoded_skip = tok->decode(ids, true);
    const bool dec_ok = decoded == r.at("decoded").get<std::string>();
    const bool skip_ok = decoded_skip == r.at("decoded_skip_special").get<std::string>();
    t.ids += ids_ok;
    t.tokens += tokens_ok;
    t.offsets += off_ok;
    t.decoded += dec_ok;
    t.decoded_skip += skip_ok;
    if (!(ids_ok && tokens_ok && off_ok && dec_ok && skip_ok) && shown++ < 4) {
      std::ostringstream m;
      m << "mismatch on " << nlohmann::json(text).dump() << " (special=" << add << ")\n"
        << "  expected ids " << show(ids) << "\n  got      ids " << show(e.ids) << "\n"
        << "  expected offsets " << show(offsets) << "\n  got      offsets " << show(e.offsets) << "\n"
        << "  expected decode " << r.at("decoded").dump() << " / " << r.at("decoded_skip_special").dump() << "\n"
        << "  got      decode " << nlohmann::json(decoded).dump() << " / " << nlohmann::json(decoded_skip).dump() << "\n";
      t.first_mismatches += m.str();
    }
  }
  WARN(name << ": " << t.records << " records; matching ids " << t.ids << ", tokens " << t.tokens << ", offsets "
            << t.offsets << ", decode " << t.decoded << ", decode(skip special) " << t.decoded_skip);
  return t;
}

void require_all(const Tally& t) {
  INFO(t.first_mismatches);
  CHECK(t.records > 300);
  CHECK(t.ids == t.records);
  CHECK(t.tokens == t.records);
  CHECK(t.offsets == t.records);
  CHECK(t.decoded == t.records);
  CHECK(t.decoded_skip == t.records);
}

}  // namespace

TEST_CASE("tokenizer conformance: gpt2 byte-level BPE", "[tokenizer][conformance]") {
  require_all(run_conformance("gpt2"));
}

TEST_CASE("tokenizer conformance: bert-base-uncased WordPiece", "[tokenizer][conformance]") {
  require_all(run_conformance("bert-base-uncased"));
}

TEST_CASE("tokenizer conformance: qwen3 byte-level BPE with NFC and a Split regex", "[tokenizer][conformance]") {
  require_all(run_conformance("qwen3"));
}

// Edited copies (variants.json) for the options the three real files leave unused.
TEST_CASE("tokenizer conformance: gpt2 variant with NFKC Lowercase prefix space trimming and added-token flags", "[tokenizer][conformance]") {
  require_all(run_conformance("gpt2-variant"));
}

TEST_CASE("tokenizer conformance: bert variant cased with BertProcessing and other pre-tokenizers", "[tokenizer][conformance]") {
  require_all(run_conformance("bert-variant"));
}

TEST_CASE("tokenizer conformance: qwen3 variant with ignore_merges and a BOS template", "[tokenizer][conformance]") {
  require_all(run_conformance("qwen3-variant"));
}

TEST_CASE("tokenizer conformance: WordLevel over BERT's vocabulary", "[tokenizer][conformance]") {
  require_all(run_conformance("wordlevel-variant"));
}

// The layouts of families whose real files are too large to ship, over GPT-2's vocabulary.
TEST_CASE("tokenizer conformance: GPT-NeoX-20B's layout (NFC, trimming ByteLevel post-processor, whitespace-run added tokens)", "[tokenizer][conformance]") {
  require_all(run_conformance("neox-variant"));
}

TEST_CASE("tokenizer conformance: ModernBERT's layout (NeoX-style byte-level BPE, a CLS / SEP template, MASK with lstrip)", "[tokenizer][conformance]") {
  require_all(run_conformance("modernbert-variant"));
}

// Falcon splits after ByteLevel (Digits and Split see the byte-mapped chars: "¹" of a mapped 0xB9
// byte is a digit); BLOOM's Split regex nests a character class in another, as Oniguruma allows.
TEST_CASE("tokenizer conformance: Falcon's layout (Punctuation, ByteLevel, then Digits and a Split of three digits)", "[tokenizer][conformance]") {
  require_all(run_conformance("falcon-variant"));
}

TEST_CASE("tokenizer conformance: BLOOM's layout (a Split regex with a nested character class, then ByteLevel)", "[tokenizer][conformance]") {
  require_all(run_conformance("bloom-variant"));
}

// SentencePiece models (trained on the Gutenberg sample, see SOURCES.md) in the layouts Hugging
// Face's converters write for T5 / Marian (Unigram, Precompiled charsmap, Metaspace) and
// Llama-2 / Gemma (byte-fallback BPE).
TEST_CASE("tokenizer conformance: SentencePiece Unigram in T5's layout with a Precompiled charsmap", "[tokenizer][conformance]") {
  require_all(run_conformance("spm-unigram"));
}

TEST_CASE("tokenizer conformance: Unigram with byte fallback, Strip and Replace, Metaspace prepend_scheme first", "[tokenizer][conformance]") {
  require_all(run_conformance("spm-unigram-variant"));
}

TEST_CASE("tokenizer conformance: Unigram with Metaspace prepend_scheme never, unsplit, and a Strip decoder", "[tokenizer][conformance]") {
  require_all(run_conformance("spm-unigram-never-variant"));
}

TEST_CASE("tokenizer conformance: Unigram in DeBERTa-v3's layout (Strip, Precompiled, Replace, a CLS / SEP template)", "[tokenizer][conformance]") {
  require_all(run_conformance("deberta-v3-variant"));
}

TEST_CASE("tokenizer conformance: a real Llama-2-layout file (Mistral-7B's vocabulary, byte fallback)", "[tokenizer][conformance]") {
  require_all(run_conformance("lenml-llama2"));
}

TEST_CASE("tokenizer conformance: byte-fallback BPE in Llama-2's layout", "[tokenizer][conformance]") {
  require_all(run_conformance("spm-bpe"));
}

TEST_CASE("tokenizer conformance: byte-fallback BPE behind a Metaspace pre-tokenizer (prepend_scheme first)", "[tokenizer][conformance]") {
  require_all(run_conformance("spm-bpe-variant"));
}

TEST_CASE("tokenizer conformance: BPE in Gemma's layout with fused unknowns instead of byte fallback", "[tokenizer][conformance]") {
  require_all(run_conformance("spm-bpe-gemma-variant"));
}
