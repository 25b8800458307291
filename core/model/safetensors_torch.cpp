// Loading and saving torch tensors in the safetensors format (core/model/safetensors_torch.h).
#include "core/model/safetensors_torch.h"

#include "core/atomic_file.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <set>
#include <stdexcept>

namespace headlab::core {
namespace {

using Json = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string& path, const std::string& reason) {
  throw std::runtime_error(path + ": " + reason);
}

[[noreturn]] void fail_tensor(const std::string& path, const std::string& name, const std::string& reason) {
  fail(path, "tensor '" + name + "': " + reason);
}

constexpr std::pair<DType, torch::ScalarType> kScalarTypes[] = {
    {DType::F64, torch::kFloat64}, {DType::F32, torch::kFloat32}, {DType::F16, torch::kFloat16},
    {DType::BF16, torch::kBFloat16}, {DType::I64, torch::kInt64}, {DType::I32, torch::kInt32},
    {DType::I16, torch::kInt16},   {DType::I8, torch::kInt8},     {DType::U8, torch::kUInt8},
    {DType::BOOL, torch::kBool},
};

}  // namespace

torch::ScalarType to_scalar_type(DType dtype) {
  for (const auto& [d, scalar] : kScalarTypes)
    if (d == dtype) return scalar;
  throw std::runtime_error("invalid DType value " + std::to_string(static_cast<int>(dtype)));
}

DType dtype_from_scalar_type(torch::ScalarType type) {
  for (const auto& [d, scalar] : kScalarTypes)
    if (scalar == type) return d;
  throw std::runtime_error(std::string("no safetensors dtype for torch type ") + c10::toString(type));
}

torch::Tensor load_tensor(const SafetensorsFile& file, const std::string& name, torch::ScalarType as) {
  const TensorInfo* info = &file.at(name);
  const uint8_t* bytes = file.data(*info);
  const uint64_t nbytes = info->end - info->begin;
  const torch::ScalarType stored = to_scalar_type(info->dtype);

  // torch's bool kernels assume 0/1 bytes; anything else is a corrupt file, not a value.
  if (info->dtype == DType::BOOL)
    for (uint64_t i = 0; i < nbytes; ++i)
      if (bytes[i] > 1) fail_tensor(file.path(), name, "BOOL byte " + std::to_string(bytes[i]) + " is not 0 or 1");

  if (nbytes == 0) return torch::empty(info->shape, torch::TensorOptions().dtype(as));

  torch::Tensor raw;
  if (reinterpret_cast<uintptr_t>(bytes) % dtype_size(info->dtype) == 0) {
    // Zero-copy view; the deleter's copy of the shared_ptr keeps the mapping alive as long as
    // any tensor (or view of one) uses it, even after this SafetensorsFile is gone.
    std::shared_ptr<const void> keep = file.mapping_owner();
    raw = torch::from_blob(const_cast<uint8_t*>(bytes), info->shape, [keep](void*) {},
                           torch::TensorOptions().dtype(stored));
  } else {
    // Misaligned (e.g. an F32 after an odd number of F16s): typed loads from it would be UB.
    raw = torch::empty(info->shape, torch::TensorOptions().dtype(stored));
    std::memcpy(raw.data_ptr(), bytes, nbytes);
  }
  return stored == as ? raw : raw.to(as);
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      DType store_as, const std::map<std::string, std::string>& metadata) {
  // Build the header and the contiguous CPU tensors first, so every validation error is raised
  // before anything touches the disk.
  Json header = Json::object();
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header["__metadata__"] = std::move(meta);
  }
  std::set<std::string> seen;
  std::vector<torch::Tensor> blobs;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty()) fail(path, "empty tensor name");
    if (name == "__metadata__") fail(path, "tensor name '__metadata__' is reserved");
    if (!seen.insert(name).second) fail(path, "duplicate tensor name '" + name + "'");
    if (!tensor.defined()) fail_tensor(path, name, "undefined tensor");
    torch::Tensor t = tensor.detach();
    if (t.is_floating_point() && is_floating(store_as)) t = t.to(to_scalar_type(store_as));
    DType dtype;
    try {
      dtype = dtype_from_scalar_type(t.scalar_type());
    } catch (const std::runtime_error& e) {
      fail_tensor(path, name, e.what());
    }
    t = t.to(torch::kCPU).contiguous();
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * dtype_size(dtype);
    Json entry = Json::object();
    entry["dtype"] = dtype_name(dtype);
    entry["shape"] = t.sizes().vec();
    entry["data_offsets"] = Json::array({offset, offset + nbytes});
    header[name] = std::move(entry);
    offset += nbytes;
    blobs.push_back(std::move(t));
  }
  std::string text;
  try {
    text = header.dump();  // throws on invalid UTF-8 in a name or metadata string
  } catch (const nlohmann::json::exception& e) {
    fail(path, std::string("cannot encode header: ") + e.what());
  }
  // Spaces up to a multiple of 8 keep the data section 8-aligned, so mapped tensors are aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t header_len = text.size();

  // Atomic replace (core/atomic_file.h): a crash mid-write leaves the previous file intact.
  AtomicFile file(path);
  file.write(&header_len, 8);
  file.write(text.data(), text.size());
  for (const auto& t : blobs) file.write(t.data_ptr(), t.numel() * t.element_size());
  file.commit();
}

}  // namespace headlab::core
