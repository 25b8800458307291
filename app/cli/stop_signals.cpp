#include "app/cli/stop_signals.h"

#include "core/tracked_temporaries.h"

#include <csignal>

namespace headlab::app {
namespace {

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

// Lock-free atomics: what a signal handler may touch.
std::atomic<std::atomic<bool>*> g_flag{nullptr};
std::atomic<int> g_caught{0};

extern "C" void on_stop_signal(int signal) {
  g_caught.store(signal);
  if (std::atomic<bool>* flag = g_flag.load()) flag->store(true);
}

extern "C" void on_fatal_stop_signal(int signal) {
  headlab::core::remove_tracked_temporaries();
  std::signal(signal, SIG_DFL);
  std::raise(signal);  // delivered as the handler returns: the process ends as the signal says
}

}  // namespace

void remove_temporaries_on_stop_signals() {
  for (const int signal : kSignals) {
    const auto previous = std::signal(signal, on_fatal_stop_signal);
    if (previous == SIG_IGN) std::signal(signal, SIG_IGN);  // started ignoring it: keep ignoring
  }
}

StopSignals::StopSignals(std::atomic<bool>& flag) {
  g_caught.store(0);
  g_flag.store(&flag);
  for (int i = 0; i < 3; ++i) previous_[i] = std::signal(kSignals[i], on_stop_signal);
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 3; ++i) std::signal(kSignals[i], previous_[i]);
  g_flag.store(nullptr);
}

int StopSignals::exit_code() {
  const int caught = g_caught.load();
  return 128 + (caught ? caught : SIGINT);
}

std::string StopSignals::name() {
  const int caught = g_caught.load();
  return caught == SIGTERM ? "SIGTERM" : caught == SIGHUP ? "SIGHUP" : "Ctrl-C";
}

}  // namespace headlab::app
