#include "core/atomic_file.h"

#include "core/tracked_temporaries.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <streambuf>
#include <vector>

namespace headlab::core {

namespace fs = std::filesystem;

namespace {

std::string reason(int error) { return std::strerror(error); }

std::atomic<AtomicProbe> probe_{nullptr};

std::string folder_of(const std::string& target) {
  const fs::path parent = fs::path(target).parent_path();
  return parent.empty() ? "." : parent.string();
}

// Random enough that two processes (or threads) writing the same target never share a temp file;
// O_EXCL catches the rest.
std::string temp_suffix() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}() ^ (uint64_t(::getpid()) << 32)};
  const uint64_t value = rng() ^ counter.fetch_add(1);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(value));
  return std::to_string(::getpid()) + "." + hex;
}

// Writes all of `size` bytes, retrying short writes and EINTR; returns 0 or the errno.
int write_fully(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

// Removes the temporary files of `target` left by writers that died (killed, power cut): the
// process id in their name no longer exists. Temp files of live processes, this one included, stay.
// Assumes one machine writes a given file (a pid on another host's shared folder means nothing here).
void remove_stale_temps(const std::string& target) noexcept {
  const std::string prefix = "." + fs::path(target).filename().string() + ".tmp.";
  std::error_code ec;
  fs::directory_iterator it(folder_of(target), ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    std::error_code ignored;
    fs::remove(it->path(), ignored);
  }
}

}  // namespace

void set_atomic_probe(AtomicProbe probe) { probe_.store(probe); }

// std::ostream's buffer over the temporary file; a failed write records its errno.
class AtomicFile::Buffer : public std::streambuf {
 public:
  explicit Buffer(AtomicFile& file) : file_(file), data_(1 << 16) { setp(data_.data(), data_.data() + data_.size()); }

 protected:
  int_type overflow(int_type c) override {
    if (drain() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain(); }

 private:
  int drain() {
    const size_t pending = static_cast<size_t>(pptr() - pbase());
    if (pending == 0) return 0;
    file_.write_bytes(pbase(), pending);
    setp(data_.data(), data_.data() + data_.size());
    return file_.write_error_ == 0 ? 0 : -1;
  }

  AtomicFile& file_;
  std::vector<char> data_;
};

AtomicFile::AtomicFile(std::string target) : target_(std::move(target)) {
  if (target_.empty()) throw std::invalid_argument("an empty file name");
  const fs::path name = fs::path(target_).filename();
  if (name.empty() || name == "." || name == "..") throw std::runtime_error(target_ + ": not a file name");
  const std::string folder = folder_of(target_);
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    temp_ = (fs::path(folder) / ("." + name.string() + ".tmp." + temp_suffix())).string();
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // 0666 & ~umask
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int error = errno;
    temp_.clear();
    fail("cannot create a temporary file in " + folder, error);
  }
  track_temporary(temp_);  // removed by a stop signal's handler (app/cli/stop_signals.h)
  // Replacing a file keeps its permissions (a group-readable report stays group-readable).
  struct stat existing;
  if (::stat(target_.c_str(), &existing) == 0 && S_ISREG(existing.st_mode)) ::fchmod(fd_, existing.st_mode & 07777);
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

void AtomicFile::fail(const std::string& what, int error) const {
  throw std::runtime_error(target_ + ": " + what + ": " + reason(error));
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str()), untrack_temporary(temp_);
}

std::ostream& AtomicFile::stream() {
  if (!stream_) {
    buffer_ = std::make_unique<Buffer>(*this);
    stream_ = std::make_unique<std::ostream>(buffer_.get());
  }
  return *stream_;
}

void AtomicFile::write(const void* data, size_t size) {
  if (fd_ < 0) throw std::logic_error(target_ + ": written after commit");
  if (stream_) stream_->flush();  // keep the order of stream() and write() bytes
  write_bytes(static_cast<const char*>(data), size);
  if (write_error_ != 0) fail("write failed", write_error_);
}

void AtomicFile::write_bytes(const char* data, size_t size) {
  // In pieces of at most 1 MiB: a writer that dies part-way leaves part of the bytes, as a crash
  // would, and the probe sees the file after its first piece.
  constexpr size_t kPiece = size_t(1) << 20;
  while (size > 0 && write_error_ == 0) {
    const size_t n = std::min(size, kPiece);
    write_error_ = write_fully(fd_, data, n);
    data += n;
    size -= n;
    if (write_error_ != 0 || probed_) continue;
    probed_ = true;
    if (const AtomicProbe probe = probe_.load()) probe(AtomicStage::Writing, temp_);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw std::logic_error(target_ + ": committed twice");
  if (stream_) {
    stream_->flush();
    if (write_error_ == 0 && !*stream_) write_error_ = EIO;  // a writer that set badbit itself
  }
  if (write_error_ != 0) fail("write failed", write_error_);
  if (const AtomicProbe probe = probe_.load()) probe(AtomicStage::Written, temp_);
  if (::fsync(fd_) != 0) fail("fsync failed", errno);
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) fail("closing failed", errno);
  if (::rename(temp_.c_str(), target_.c_str()) != 0) fail("cannot replace it (rename from " + temp_ + ")", errno);
  committed_ = true;
  untrack_temporary(temp_);
  // The rename is durable once the folder is synced. Some file systems cannot sync a folder
  // (EINVAL); the file itself is already on disk then.
  const std::string folder = folder_of(target_);
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) fail("written, but its folder cannot be opened to sync it", errno);
  const int synced = ::fsync(dir) == 0 ? 0 : errno;
  ::close(dir);
  if (synced != 0 && synced != EINVAL && synced != ENOTSUP) fail("written, but syncing its folder failed", synced);
  remove_stale_temps(target_);
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
  AtomicFile file(path);
  write(file.stream());
  file.commit();
}

std::string read_file_bytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot read: " + reason(errno));
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw std::runtime_error(path + ": cannot read: " + reason(error));
    }
    if (n == 0) break;
    bytes.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return bytes;
}

void copy_file_atomic(const std::string& from, const std::string& to) { write_file_atomic(to, read_file_bytes(from)); }

}  // namespace headlab::core
