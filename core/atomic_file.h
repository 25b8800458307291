// Atomic file replacement, the one way HeadLab writes a file a user cares about (models,
// checkpoints, sessions, reports, figures, tokenizers). The bytes go to a temporary file beside the
// target (`.NAME.tmp.<pid>.<random>` in the same folder, so the rename stays on one file system),
// which is flushed and fsynced, renamed over the target, and the folder is fsynced so the rename
// survives a power cut. A reader sees the old file or the new one, never a mixture; a crash leaves
// at most a stray temporary file, never a damaged target, and the next save of that file removes
// the temporary files of writers that died. No torch here.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace headlab::core {

// A temporary file that becomes `target` on commit(). Not committed (an exception, an early
// return), the destructor removes it and the target stays as it was. Every error names the target
// and the operating system's reason.
class AtomicFile {
 public:
  // Creates the temporary file. Throws when the target's folder is missing or not writable.
  explicit AtomicFile(std::string target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& target() const { return target_; }
  // The temporary file's path, for libraries that write by name (they must open it for writing
  // in place, as fopen(path, "wb") does, not replace it).
  const std::string& temp_path() const { return temp_; }

  // Appends bytes (after what stream() holds). Throws naming the target.
  void write(const void* data, size_t size);
  // The temporary file as a buffered stream; an error shows in the stream's state and is
  // reported, with its reason, by commit().
  std::ostream& stream();

  // Flushes, fsyncs and closes the file, renames it over the target and fsyncs the folder.
  void commit();

 private:
  class Buffer;
  void fail(const std::string& what, int error) const;  // throws "TARGET: WHAT: REASON"
  void write_bytes(const char* data, size_t size);       // records the first error; probes Writing
  void discard() noexcept;

  std::string target_, temp_;
  int fd_ = -1;
  int write_error_ = 0;  // errno of the first failed write through stream()
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
  bool committed_ = false;
  bool probed_ = false;  // the Writing probe has run
};

// The points at which a writer can die with the target still whole: once the first bytes have
// reached the temporary file (Writing), and once every byte is there, before the fsync and the
// rename (Written).
enum class AtomicStage { Writing, Written };
// A seam for crash tests: a probe, process-wide, called at each stage of every AtomicFile (Writing
// once per file). Tests set it in a child process that they kill at a known stage; null = none.
using AtomicProbe = void (*)(AtomicStage stage, const std::string& temp_path);
void set_atomic_probe(AtomicProbe probe);

// Replaces `path` with `bytes`, atomically.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Replaces `path` with what `write` puts into the stream, atomically. An exception from `write`
// leaves the target untouched (and is passed on).
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write);

// Copies `from` over `to`, atomically (`to` stays whole when reading `from` fails).
void copy_file_atomic(const std::string& from, const std::string& to);

// The whole file as bytes; throws "PATH: cannot read: REASON".
std::string read_file_bytes(const std::string& path);

}  // namespace headlab::core
