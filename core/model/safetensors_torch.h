// safetensors ↔ torch tensors: loading a tensor of a mapped file (core/safetensors.h reads and
// validates the file without LibTorch) and writing tensors atomically.
#pragma once

#include "core/safetensors.h"

#include <torch/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace headlab::core {

torch::ScalarType to_scalar_type(DType dtype);
// torch type -> DType (Float->F32, Half->F16, Long->I64, ...); throws std::runtime_error when the
// format has no such dtype (complex, quantized, ...).
DType dtype_from_scalar_type(torch::ScalarType type);

// The tensor `name` of `file` as `as` (float32 by default). When the stored dtype equals `as` and
// the data is suitably aligned, the result is a zero-copy view of the mapping that keeps it alive
// (even after `file` is gone); otherwise a converted copy. Throws "<path>: tensor '<name>' not
// found" when absent.
torch::Tensor load_tensor(const SafetensorsFile& file, const std::string& name, torch::ScalarType as = torch::kFloat32);

// Writes tensors (any dtype/shape; stored contiguous, converted to `store_as` when it is a
// floating dtype and the tensor is floating) atomically: temp file in the same folder, fsync,
// rename. Names must be unique. Throws std::runtime_error naming the path on failure.
void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      DType store_as = DType::F32,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace headlab::core
