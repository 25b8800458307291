// safetensors reader and writer (format in safetensors.h). The header is untrusted input: every
// length, offset, shape and dtype is checked against the file size before a pointer is formed from
// it, so a damaged or hostile file yields a std::runtime_error("<path>: ...") and never a crash.
#include "core/safetensors.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <stdexcept>

// The format is little-endian and we copy/map its bytes as they are.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

namespace headlab::core {
namespace {

// ordered_json keeps the header's key order, so tensors() follows the file.
using Json = nlohmann::ordered_json;

// Same cap as the reference implementation: a larger header is corruption, not a model.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

[[noreturn]] void fail(const std::string& path, const std::string& reason) {
  throw std::runtime_error(path + ": " + reason);
}

[[noreturn]] void fail_tensor(const std::string& path, const std::string& name, const std::string& reason) {
  fail(path, "tensor '" + name + "': " + reason);
}

std::string errno_text(int err) { return std::strerror(err); }

// nlohmann's parse errors quote the offending bytes, which may be invalid UTF-8; keep messages
// printable ASCII so a log or GUI can always show them.
std::string printable(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return out;
}

struct DTypeEntry {
  DType dtype;
  const char* name;
  size_t size;
};

const DTypeEntry kDTypes[] = {
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2},
    {DType::I64, "I64", 8}, {DType::I32, "I32", 4}, {DType::I16, "I16", 2}, {DType::I8, "I8", 1},
    {DType::U8, "U8", 1},   {DType::BOOL, "BOOL", 1},
};

const DTypeEntry& entry_of(DType dtype) {
  for (const auto& e : kDTypes)
    if (e.dtype == dtype) return e;
  throw std::runtime_error("invalid DType value " + std::to_string(static_cast<int>(dtype)));
}

const DTypeEntry* find_dtype(const std::string& name) {
  for (const auto& e : kDTypes)
    if (name == e.name) return &e;
  return nullptr;
}

std::string range_text(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// Reads one header entry {dtype, shape, data_offsets} and checks it against the data section.
TensorInfo parse_tensor(const std::string& path, const std::string& name, const Json& entry, uint64_t data_size) {
  if (!entry.is_object()) fail_tensor(path, name, "header entry is not a JSON object");
  TensorInfo info;
  info.name = name;

  auto dtype = entry.find("dtype");
  if (dtype == entry.end() || !dtype->is_string()) fail_tensor(path, name, "missing or non-string 'dtype'");
  const DTypeEntry* dt = find_dtype(dtype->get<std::string>());
  if (!dt) fail_tensor(path, name, "unsupported dtype '" + dtype->get<std::string>() + "'");
  info.dtype = dt->dtype;

  auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array()) fail_tensor(path, name, "missing or non-array 'shape'");
  // numel and byte count must stay below INT64_MAX: torch sizes are int64 and the byte count is
  // compared with the file size, so any overflow here would defeat the bounds check below.
  constexpr uint64_t kLimit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t numel = 1;
  for (const auto& dim : *shape) {
    if (!dim.is_number_integer()) fail_tensor(path, name, "shape " + shape->dump() + " holds a non-integer");
    if (!dim.is_number_unsigned()) fail_tensor(path, name, "shape " + shape->dump() + " holds a negative dimension");
    const uint64_t d = dim.get<uint64_t>();
    if (d > kLimit || __builtin_mul_overflow(numel, d, &numel) || numel > kLimit)
      fail_tensor(path, name, "shape " + shape->dump() + " has too many elements");
    info.shape.push_back(static_cast<int64_t>(d));
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dt->size), &nbytes) || nbytes > kLimit)
    fail_tensor(path, name, "shape " + shape->dump() + " has too many bytes");

  auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
    fail_tensor(path, name, "'data_offsets' must be [begin, end] of non-negative integers");
  info.begin = (*offsets)[0].get<uint64_t>();
  info.end = (*offsets)[1].get<uint64_t>();
  const std::string range = "data_offsets " + range_text(info.begin, info.end);
  if (info.begin > info.end) fail_tensor(path, name, range + " has begin > end");
  if (info.end > data_size)
    fail_tensor(path, name, range + " exceed the data section (" + std::to_string(data_size) + " bytes)");
  if (info.end - info.begin != nbytes)
    fail_tensor(path, name, range + " hold " + std::to_string(info.end - info.begin) + " bytes but " + dt->name +
                                " with shape " + shape->dump() + " needs " + std::to_string(nbytes));
  return info;
}

}  // namespace

DType dtype_from_name(const std::string& name) {
  if (const DTypeEntry* e = find_dtype(name)) return e->dtype;
  throw std::runtime_error("unknown safetensors dtype '" + name + "'");
}

const char* dtype_name(DType dtype) { return entry_of(dtype).name; }
size_t dtype_size(DType dtype) { return entry_of(dtype).size; }
bool is_floating(DType d) { return d == DType::F64 || d == DType::F32 || d == DType::F16 || d == DType::BF16; }

// Owns the mmap; shared by the file object and by every zero-copy tensor (via mapping_owner()).
struct SafetensorsFile::Mapping {
  void* addr = nullptr;
  size_t size = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (addr) ::munmap(addr, size);
  }
  const uint8_t* bytes() const { return static_cast<const uint8_t*>(addr); }
};

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  // O_NONBLOCK: a FIFO given by mistake must not hang the open; it changes nothing for files.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, "cannot open: " + errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, "cannot stat: " + errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8) {
    ::close(fd);
    fail(path, "file is " + std::to_string(file_size) + " bytes, too short for the 8-byte header length");
  }

  // MAP_PRIVATE + PROT_WRITE: tensors handed out by from_blob are writable (torch assumes so), and
  // an in-place edit only copies the touched page; the file itself is never modified.
  void* addr = ::mmap(nullptr, file_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int map_err = errno;
  ::close(fd);  // the mapping holds its own reference to the file
  if (addr == MAP_FAILED) fail(path, "cannot mmap: " + errno_text(map_err));

  SafetensorsFile file;
  file.path_ = path;
  file.mapping_ = std::make_shared<Mapping>();
  file.mapping_->addr = addr;
  file.mapping_->size = file_size;
  const uint8_t* base = file.mapping_->bytes();

  uint64_t header_len = 0;
  std::memcpy(&header_len, base, 8);
  if (header_len > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(header_len) + " exceeds the 100 MB limit");
  if (header_len > file_size - 8)
    fail(path, "header length " + std::to_string(header_len) + " exceeds the " + std::to_string(file_size - 8) +
                   " bytes after the length field");
  file.data_offset_ = 8 + header_len;
  const uint64_t data_size = file_size - file.data_offset_;

  // Duplicate top-level keys would silently collapse to the last one in the parsed object; the
  // parse callback sees every key (depth 1 = the top-level object) so we can reject them.
  Json header;
  std::set<std::string> keys;
  std::string duplicate;
  const char* text = reinterpret_cast<const char*>(base + 8);
  try {
    header = Json::parse(text, text + header_len, [&](int depth, Json::parse_event_t event, Json& parsed) {
      if (depth == 1 && event == Json::parse_event_t::key && parsed.is_string() &&
          !keys.insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
      return true;
    });
  } catch (const nlohmann::json::exception& e) {
    fail(path, "header is not valid JSON: " + printable(e.what()));
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  if (!duplicate.empty()) fail(path, "header names '" + duplicate + "' twice");

  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) fail(path, "__metadata__ is not a JSON object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string()) fail(path, "__metadata__ value of '" + m.key() + "' is not a string");
        file.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    file.index_[it.key()] = file.tensors_.size();
    file.tensors_.push_back(parse_tensor(path, it.key(), it.value(), data_size));
  }

  // The spec forbids overlapping tensors (two names aliasing the same bytes). Holes are tolerated:
  // they are harmless to a reader. Empty tensors occupy no bytes and cannot overlap.
  std::vector<const TensorInfo*> by_begin;
  for (const auto& t : file.tensors_)
    if (t.end > t.begin) by_begin.push_back(&t);
  std::sort(by_begin.begin(), by_begin.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_begin.size(); ++i) {
    const TensorInfo& prev = *by_begin[i - 1];
    const TensorInfo& cur = *by_begin[i];
    if (cur.begin < prev.end)
      fail_tensor(path, cur.name, "data_offsets " + range_text(cur.begin, cur.end) + " overlap tensor '" +
                                      prev.name + "' " + range_text(prev.begin, prev.end));
  }
  return file;
}

int64_t SafetensorsFile::bytes() const {
  int64_t total = 0;
  for (const auto& info : tensors_) total += static_cast<int64_t>(info.end - info.begin);
  return total;
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const uint8_t* SafetensorsFile::data(const TensorInfo& info) const {
  // `info` may come from elsewhere (another file, a hand-made struct): bound it again.
  if (!mapping_ || info.begin > info.end || info.end > mapping_->size - data_offset_)
    fail(path_.empty() ? "<no file>" : path_, "tensor '" + info.name + "': byte range outside the data section");
  return mapping_->bytes() + data_offset_ + info.begin;
}

const TensorInfo& SafetensorsFile::at(const std::string& name) const {
  const TensorInfo* info = find(name);
  if (!info) fail(path_, "tensor '" + name + "' not found");
  return *info;
}

}  // namespace headlab::core
