// Conformance of the tokenizers with Hugging Face `tokenizers` on real vocabulary files: the
// expected ids / tokens / offsets / decodes come from tests/data/tokenizers/generate_expected.js.
#include "test_common.h"

#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/tokenizer.h"

using headlab::core::Encoding;
using headlab::core::Tokenizer;

namespace {

std::string data_dir() { return std::string(HEADLAB_SOURCE_DIR) + "/tests/data/tokenizers"; }

// Each tokenizer is loaded once per test run (Qwen3's 11 MB tokenizer.json takes a moment).
std::shared_ptr<const Tokenizer> tokenizer_for(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const Tokenizer>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  auto t = Tokenizer::load(data_dir() + "/" + name);
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
    const bool ids_ok = e.ids == ids, off_ok = e.offsets == offsets;
    t.ids += ids_ok;
    t.tokens += e.tokens == tokens;
    t.offsets += off_ok;
    t.decoded += tok->decode(ids, false) == r.at("decoded").get<std::string>();
    t.decoded_skip += tok->decode(ids, true) == r.at("decoded_skip_special").get<std::string>();
    if ((!ids_ok || !off_ok) && shown++ < 5) {
      UNSCOPED_INFO(name << " mismatch on " << nlohmann::json(text).dump() << " (special=" << add << ")\n"
                         << "  expected ids " << show(ids) << "\n  got      ids " << show(e.ids) << "\n"
                         << "  expected offsets " << show(offsets) << "\n  got      offsets " << show(e.offsets));
    }
  }
  WARN(name << ": " << t.records << " records; matching ids " << t.ids << ", tokens " << t.tokens << ", offsets "
            << t.offsets << ", decode " << t.decoded << ", decode(skip special) " << t.decoded_skip);
  return t;
}

void require_all(const Tally& t) {
  CHECK(t.records > 300);
  CHECK(t.ids == t.records);
  CHECK(t.tokens == t.records);
  CHECK(t.offsets == t.records);
  CHECK(t.decoded == t.records);
  CHECK(t.decoded_skip == t.records);
}

}  // namespace

TEST_CASE("tokenizer conformance: gpt2 (byte-level BPE, tokenizer.json)", "[tokenizer][conformance]") {
  require_all(run_conformance("gpt2"));
}

TEST_CASE("tokenizer conformance: bert-base-uncased (WordPiece, tokenizer.json)", "[tokenizer][conformance]") {
  require_all(run_conformance("bert-base-uncased"));
}

TEST_CASE("tokenizer conformance: qwen3 (byte-level BPE, NFC + Split regex)", "[tokenizer][conformance]") {
  require_all(run_conformance("qwen3"));
}
