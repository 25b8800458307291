// safetensors read (memory-mapped) and write — HeadLab's own implementation of the format
// (https://github.com/huggingface/safetensors: u64 little-endian header size N, N bytes of JSON
// header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the
// data section; offsets are relative to the data section).
#pragma once

#include <torch/types.h>

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
torch::ScalarType to_scalar_type(DType dtype);
// torch type -> DType (Float->F32, Half->F16, Long->I64, ...); throws std::runtime_error when the
// format has no such dtype (complex, quantized, ...).
DType dtype_from_scalar_type(torch::ScalarType type);

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
  const TensorInfo* find(const std::string& name) const;             // nullptr when absent
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // The tensor as `as` (float32 by default). When the stored dtype equals `as` and the data is
  // suitably aligned, the result is a zero-copy view of the mapping that keeps it alive;
  // otherwise a converted copy. Throws "<path>: tensor '<name>' not found" when absent.
  torch::Tensor load(const std::string& name, torch::ScalarType as = torch::kFloat32) const;

  // Raw bytes of a tensor inside the mapping.
  const uint8_t* data(const TensorInfo& info) const;

 private:
  struct Mapping;
  std::string path_;
  std::shared_ptr<Mapping> mapping_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  uint64_t data_offset_ = 0;
};

// Writes tensors (any dtype/shape; stored contiguous, converted to `store_as` when it is a
// floating dtype and the tensor is floating) atomically: temp file in the same folder, fsync,
// rename. Names must be unique. Throws std::runtime_error naming the path on failure.
void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      DType store_as = DType::F32,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace headlab::core
