// How a long command is stopped from outside: Ctrl-C (SIGINT), and a job scheduler's or a closed
// terminal's stop (SIGTERM — Slurm's time limit, scancel, timeout, kill; SIGHUP) end it the same way.
// The flag is set, the command stops after the step under way and keeps what is complete (train a
// checkpoint, analyze and patch a partial report), instead of dying with everything since the last
// file lost.
#pragma once

#include <atomic>
#include <string>

namespace headlab::app {

// While one lives, SIGINT, SIGTERM and SIGHUP set `flag` (and nothing else); the handlers before it
// come back when it goes. One at a time.
class StopSignals {
 public:
  explicit StopSignals(std::atomic<bool>& flag);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The exit status of a command a signal stopped: 128 + its number (130 for Ctrl-C, 143 for
  // SIGTERM), 130 when none was caught.
  static int exit_code();
  // What stopped it, for messages: "Ctrl-C", "SIGTERM" or "SIGHUP" ("Ctrl-C" when none was caught).
  static std::string name();

 private:
  using Handler = void (*)(int);
  Handler previous_[3];
};

// For the whole process, from its start: a command without a graceful stop (run, generate,
// convert, compare …) that a stop signal ends removes the temporary files of the writes under way
// (core/tracked_temporaries.h) and then dies of the signal as before. A signal the process was
// started ignoring (a background job's SIGINT) stays ignored; a StopSignals takes over while it lives.
void remove_temporaries_on_stop_signals();

}  // namespace headlab::app
