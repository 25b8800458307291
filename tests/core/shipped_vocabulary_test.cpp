// The shipped models read today's English: whatever a user types tokenizes into known pieces. The
// [UNK] share of their tokens, counted here by comparing each id with the tokenizer's [UNK] id, stays
// at most 0.5% — on the bundled UD English-EWT sample in every run, and on all of UD EWT dev and
// WikiText-2 test (text kept out of training) when ../shared/data is there.
#include "test_common.h"
#include "shared_data.h"

#include "core/atomic_file.h"
#include "core/model/model.h"
#include "core/tokenizer/tokenizer.h"

#include <filesystem>
#include <sstream>

using namespace headlab;
namespace fs = std::filesystem;

namespace {

struct UnknownShare {
  int64_t tokens = 0, unknown = 0;
  double share() const { return tokens ? double(unknown) / double(tokens) : 1.0; }
};

// Each line of `text` through the tokenizer (CoNLL-U: its "# text = " lines only).
UnknownShare unknown_share(const core::Tokenizer& tok, const std::string& text, bool conllu) {
  UnknownShare s;
  const auto unk = tok.unk_id();
  REQUIRE(unk);
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (conllu) {
      if (line.rfind("# text = ", 0) != 0) continue;
      line = line.substr(9);
    }
    for (int64_t id : tok.encode(line).ids) {
      ++s.tokens;
      s.unknown += id == *unk;
    }
  }
  return s;
}

std::vector<std::string> shipped_models() {
  return {std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default",
          std::string(HEADLAB_SOURCE_DIR) + "/assets/models/talking-heads"};
}

}  // namespace

TEST_CASE("the shipped models spell the bundled UD sample with at most 0.5% unknown tokens", "[assets][vocabulary]") {
  const std::string sample = core::read_file_bytes(std::string(HEADLAB_SOURCE_DIR) + "/assets/data/en_ewt-dev-100.conllu");
  for (const auto& folder : shipped_models()) {
    INFO(folder);
    auto tok = core::load_folder_tokenizer(folder);
    REQUIRE(tok);
    const auto s = unknown_share(*tok, sample, true);
    INFO(s.unknown << " of " << s.tokens << " tokens are [UNK]");
    CHECK(s.tokens > 1000);
    CHECK(s.share() <= 0.005);
    // Words from outside any 19th-century novel are spelled, not [UNK].
    for (const char* word : {"smartphone", "absurdity", "blockchain", "COVID-19", "Zürich"}) {
      INFO(word);
      for (int64_t id : tok->encode(word).ids) CHECK(id != *tok->unk_id());
    }
  }
}

TEST_CASE("the shipped models read UD EWT dev and WikiText-2 test with at most 0.5% unknown tokens", "[.][shared]") {
  const fs::path data = test::shared_data_dir();
  const std::string ewt = core::read_file_bytes((data / "ud" / "en_ewt-ud-dev.conllu").string());
  const std::string wiki = core::read_file_bytes((data / "text" / "wikitext-2" / "test.txt").string());
  for (const auto& folder : shipped_models()) {
    INFO(folder);
    auto tok = core::load_folder_tokenizer(folder);
    REQUIRE(tok);
    const auto e = unknown_share(*tok, ewt, true), w = unknown_share(*tok, wiki, false);
    INFO("EWT dev: " << e.unknown << " of " << e.tokens << "; WikiText-2 test: " << w.unknown << " of " << w.tokens);
    CHECK(e.tokens > 25000);
    CHECK(w.tokens > 240000);
    CHECK(e.share() <= 0.005);
    CHECK(w.share() <= 0.005);
  }
}
