#include "core/tracked_temporaries.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

namespace headlab::core {
namespace {

constexpr int kSlots = 64;
constexpr size_t kPathBytes = 4096;

// A slot is free (0), being filled or emptied by its writer (1), or holds a path (2). Only the
// handler reads a slot it does not own, and only in state 2.
struct Slot {
  std::atomic<int> state{0};
  char path[kPathBytes];
};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler reads the slots' states");

Slot g_slots[kSlots];

}  // namespace

void track_temporary(const std::string& path) noexcept {
  if (path.empty() || path.size() >= kPathBytes) return;
  for (Slot& slot : g_slots) {
    int free = 0;
    if (!slot.state.compare_exchange_strong(free, 1)) continue;
    std::memcpy(slot.path, path.c_str(), path.size() + 1);
    slot.state.store(2);
    return;
  }
}

void untrack_temporary(const std::string& path) noexcept {
  for (Slot& slot : g_slots) {
    // Only the writer that tracked a path untracks it: no other thread changes this slot meanwhile.
    if (slot.state.load() != 2 || std::strcmp(slot.path, path.c_str()) != 0) continue;
    slot.state.store(1);
    slot.state.store(0);
    return;
  }
}

void remove_tracked_temporaries() noexcept {
  for (Slot& slot : g_slots)
    if (slot.state.load() == 2) ::unlink(slot.path);
}

}  // namespace headlab::core
