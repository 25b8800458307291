// Every failure in a window task reaches the user as a message and the window keeps running: a
// script opens damaged model folders, sessions, reports and treebanks one after another under Xvfb;
// each refusal must come back as the expected message (expect_error), and at the end the window
// still opens the default model, runs a sentence and draws it.
#include "test_common.h"

#include "gui_test_kit.h"

#include "core/atomic_file.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using headlab::test::run_command;
using headlab::test::TempDir;
using headlab::test::have_xvfb;
namespace fs = std::filesystem;

namespace {

// A copy of the shipped default model with one file replaced or edited.
std::string damaged_copy(const TempDir& dir, const std::string& name,
                         const std::function<void(const fs::path&)>& damage) {
  const fs::path folder = dir.str(name);
  fs::create_directories(folder);
  for (const auto& entry : fs::directory_iterator(std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default"))
    if (entry.is_regular_file()) fs::copy_file(entry.path(), folder / entry.path().filename());
  damage(folder);
  return folder.string();
}

void cut_file(const fs::path& path, double keep) {
  const std::string bytes = headlab::core::read_file_bytes(path.string());
  headlab::core::write_file_atomic(path.string(), bytes.substr(0, size_t(double(bytes.size()) * keep)));
}

}  // namespace

TEST_CASE("damaged files opened in the window each give a message and the window keeps running", "[app][gui]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: the window's malformed-file test skipped");
  TempDir dir("gui_malformed");
  using nlohmann::json;
  const std::string cut_weights = damaged_copy(dir, "cut_weights", [](const fs::path& f) { cut_file(f / "model.safetensors", 0.5); });
  const std::string empty_weights = damaged_copy(dir, "empty_weights", [](const fs::path& f) { cut_file(f / "model.safetensors", 0); });
  const std::string bad_config = damaged_copy(dir, "bad_config", [](const fs::path& f) { cut_file(f / "config.json", 0.6); });
  const std::string many_layers = damaged_copy(dir, "many_layers", [](const fs::path& f) {
    auto j = json::parse(headlab::core::read_file_bytes((f / "config.json").string()));
    j["encoder"]["layers"] = 1000000;
    headlab::core::write_file_atomic((f / "config.json").string(), j.dump());
  });
  const std::string bad_tokenizer = damaged_copy(dir, "bad_tokenizer", [](const fs::path& f) { cut_file(f / "tokenizer.json", 0.3); });
  const std::string unknown_family = damaged_copy(dir, "unknown_family", [](const fs::path& f) {
    headlab::core::write_file_atomic((f / "config.json").string(), R"({"architectures": ["MysteryForCausalLM"]})");
  });
  // A session and a report cut in half, a treebank with a broken line, a folder that does not exist.
  headlab::core::write_file_atomic(dir.str("session.json"), R"({"format": "headlab-session", "version": 1, "model": ")");
  headlab::core::write_file_atomic(dir.str("head_report.json"), R"({"format": "headlab-head-report", "heads": [{"layer": )");
  headlab::core::write_file_atomic(dir.str("bad.conllu"), "# text = The cat.\n1\tThe\tthe\tDET\n2\tcat\n\n");

  json actions = json::array();
  auto step = [&](json action, const std::string& expected) {
    actions.push_back(std::move(action));
    actions.push_back({{"action", "expect_error"}, {"contains", expected}});
  };
  step({{"action", "open_model"}, {"folder", cut_weights}}, "model.safetensors");
  step({{"action", "open_model"}, {"folder", empty_weights}}, "0 bytes");
  step({{"action", "open_model"}, {"folder", bad_config}}, "config.json: not valid JSON");
  step({{"action", "open_model"}, {"folder", many_layers}}, "layers 1000000");
  step({{"action", "open_model"}, {"folder", bad_tokenizer}}, "tokenizer");
  step({{"action", "open_model"}, {"folder", unknown_family}}, "MysteryForCausalLM");
  step({{"action", "open_model"}, {"folder", dir.str("no-such-folder")}}, "no-such-folder");
  step({{"action", "open_session"}, {"path", dir.str("session.json")}}, "session.json");
  step({{"action", "open_report"}, {"path", dir.str("head_report.json")}}, "head_report.json");
  step({{"action", "run_dataset"}, {"files", {dir.str("bad.conllu")}}, {"metrics", {"confidence"}}}, "bad.conllu");
  step({{"action", "set_parse"}, {"file", dir.str("bad.conllu")}}, "bad.conllu");
  // Still alive: the shipped model opens and runs.
  actions.push_back({{"action", "open_model"}, {"folder", std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default"}});
  actions.push_back({{"action", "set_text"}, {"text", "the cat sat on the [MASK] ."}});
  actions.push_back({{"action", "screenshot"}, {"path", dir.str("alive.png")}});
  actions.push_back({{"action", "quit"}});
  headlab::core::write_file_atomic(dir.str("script.json"), json{{"actions", actions}}.dump(2));

  std::string out;
  const int rc = run_command("XDG_STATE_HOME=" + dir.str("state") + " xvfb-run -a -s '-screen 0 1280x800x24' " +
                                 HEADLAB_BINARY + " gui --script " + dir.str("script.json"),
                             out);
  INFO(out);
  CHECK(rc == 0);
  // Eleven refusals, each reported with its message.
  size_t reported = 0;
  for (size_t at = out.find("expected error: "); at != std::string::npos; at = out.find("expected error: ", at + 1))
    ++reported;
  CHECK(reported == 11);
  CHECK(fs::exists(dir.str("alive.png")));
  CHECK(fs::file_size(dir.str("alive.png")) > 20000);
}
