// safetensors read (memory-mapped) and write — HeadLab's own implementation of the format
// (https://github.com/huggingface/safetensors: u64 little-endian header size N, N bytes of JSON
// header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the
// data section; offsets are relative to the data section). Torch-free: reading headers needs no
// LibTorch (`headlab info`); tensors are loaded and saved through core/model/safetensors_torch.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace headlab::core {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

// "F32" <-> DType; throws std::runtime_error on an unknown name.
DType dtype_from_name(const std::string& name);
const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);
bool is_floating(DType dtype);  // F64, F32, F16, BF16

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offset into the data section
  uint64_t end = 0;    // one past the last byte
};

// A safetensors file mapped read-only (MAP_PRIVATE) into memory. Every offset, shape and dtype is
// validated against the file size on open; errors name the file and the tensor.
class SafetensorsFile {
 public:
  // Opens and validates `path`. Throws std::runtime_error("<path>: <reason>") on any defect.
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in header order
  int64_t bytes() const;  // the tensors' stored bytes together (the header not counted)
  const TensorInfo* find(const std::string& name) const;             // nullptr when absent
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // The tensor's entry; throws "<path>: tensor '<name>' not found" when absent.
  const TensorInfo& at(const std::string& name) const;

  // Raw bytes of a tensor inside the mapping.
  const uint8_t* data(const TensorInfo& info) const;
  // Keeps the mapping alive for as long as the returned pointer lives (zero-copy tensors hold it).
  std::shared_ptr<const void> mapping_owner() const { return mapping_; }

 private:
  struct Mapping;
  std::string path_;
  std::shared_ptr<Mapping> mapping_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  uint64_t data_offset_ = 0;
};

}  // namespace headlab::core
