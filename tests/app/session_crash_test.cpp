// A session save killed mid-write (SIGKILL, in a child process, at a known stage of the save)
// leaves the previous session file loadable: saves go through the atomic writer (core/atomic_file.h).
#include "test_common.h"

#include "writer_kill.h"

#include "app/document/session.h"

#include <filesystem>
#include <string>

using namespace headlab;

namespace {

// An embedded head report (~48 MB: the session is written in many chunks, so a writer killed after
// its first chunk has written only part of it).
std::string big_report(char fill) {
  return R"({"format":"headlab-head-report","heads":[],"padding":")" + std::string(48 << 20, fill) + R"("})";
}

}  // namespace

TEST_CASE("a session save killed mid-write leaves the previous session loadable", "[app][session]") {
  test::TempDir dir("session-kill");
  const std::string path = dir.str("work.json");
  app::SessionState previous;
  previous.text = "the previous session";
  previous.analysis.report_embedded = big_report('r');
  app::save_session_file(path, previous);
  const std::string previous_text = app::session_text(previous);

  // Killed with part of the new session in its temporary file, and with all of it there but not yet
  // renamed over the target: either way the target is the previous session, whole.
  for (const auto stage : {core::AtomicStage::Writing, core::AtomicStage::Written}) {
    DYNAMIC_SECTION((stage == core::AtomicStage::Writing ? "mid-write" : "written, before the rename")) {
      test::kill_writer_at(stage, [&] {
        app::SessionState next = previous;
        next.text = "a newer session";
        next.analysis.report_embedded = big_report('n');
        app::save_session_file(path, next);
      });
      const auto temps = test::temp_files_of(path);
      REQUIRE(temps.size() == 1);  // the dead writer's temporary file, left behind
      if (stage == core::AtomicStage::Writing)
        CHECK(std::filesystem::file_size(temps.front()) < previous_text.size());
      const auto loaded = app::load_session_file(path);
      CHECK(loaded.warnings.empty());
      CHECK(loaded.state.text == previous.text);
      CHECK(app::session_text(loaded.state) == previous_text);
      // The next save removes the dead writer's temporary file.
      app::save_session_file(path, previous);
      CHECK(test::temp_files_of(path).empty());
    }
  }
}
