// assets/README.md's claim about the shipped default: on UD EWT dev, with the analyses' own measures and
// the frequency corpus the model folder carries (token_counts.json, its training text), at least two
// positional heads and three syntactic heads (no rare-word head: assets/README.md, "Shipped models"). Needs ../shared beside the checkout: tagged [shared], which
// ctest runs as its own test that reports "skipped" when the data is absent (tests/CMakeLists.txt).
#include "test_common.h"
#include "shared_data.h"

#include "analysis/analyze.h"
#include "core/model/model.h"

#include <filesystem>

using namespace headlab;

TEST_CASE("the shipped default has two positional heads and syntactic heads on UD EWT dev", "[.][shared]") {
  namespace fs = std::filesystem;
  const fs::path dev = test::shared_data_dir() / "ud" / "en_ewt-ud-dev.conllu";
  REQUIRE(fs::exists(dev));
  auto model = core::load_model(std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default");
  analysis::AnalyzeOptions o;
  o.data = {dev.string()};
  o.settings.metrics = {"confidence", "positional", "rare", "syntactic"};
  o.examples = 0;
  const auto r = analysis::analyze(*model, o).report;
  CHECK(r.settings.frequency_source == "model-folder");
  CHECK(r.sentences > 1900);  // of 2001: none is longer than the model's 512 positions
  int positional = 0, syntactic = 0;
  for (const auto& h : r.heads) {
    positional += h.positional;
    bool role = false;
    for (const auto& score : h.syntactic) role = role || score.is_role;
    syntactic += role;
  }
  INFO("positional heads " << positional << ", syntactic heads " << syntactic);
  CHECK(positional >= 2);
  CHECK(syntactic >= 3);
  // The heads assets/README.md names: L3 H2 at +1, L3 H7 at −1.
  CHECK(r.find(headlab::core::Stack::Encoder, 3, 2)->positional_offset == 1);
  CHECK(r.find(headlab::core::Stack::Encoder, 3, 2)->positional);
  CHECK(r.find(headlab::core::Stack::Encoder, 3, 7)->positional_offset == -1);
  CHECK(r.find(headlab::core::Stack::Encoder, 3, 7)->positional);
}
