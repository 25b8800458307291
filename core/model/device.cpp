#include "core/model/device.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <dlfcn.h>

#include <cstdio>
#include <stdexcept>

namespace headlab::core {
namespace {

std::string gigabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
  return text;
}

}  // namespace

// Through the CUDA runtime's own entry points, found in the process (no CUDA headers needed here).
bool card_memory(int index, size_t& free_bytes, size_t& total_bytes) {
  using GetDevice = int (*)(int*);
  using SetDevice = int (*)(int);
  using MemGetInfo = int (*)(size_t*, size_t*);
  // Looked up once: every run on a card checks its memory.
  static const auto get = reinterpret_cast<GetDevice>(dlsym(RTLD_DEFAULT, "cudaGetDevice"));
  static const auto set = reinterpret_cast<SetDevice>(dlsym(RTLD_DEFAULT, "cudaSetDevice"));
  static const auto info = reinterpret_cast<MemGetInfo>(dlsym(RTLD_DEFAULT, "cudaMemGetInfo"));
  if (!get || !set || !info) return false;
  int previous = 0;
  if (get(&previous) != 0 || set(index) != 0) return false;
  const bool ok = info(&free_bytes, &total_bytes) == 0;
  set(previous);
  return ok;
}

bool built_with_cuda() {
#ifdef HEADLAB_TORCH_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count() { return built_with_cuda() && torch::cuda::is_available() ? int(torch::cuda::device_count()) : 0; }

torch::Device parse_device(const std::string& text) {
  if (text == "cpu") return torch::kCPU;
  int index = 0;
  if (text != "cuda") {
    const std::string digits = text.rfind("cuda:", 0) == 0 ? text.substr(5) : std::string();
    if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("device '" + text + "': expected cpu, cuda or cuda:N");
    index = std::stoi(digits);
  }
  if (!built_with_cuda())
    throw std::invalid_argument("device '" + text + "': this HeadLab was built against a LibTorch without CUDA "
                                "(Debian's is CPU-only); build it against a CUDA LibTorch (app/README.md, \"The GPU build\")");
  const int cards = cuda_device_count();
  if (cards == 0) throw std::invalid_argument("device '" + text + "': no CUDA card is visible (driver, CUDA_VISIBLE_DEVICES)");
  if (index >= cards)
    throw std::invalid_argument("device '" + text + "': this machine has " + std::to_string(cards) + " CUDA card" +
                                (cards == 1 ? "" : "s") + " (cuda:0" + (cards > 1 ? "..cuda:" + std::to_string(cards - 1) : "") + ")");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::string device_name(torch::Device device) {
  if (device.is_cpu()) return "cpu";
  return device.str().find(':') == std::string::npos ? device.str() + ":0" : device.str();
}

torch::Device model_device(const Model& model) { return model.module->tokens->weight.device(); }

torch::Tensor ids_on_device(const std::vector<int64_t>& ids, const Model& model) {
  return torch::tensor(ids, torch::kLong).view({1, static_cast<int64_t>(ids.size())}).to(model_device(model));
}

namespace {

// The weights' and buffers' bytes in their own dtypes.
int64_t weight_bytes(const Model& model) {
  int64_t bytes = 0;
  for (const auto& p : model.module->parameters()) bytes += p.numel() * static_cast<int64_t>(p.element_size());
  for (const auto& b : model.module->buffers()) bytes += b.numel() * static_cast<int64_t>(b.element_size());
  return bytes;
}

int card_index(torch::Device device) { return device.index() < 0 ? 0 : device.index(); }

}  // namespace

void move_to_device(Model& model, torch::Device device) {
  const torch::Device from = model_device(model);
  if (from == device) return;
  const int64_t bytes = weight_bytes(model);
  const std::string name = model.folder.empty() ? std::string("the model") : model.folder;
  auto too_large = [&](const std::string& room) {
    return MemoryLimitError(name + ": its weights take " + gigabytes(double(bytes)) + ", more than " + room +
                            ": run it on the CPU" + (room.find("free") != std::string::npos ? ", or free the card" : ""));
  };
  size_t free_bytes = 0, total_bytes = 0;
  const bool measured = device.is_cuda() && card_memory(card_index(device), free_bytes, total_bytes);
  // What can never fit is refused before anything is copied. Memory this process's allocator holds
  // cached counts as used in the free figure, and the allocator gives it back when a copy needs it,
  // so a shortage of free memory alone is left to the copy below.
  if (measured && double(bytes) > 0.9 * double(total_bytes))
    throw too_large(device_name(device) + " can hold (" + gigabytes(double(total_bytes)) + ")");
  torch::NoGradGuard no_grad;
  try {
    model.module->to(device);
  } catch (const c10::Error& e) {
    // The card ran out part way (other processes hold its memory): back where it was, whole.
    model.module->to(from);
    if (std::string(e.what()).find("out of memory") == std::string::npos) throw;
    throw too_large("the " + gigabytes(double(free_bytes)) + " " + device_name(device) + " has free");
  }
  model.mapped_bytes = 0;  // on a card the weights are the card's copies; back on the CPU, owned copies
}

void check_run_memory(const MemoryEstimate& estimate, const Model& model, const std::string& what, int64_t tokens) {
  const torch::Device device = model_device(model);
  size_t free_bytes = 0, total_bytes = 0;
  if (!device.is_cuda()) return check_memory(estimate, what, tokens);
  if (!card_memory(card_index(device), free_bytes, total_bytes)) return;
  const int64_t room = static_cast<int64_t>(total_bytes) - weight_bytes(model);
  if (estimate.total() <= room) return;
  throw MemoryLimitError(what + " needs about " + format_bytes(estimate.total()) + " (" + std::to_string(tokens) +
                         " tokens; attention maps " + format_bytes(estimate.maps) + "), more than the " +
                         format_bytes(room) + " that " + device_name(device) +
                         " has beside the model's weights. Use a shorter input" +
                         (estimate.maps > estimate.total() / 4 ? " (the maps grow with its square)" : "") +
                         ", capture fewer stages, or run on the CPU.");
}

int64_t memory_room(torch::Device device) {
  if (!device.is_cuda()) return memory_limit();
  size_t free_bytes = 0, total_bytes = 0;
  return card_memory(card_index(device), free_bytes, total_bytes) ? static_cast<int64_t>(free_bytes) : -1;
}

}  // namespace headlab::core
