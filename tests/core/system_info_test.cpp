// Batch threads follow the load: a core another process keeps busy is counted and left to it.
// keep_freed_memory(): a large freed block stays in the process for the next allocation instead of
// going back to the kernel (the page faults it saves made 512-token training ~6× slower).
#include "test_common.h"

#include "core/model/system_info.h"

#include <torch/torch.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace core = headlab::core;

#ifdef __GLIBC__  // the setting is glibc's (mallopt); elsewhere keep_freed_memory() returns false
TEST_CASE("keep_freed_memory keeps a freed 48 MiB block in the heap", "[core][system]") {
#ifdef HEADLAB_SANITIZE
  // AddressSanitizer replaces glibc's malloc: mallopt's settings and mallinfo2 do not apply.
  SKIP_UNLESS(false, "built with AddressSanitizer, whose allocator replaces glibc's");
#endif
  REQUIRE(core::keep_freed_memory());
  constexpr size_t kBytes = 48u << 20;  // above glibc's largest dynamic mmap threshold (32 MiB)
  const size_t mapped_before = mallinfo2().hblkhd;
  void* volatile block = std::malloc(kBytes);
  REQUIRE(block != nullptr);
  std::memset(block, 1, kBytes);
  // Served from the heap, not from a private mapping…
  CHECK(mallinfo2().hblkhd == mapped_before);
  std::free(block);
  // …and still there, free for reuse, after free().
  CHECK(mallinfo2().fordblks >= kBytes);
}
#endif

TEST_CASE("batch threads leave a core another process keeps busy", "[core][system]") {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  SKIP_UNLESS(cores >= 2, "one core: nothing to leave to another process");
  // A child that spins on one core; whatever else the machine runs, that core is busy.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    for (volatile unsigned long i = 0;; ++i) {
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int busy = core::busy_cores(std::chrono::milliseconds(300));
  core::use_batch_threads();
  const int threads = torch::get_num_threads();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  CHECK(busy >= 1);
  CHECK(threads >= 1);
  CHECK(threads <= cores - 1);
  // HEADLAB_THREADS overrides the measurement.
  setenv("HEADLAB_THREADS", "3", 1);
  core::use_batch_threads();
  CHECK(torch::get_num_threads() == 3);
  unsetenv("HEADLAB_THREADS");
}
