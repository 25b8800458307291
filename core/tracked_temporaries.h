// The temporary files of the atomic writes under way (core/atomic_file.h), kept where a signal
// handler can reach them: a command stopped by Ctrl-C, SIGTERM or SIGHUP without a graceful stop of
// its own removes them before it dies (app/cli/stop_signals.h), so no hidden `.NAME.tmp.*` of a
// multi-gigabyte dump stays beside its target. No torch here.
#pragma once

#include <string>

namespace headlab::core {

// An AtomicFile's temporary file is being written / is gone (renamed over its target, or removed).
// More than 64 at once, or a path of 4 KiB or more, goes untracked (a stray file at worst, as after
// SIGKILL).
void track_temporary(const std::string& path) noexcept;
void untrack_temporary(const std::string& path) noexcept;

// Removes every tracked temporary file. Async-signal-safe: fixed slots, lock-free flags, unlink(2).
void remove_tracked_temporaries() noexcept;

}  // namespace headlab::core
