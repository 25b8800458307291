// Hugging Face folder → Model: the folder opened by core/model_folder.cpp (config.json through the
// family mapping, the weight files' headers), then the weights tensor by tensor from
// model.safetensors or the shards of model.safetensors.index.json.
//
// Memory: the files are memory-mapped. Projection and embedding matrices stay zero-copy views of the
// mapping in their stored dtype (core/model/model.h, Residency::Mapped): an 8B BF16 model holds its
// 16 GB of page cache and nothing else of its size. A tensor the mapping transforms (a transposed
// Conv1D, a slice of a fused projection) is kept as a contiguous copy in its stored dtype. The other
// weights are copied to float32 in slices of at most kChunkBytes, each slice's pages dropped from the
// mapping right after (madvise DONTNEED: the pages are clean, private and never written).
#include "core/model/hf_import.h"

#include "core/families/families.h"
#include "core/model/safetensors_torch.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

namespace headlab::core {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kChunkBytes = 16 << 20;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Drops the mapping's pages for bytes [offset, offset + size) of a tensor (rounded out to pages:
// neighbouring pages are clean too and simply fault back in if read again).
void release_pages(const SafetensorsFile& file, const TensorInfo& info, uint64_t offset, uint64_t size) {
  if (size == 0) return;
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(file.data(info)) + offset;
  const uintptr_t first = begin & ~(page - 1);
  const uintptr_t last = (begin + size + page - 1) & ~(page - 1);
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);  // advisory: failure is harmless
}

bool is_float(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F64;
}

// The source's view of `raw`, a tensor of its stored shape: one index of dim 0, a slice (within
// groups), a transpose.
torch::Tensor source_view(torch::Tensor raw, const hf::TensorSource& source) {
  if (source.select_index >= 0) raw = raw.select(0, source.select_index);
  if (source.slice_dim >= 0 && source.slice_groups > 0) {
    // [..., groups · g, ...] → [..., groups, g, ...], the slice within each group, joined again below.
    std::vector<int64_t> grouped = raw.sizes().vec();
    const int64_t d = source.slice_dim;
    grouped[d] /= source.slice_groups;
    grouped.insert(grouped.begin() + d, source.slice_groups);
    raw = raw.reshape(grouped).narrow(d + 1, source.slice_begin, source.slice_count).flatten(d, d + 1);
  } else if (source.slice_dim >= 0) {
    raw = raw.narrow(source.slice_dim, source.slice_begin, source.slice_count);
  }
  if (source.transpose) raw = raw.t();
  return raw;
}

// parameter ← the source tensor (narrowed, transposed, converted to float32).
void copy_into(torch::Tensor& param, const WeightFiles::Entry& entry, const hf::TensorSource& source) {
  const TensorInfo& info = *entry.info;
  const SafetensorsFile& file = *entry.file;
  // In its stored dtype: a zero-copy view of the mapping (copy_ converts as it copies).
  torch::Tensor raw = source_view(load_tensor(file, info.name, to_scalar_type(info.dtype)), source);
  const uint64_t bytes = info.end - info.begin;
  // A stored shape with extra unit dims (BART's final_logits_bias [1, V] for a [V] bias).
  if (raw.sizes() != param.sizes()) raw = raw.reshape(param.sizes());
  if (source.slice_dim < 0 && source.select_index < 0 && !source.transpose && raw.dim() >= 1 && raw.size(0) > 0) {
    // Row slices, so a large embedding never has all its pages mapped at once.
    const int64_t rows = raw.size(0);
    const int64_t row_bytes = static_cast<int64_t>(bytes) / rows;
    const int64_t step = std::max<int64_t>(1, kChunkBytes / std::max<int64_t>(1, row_bytes));
    for (int64_t r = 0; r < rows; r += step) {
      const int64_t n = std::min(step, rows - r);
      param.narrow(0, r, n).copy_(raw.narrow(0, r, n));
      release_pages(file, info, static_cast<uint64_t>(r * row_bytes), static_cast<uint64_t>(n * row_bytes));
    }
    return;
  }
  param.copy_(raw);
  release_pages(file, info, 0, bytes);
}

// parameter ← an MXFP4 tensor (TensorSource::mxfp4_scales), dequantised as transformers'
// convert_moe_packed_tensors does: each byte's low nibble, then its high one, an E2M1 value
// (±{0, 0.5, 1, 1.5, 2, 3, 4, 6}) times its block's 2^(scale − 127); then the last two dims swapped.
// Exact in float32 (a power of two times a 3-bit significand). Only the selected index of dim 0 is
// dequantised.
void copy_mxfp4_into(torch::Tensor& param, const WeightFiles::Entry& blocks_entry, const WeightFiles::Entry& scales_entry,
                     const hf::TensorSource& source, const std::string& arch) {
  const TensorInfo& b = *blocks_entry.info;
  const TensorInfo& sc = *scales_entry.info;
  const std::vector<int64_t>& logical = source.stored_shape;  // [..., C, R]: C = G · 32
  if (logical.size() < 2 || logical[logical.size() - 2] % 32 != 0)
    throw std::logic_error(arch + ": an MXFP4 source needs a stored shape [..., 32·G, R]");
  std::vector<int64_t> scales_shape(logical.begin(), logical.end() - 2);
  scales_shape.push_back(logical.back());
  scales_shape.push_back(logical[logical.size() - 2] / 32);
  std::vector<int64_t> blocks_shape = scales_shape;
  blocks_shape.push_back(16);
  auto check = [&](const WeightFiles::Entry& entry, const std::vector<int64_t>& shape) {
    const TensorInfo& info = *entry.info;
    if (info.dtype != DType::U8)
      throw std::runtime_error(entry.file->path() + ": MXFP4 tensor '" + info.name + "' has dtype " +
                               dtype_name(info.dtype) + ", expected U8");
    if (info.shape != shape)
      throw std::runtime_error(entry.file->path() + ": MXFP4 tensor '" + info.name + "' has shape " +
                               shape_text(info.shape) + ", expected " + shape_text(shape) + " from config.json (" + arch + ")");
  };
  check(blocks_entry, blocks_shape);
  check(scales_entry, scales_shape);
  torch::Tensor blocks = load_tensor(*blocks_entry.file, b.name, torch::kUInt8);  // [..., R, G, 16]
  torch::Tensor scales = load_tensor(*scales_entry.file, sc.name, torch::kUInt8);  // [..., R, G]
  if (source.select_index >= 0) {
    blocks = blocks.select(0, source.select_index);
    scales = scales.select(0, source.select_index);
  }
  static const float kE2M1[16] = {+0.0f, +0.5f, +1.0f, +1.5f, +2.0f, +3.0f, +4.0f, +6.0f,
                                  -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  const torch::Tensor lut = torch::from_blob(const_cast<float*>(kE2M1), {16}, torch::kFloat32);
  const torch::Tensor codes = blocks.to(torch::kLong);
  const torch::Tensor low = lut.index({codes.remainder(16)}), high = lut.index({codes.div(16, "floor")});
  torch::Tensor values = torch::stack({low, high}, -1).flatten(-3);  // [..., R, G · 32]: low, high, low, …
  const torch::Tensor exponent = scales.to(torch::kInt) - 127;       // [..., R, G]
  values = torch::ldexp(values.view({-1, 32}), exponent.reshape({-1, 1})).view(values.sizes());
  auto rest = source;
  rest.select_index = -1;
  torch::Tensor raw = source_view(values.transpose(-1, -2), rest);  // [..., C, R], then sliced and transposed
  if (raw.sizes() != param.sizes()) raw = raw.reshape(param.sizes());
  param.copy_(raw);
}

// parameter ← a view of the source tensor in its stored dtype; returns the bytes left mapped (0 when
// the source had to be copied to be contiguous).
int64_t map_into(torch::Tensor& param, const WeightFiles::Entry& entry, const hf::TensorSource& source, bool scan) {
  const TensorInfo& info = *entry.info;
  torch::Tensor raw = source_view(load_tensor(*entry.file, info.name, to_scalar_type(info.dtype)), source);
  if (raw.sizes() != param.sizes()) raw = raw.reshape(param.sizes());
  const bool view = raw.is_contiguous();
  if (!view) raw = raw.contiguous();
  if (scan) require_finite(raw, entry.file->path(), info.name);
  param.set_data(raw);
  param.requires_grad_(false);
  return view ? static_cast<int64_t>(raw.numel() * raw.element_size()) : 0;
}

}  // namespace

std::shared_ptr<Model> import_hf_model(const ModelFolder& opened) {
  const std::string& folder = opened.folder;
  const std::string& arch = opened.architecture;
  const std::string& family = opened.family;
  const hf::Layout& layout = *opened.layout;
  const WeightFiles& checkpoint = *opened.weights;
  auto model = std::make_shared<Model>();
  model->folder = folder;
  model->config = opened.config;
  if (!opened.weights_dtype.empty()) model->weights_dtype = opened.weights_dtype;
  {
    WeightsArriveLater unwritten;  // every weight is mapped, copied or filled below
    model->module = Transformer(model->config);
  }
  const bool scan = scan_mapped_values(checkpoint.bytes());

  // Every native parameter has exactly one source and every source feeds a parameter.
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  std::set<std::string> native_names;
  for (auto& item : model->module->named_parameters()) {
    const std::string& native = item.key();
    native_names.insert(native);
    auto found = layout.sources.find(native);
    if (found == layout.sources.end())
      throw std::logic_error(folder + ": HeadLab's " + family + " mapping has no source for parameter '" + native + "'");
    const hf::TensorSource& source = found->second;
    torch::Tensor& param = item.value();
    // Storage for what is filled or dequantised below (copies get theirs where they are made).
    if (source.fill || !source.mxfp4_scales.empty()) with_storage(param);
    if (source.fill) {  // not stored: a constant of the architecture
      param.fill_(*source.fill);
      continue;
    }
    const WeightFiles::Entry* entry = checkpoint.find(source.name);
    if (!entry)
      throw std::runtime_error(folder + ": tensor '" + source.name + "' is missing from " + checkpoint.source() +
                               " (" + arch + " needs it for '" + native + "')");
    if (!source.mxfp4_scales.empty()) {
      const WeightFiles::Entry* scales = checkpoint.find(source.mxfp4_scales);
      if (!scales)
        throw std::runtime_error(folder + ": tensor '" + source.mxfp4_scales + "' is missing from " +
                                 checkpoint.source() + " (the MXFP4 scales of '" + source.name + "')");
      copy_mxfp4_into(param, *entry, *scales, source, arch);
      require_finite(param, entry->file->path(), source.name);
      used.insert(source.name);
      used.insert(source.mxfp4_scales);
      continue;
    }
    const TensorInfo& info = *entry->info;
    std::vector<int64_t> expected = source.stored_shape;
    if (expected.empty()) {
      expected = param.sizes().vec();
      if (source.transpose) std::reverse(expected.begin(), expected.end());
    }
    if (info.shape != expected)
      throw std::runtime_error(entry->file->path() + ": tensor '" + source.name + "' has shape " +
                               shape_text(info.shape) + ", expected " + shape_text(expected) + " from config.json (" +
                               arch + ")");
    if (!is_float(info.dtype))
      throw std::runtime_error(entry->file->path() + ": tensor '" + source.name + "' has dtype " +
                               dtype_name(info.dtype) + ", expected F32, F16 or BF16");
    if (mappable(info.dtype) && keeps_stored_view(native, param)) {
      model->mapped_bytes += map_into(param, *entry, source, scan);
    } else {
      with_storage(param);
      copy_into(param, *entry, source);
      require_finite(param, entry->file->path(), source.name);
    }
    used.insert(source.name);
  }
  // Tables HeadLab computes that the checkpoint also stores must agree with it row for row.
  const auto buffers = model->module->named_buffers();
  for (const auto& [name, buffer_name] : layout.fixed_tables) {
    const WeightFiles::Entry* entry = checkpoint.find(name);
    if (!entry) continue;  // not stored: computed, as the modeling code does
    const torch::Tensor* buffer = buffers.find(buffer_name);
    if (!buffer) throw std::logic_error(folder + ": HeadLab's " + family + " mapping names buffer '" + buffer_name + "'");
    torch::Tensor stored = load_tensor(*entry->file, name, to_scalar_type(entry->info->dtype)).to(torch::kFloat32);
    const int64_t rows = std::min(stored.size(0), buffer->size(0));
    if (stored.dim() != 2 || stored.size(1) != buffer->size(1) ||
        !torch::allclose(stored.narrow(0, 0, rows), buffer->narrow(0, 0, rows), 1e-4, 1e-4))
      throw std::runtime_error(entry->file->path() + ": tensor '" + name + "' is not the " + arch +
                               " sinusoidal table HeadLab computes (a retrained or edited position table is not supported)");
    used.insert(name);
  }
  for (const auto& [native, source] : layout.sources)
    if (!native_names.count(native))
      throw std::logic_error(folder + ": HeadLab's " + family + " mapping names '" + native +
                             "', which the model does not have");
  for (const auto& [name, entry] : checkpoint.entries())
    if (!used.count(name) && !(layout.ignorable && layout.ignorable(name)))
      throw std::runtime_error(entry.file->path() + ": unexpected tensor '" + name + "': the " + arch +
                               " described by config.json does not use it (config and weights disagree?)");
  model->module->eval();

  return model;
}

}  // namespace headlab::core
