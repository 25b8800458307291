// A session save killed mid-write (SIGKILL, in a child process) leaves the previous session file
// loadable: saves go through the atomic writer (core/atomic_file.h).
#include "test_common.h"

#include "app/document/session.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

using namespace headlab;

namespace {

// An embedded head report (~48 MB, so writing and syncing the session takes a while to interrupt).
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

  int killed_mid_write = 0;
  for (int attempt = 0; attempt < 3 && killed_mid_write == 0; ++attempt) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // Saves a different session over it forever, until it is killed.
      app::SessionState next = previous;
      for (int i = 0;; ++i) {
        next.text = "a newer session " + std::to_string(i);
        next.analysis.report_embedded = big_report(static_cast<char>('a' + i % 26));
        app::save_session_file(path, next);
      }
      _exit(0);
    }
    // Kill it as soon as its temporary file exists (a little later on later attempts).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (test::temp_files_of(path).empty() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt * 2));
    kill(child, SIGKILL);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    if (!test::temp_files_of(path).empty()) ++killed_mid_write;

    // Whenever it died, the file is a whole session: the previous one or a complete newer one.
    const auto loaded = app::load_session_file(path);
    CHECK(loaded.warnings.empty());
    const std::string& text = loaded.state.text;
    CHECK((text == previous.text || text.rfind("a newer session ", 0) == 0));
    CHECK(loaded.state.analysis.report_embedded.size() == previous.analysis.report_embedded.size());
    if (text == previous.text) CHECK(app::session_text(loaded.state) == previous_text);
  }
  CHECK(killed_mid_write > 0);  // the kill did land while a save was being written
}
