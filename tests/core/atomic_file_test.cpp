// The atomic writer: what it writes round-trips; a failure names the file and the reason and keeps
// the previous file; a writer killed mid-write (SIGKILL, in a child process) leaves the previous
// file byte-identical and at most a stray temporary file.
#include "test_common.h"

#include "writer_kill.h"

#include "app/cli/stop_signals.h"
#include "core/atomic_file.h"

#include <linux/capability.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace headlab;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// Runs `work` on a thread of its own without the capabilities that let a privileged user (root, in
// a container or CI) write where permissions say no: CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, dropped
// from that thread's effective set (Linux keeps capabilities per thread). False when they could not
// be dropped.
bool run_without_permission_override(const std::function<void()>& work) {
  bool dropped = false;
  std::thread t([&] {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (::syscall(SYS_capget, &header, data) != 0) return;
    for (const int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH}) data[cap / 32].effective &= ~(1u << (cap % 32));
    if (::syscall(SYS_capset, &header, data) != 0) return;
    dropped = true;
    work();
  });
  t.join();
  return dropped;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// Bytes that differ from position to position, so a torn or shifted write cannot pass for the original.
std::string pattern(size_t size, unsigned seed) {
  std::string s(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

}  // namespace

TEST_CASE("atomic writer: bytes and streams round-trip, the target is replaced whole", "[atomic_file]") {
  test::TempDir dir("atomic-roundtrip");
  const std::string path = dir.str("data.bin");
  const std::string first = pattern(100000, 1);
  core::write_file_atomic(path, first);
  CHECK(core::read_file_bytes(path) == first);

  // A stream writer replaces it; write() and stream() bytes keep their order.
  core::write_file_atomic(path, [](std::ostream& out) {
    out << "header\n";
    for (int i = 0; i < 3; ++i) out << "line " << i << "\n";
  });
  CHECK(core::read_file_bytes(path) == "header\nline 0\nline 1\nline 2\n");
  {
    core::AtomicFile file(path);
    file.stream() << "a";
    file.write("b", 1);
    file.stream() << "c";
    CHECK(core::read_file_bytes(path) == "header\nline 0\nline 1\nline 2\n");  // untouched until commit
    file.commit();
  }
  CHECK(core::read_file_bytes(path) == "abc");
  CHECK(entries(dir.str()) == std::vector<std::string>{"data.bin"});

  // An empty file is a file; a replaced file keeps its permissions.
  ::chmod(path.c_str(), 0640);
  core::write_file_atomic(path, std::string());
  CHECK(core::read_file_bytes(path).empty());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);

  core::copy_file_atomic(path, dir.str("copy.bin"));
  core::write_file_atomic(path, first);
  core::copy_file_atomic(path, dir.str("copy.bin"));
  CHECK(core::read_file_bytes(dir.str("copy.bin")) == first);
  CHECK(entries(dir.str()) == std::vector<std::string>{"copy.bin", "data.bin"});
}

TEST_CASE("atomic writer: the temporary file sits beside the target under a unique hidden name", "[atomic_file]") {
  test::TempDir dir("atomic-names");
  const std::string path = dir.str("report.json");
  core::AtomicFile a(path), b(path);
  CHECK(fs::path(a.temp_path()).parent_path() == fs::path(path).parent_path());
  CHECK(fs::path(a.temp_path()).filename().string().rfind(".report.json.tmp." + std::to_string(::getpid()) + ".", 0) == 0);
  CHECK(a.temp_path() != b.temp_path());
  CHECK(test::temp_files_of(path).size() == 2);
  CHECK_FALSE(fs::exists(path));
  // Neither is committed: both temporary files go, and no target appears.
}

TEST_CASE("atomic writer: a missing folder fails naming the file and the reason", "[atomic_file]") {
  test::TempDir dir("atomic-missing");
  const std::string path = dir.str("no/such/folder/x.json");
  const std::string message = error_of([&] { core::write_file_atomic(path, "{}"); });
  CHECK_THAT(message, Contains(path) && Contains(std::strerror(ENOENT)));
  CHECK(entries(dir.str()).empty());

  // A parent that is a file, not a folder.
  core::write_file_atomic(dir.str("plain"), "x");
  const std::string under_file = dir.str("plain/x.json");
  CHECK_THAT(error_of([&] { core::write_file_atomic(under_file, "{}"); }),
             Contains(under_file) && Contains(std::strerror(ENOTDIR)));
  CHECK(entries(dir.str()) == std::vector<std::string>{"plain"});

  // Reading: the same form.
  CHECK_THAT(error_of([&] { core::read_file_bytes(dir.str("absent")); }),
             Contains(dir.str("absent")) && Contains(std::strerror(ENOENT)));
}

TEST_CASE("atomic writer: a read-only folder fails naming the file and the reason, the old file stays", "[atomic_file]") {
  test::TempDir dir("atomic-readonly");
  const std::string folder = dir.str("ro");
  fs::create_directories(folder);
  const std::string path = folder + "/keep.txt";
  core::write_file_atomic(path, "previous");
  REQUIRE(::chmod(folder.c_str(), 0555) == 0);
  std::string message;
  auto write = [&] { message = error_of([&] { core::write_file_atomic(path, "new"); }); };
  if (::access(folder.c_str(), W_OK) == 0) {
    // Privileges that ignore folder permissions (root): the write runs without them.
    const bool dropped = run_without_permission_override(write);
    if (!dropped) ::chmod(folder.c_str(), 0755);
    SKIP_UNLESS(dropped, "root's permission override could not be dropped (capset refused): the read-only case "
                         "needs an unprivileged user");
  } else {
    write();
  }
  ::chmod(folder.c_str(), 0755);
  CHECK_THAT(message, Contains(path) && Contains(std::strerror(EACCES)));
  CHECK(core::read_file_bytes(path) == "previous");
  CHECK(entries(folder) == std::vector<std::string>{"keep.txt"});
}

TEST_CASE("atomic writer: a write that fails midway keeps the old file and removes the temporary one", "[atomic_file]") {
  test::TempDir dir("atomic-fsize");
  const std::string path = dir.str("big.bin");
  const std::string before = pattern(1000, 7);
  core::write_file_atomic(path, before);

  // RLIMIT_FSIZE makes write(2) fail with EFBIG partway, even for root. No Catch assertion runs
  // while the limit is in force.
  struct rlimit saved {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limited = saved;
  limited.rlim_cur = 64 * 1024;
  const bool limit_set = ::setrlimit(RLIMIT_FSIZE, &limited) == 0;
  std::string whole, streamed;
  if (limit_set) {
    whole = error_of([&] { core::write_file_atomic(path, pattern(1 << 20, 8)); });
    streamed = error_of([&] {
      core::write_file_atomic(path, [](std::ostream& out) {
        const std::string chunk = pattern(4096, 9);
        for (int i = 0; i < 256; ++i) out << chunk;
      });
    });
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);

  REQUIRE(limit_set);
  for (const auto& message : {whole, streamed}) {
    INFO(message);
    CHECK_THAT(message, Contains(path + ": write failed: ") && Contains(std::strerror(EFBIG)));
  }
  CHECK(core::read_file_bytes(path) == before);
  CHECK(entries(dir.str()) == std::vector<std::string>{"big.bin"});
}

TEST_CASE("atomic writer: an exception from the stream writer leaves the old file", "[atomic_file]") {
  test::TempDir dir("atomic-throw");
  const std::string path = dir.str("session.json");
  core::write_file_atomic(path, "old");
  CHECK_THROWS_WITH(core::write_file_atomic(path,
                                            [](std::ostream& out) {
                                              out << std::string(200000, 'x');
                                              throw std::runtime_error("the writer gave up");
                                            }),
                    "the writer gave up");
  CHECK(core::read_file_bytes(path) == "old");
  CHECK(entries(dir.str()) == std::vector<std::string>{"session.json"});
  // A target that is a non-empty folder: the rename fails, named as such, and nothing is left behind.
  fs::create_directories(dir.str("folder/inside"));
  CHECK_THAT(error_of([&] { core::write_file_atomic(dir.str("folder"), "x"); }),
             Contains(dir.str("folder") + ": cannot replace it"));
  CHECK(entries(dir.str()) == std::vector<std::string>{"folder", "session.json"});
}

TEST_CASE("atomic writer: a child killed with SIGKILL mid-write leaves the old file byte-identical", "[atomic_file]") {
  test::TempDir dir("atomic-kill");
  const std::string path = dir.str("model.bin");
  const std::string before = pattern(3 << 20, 11);
  core::write_file_atomic(path, before);

  // Killed once the first megabyte of a new 3 MiB save is in its temporary file (core/atomic_file.h's
  // probe; tests/writer_kill.h), then killed again with every byte written but before the rename.
  const std::string next = pattern(3 << 20, 12);
  test::kill_writer_at(core::AtomicStage::Writing, [&] { core::write_file_atomic(path, next); });
  auto temps = test::temp_files_of(path);
  REQUIRE(temps.size() == 1);  // the dead writer's temporary file, part-written
  CHECK(fs::file_size(temps[0]) > 0);
  CHECK(fs::file_size(temps[0]) < next.size());
  CHECK(core::read_file_bytes(path) == before);
  fs::remove(temps[0]);
  test::kill_writer_at(core::AtomicStage::Written, [&] { core::write_file_atomic(path, next); });
  temps = test::temp_files_of(path);
  REQUIRE(temps.size() == 1);
  CHECK(fs::file_size(temps[0]) == next.size());  // whole, but never renamed

  // The target is exactly the previous file; the only other entry is the dead writer's temp file.
  CHECK(core::read_file_bytes(path) == before);
  const auto left = entries(dir.str());
  REQUIRE(left.size() == 2);
  CHECK(left[1] == "model.bin");
  CHECK(left[0] == fs::path(temps[0]).filename().string());
  // The next save of the file clears the dead writer's leftover.
  const std::string after = pattern(1000, 13);
  core::write_file_atomic(path, after);
  CHECK(core::read_file_bytes(path) == after);
  CHECK(entries(dir.str()) == std::vector<std::string>{"model.bin"});
}

namespace {

// A writer that stops itself with a signal once its first bytes are in the temporary file.
int g_stop_with = 0;
void stop_while_writing(core::AtomicStage stage, const std::string&) {
  if (stage == core::AtomicStage::Writing) ::raise(g_stop_with);
}

// Forks a writer of `bytes` to `path` that signals itself mid-write; returns its wait status.
int writer_stopped_by(int signal, bool ignoring, const std::string& path, const std::string& bytes) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (ignoring) std::signal(signal, SIG_IGN);  // as a background job starts with SIGINT
    app::remove_temporaries_on_stop_signals();
    g_stop_with = signal;
    core::set_atomic_probe(&stop_while_writing);
    core::write_file_atomic(path, bytes);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("atomic writer: a command stopped by Ctrl-C or SIGTERM mid-write leaves no temporary file", "[atomic_file]") {
  test::TempDir dir("atomic-stop-signal");
  const std::string path = dir.str("dump.safetensors");
  const std::string before = pattern(1000, 21), next = pattern(3 << 20, 22);
  core::write_file_atomic(path, before);
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
    INFO("signal " << signal);
    const int status = writer_stopped_by(signal, false, path, next);
    CHECK(WIFSIGNALED(status));  // it still dies of the signal (exit status 128 + N in a shell) …
    CHECK(WTERMSIG(status) == signal);
    CHECK(test::temp_files_of(path).empty());  // … without its part-written temporary file
    CHECK(core::read_file_bytes(path) == before);
  }
  // A process started ignoring SIGINT keeps ignoring it: the write completes.
  const int status = writer_stopped_by(SIGINT, true, path, next);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(core::read_file_bytes(path) == next);
  CHECK(test::temp_files_of(path).empty());
}
