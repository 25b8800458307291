// The window asks before an export replaces a file: the "Replace file?" dialog of the window's
// export buttons, answered under Xvfb by a script pressing its buttons (answer_dialog). Cancel
// keeps the file, Replace writes the new figure, and answering with no dialog open is an error.
#include "test_common.h"

#include "core/atomic_file.h"

#include <nlohmann/json.hpp>

#include <filesystem>

using headlab::test::run_command;
using headlab::test::TempDir;
namespace fs = std::filesystem;

TEST_CASE("the window's Replace dialog: Cancel keeps the file, Replace writes it", "[app][gui]") {
  std::string out;
  SKIP_UNLESS(run_command("command -v xvfb-run", out) == 0, "xvfb-run not installed: the Replace dialog test skipped");
  TempDir dir("gui_replace");
  const std::string kept = dir.str("kept.svg"), replaced = dir.str("replaced.svg"), fresh = dir.str("fresh.svg");
  const std::string old_text = "<!-- the user's own file -->\n";
  headlab::core::write_file_atomic(kept, old_text);
  headlab::core::write_file_atomic(replaced, old_text);

  using nlohmann::json;
  const json actions = json::array({
      {{"action", "set_text"}, {"text", "the cat sat on the [MASK] ."}},
      {{"action", "answer_dialog"}, {"button", "Replace"}},  // nothing asked yet
      {{"action", "expect_error"}, {"contains", "no dialog is open"}},
      {{"action", "export"}, {"view", "attention_map"}, {"path", fresh}, {"ask", true}},  // new file: no question
      {{"action", "export"}, {"view", "attention_map"}, {"path", kept}, {"ask", true}},
      {{"action", "screenshot"}, {"path", dir.str("dialog.png")}},
      {{"action", "answer_dialog"}, {"button", "Cancel"}},
      {{"action", "export"}, {"view", "attention_map"}, {"path", replaced}, {"ask", true}},
      {{"action", "answer_dialog"}, {"button", "Maybe"}},
      {{"action", "expect_error"}, {"contains", "no button 'Maybe'"}},
      {{"action", "answer_dialog"}, {"button", "Replace"}},
      {{"action", "wait_frames"}, {"frames", 2}},
      {{"action", "quit"}},
  });
  headlab::core::write_file_atomic(dir.str("script.json"), json{{"actions", actions}}.dump(2));
  const int rc = run_command("XDG_STATE_HOME=" + dir.str("state") + " xvfb-run -a -s '-screen 0 1280x800x24' " +
                                 HEADLAB_BINARY + " gui --script " + dir.str("script.json"),
                             out);
  INFO(out);
  CHECK(rc == 0);
  CHECK(headlab::core::read_file_bytes(kept) == old_text);  // Cancel
  const std::string written = headlab::core::read_file_bytes(replaced);
  CHECK(written != old_text);  // Replace
  CHECK(written.find("<svg") != std::string::npos);
  CHECK(headlab::core::read_file_bytes(fresh).find("<svg") != std::string::npos);
  CHECK(fs::exists(dir.str("dialog.png")));
  CHECK(headlab::test::temp_files_of(replaced).empty());
}
