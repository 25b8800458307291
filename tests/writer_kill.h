// Kills a writer at a known point of an atomic save (core/atomic_file.h), without timing: the save
// runs in a child process whose AtomicFile probe reports the stage it reached through a pipe and
// then waits to be killed; the parent kills it with SIGKILL once the stage is reported. Header-only.
#pragma once

#include "test_common.h"  // torch before Catch2 (tests/include_order_test.sh)

#include "core/atomic_file.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace headlab::test {

namespace writer_kill_detail {

inline int report_fd = -1;
inline core::AtomicStage stop_at = core::AtomicStage::Writing;

inline void probe(core::AtomicStage stage, const std::string&) {
  if (stage != stop_at) return;
  const char byte = 1;
  (void)!::write(report_fd, &byte, 1);
  for (;;) ::pause();  // until SIGKILL
}

}  // namespace writer_kill_detail

// Runs `save` in a child process and kills it with SIGKILL when its save reaches `stage` of its
// first atomic file. Returns once the child is dead; fails the test (and kills the child) when the
// stage is not reached within a minute.
inline void kill_writer_at(core::AtomicStage stage, const std::function<void()>& save) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[0]);
    writer_kill_detail::report_fd = fds[1];
    writer_kill_detail::stop_at = stage;
    core::set_atomic_probe(&writer_kill_detail::probe);
    save();
    ::_exit(3);  // the save finished without reaching the stage
  }
  ::close(fds[1]);
  pollfd waiting{fds[0], POLLIN, 0};
  const int ready = ::poll(&waiting, 1, 60000);
  char byte = 0;
  const bool reached = ready == 1 && ::read(fds[0], &byte, 1) == 1;
  ::close(fds[0]);
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  INFO("the writer " << (WIFEXITED(status) ? "exited with " + std::to_string(WEXITSTATUS(status)) : "was killed"));
  REQUIRE(reached);  // it stopped at the stage and was killed there
  CHECK(WIFSIGNALED(status));
}

}  // namespace headlab::test
