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
  auto get = reinterpret_cast<GetDevice>(dlsym(RTLD_DEFAULT, "cudaGetDevice"));
  auto set = reinterpret_cast<SetDevice>(dlsym(RTLD_DEFAULT, "cudaSetDevice"));
  auto info = reinterpret_cast<MemGetInfo>(dlsym(RTLD_DEFAULT, "cudaMemGetInfo"));
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
    size_t used = 0;
    try {
      if (text.rfind("cuda:", 0) != 0) throw std::invalid_argument("");
      index = std::stoi(text.substr(5), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || 5 + used != text.size() || index < 0)
      throw std::invalid_argument("device '" + text + "': expected cpu, cuda or cuda:N");
  }
  if (!built_with_cuda())
    throw std::invalid_argument("device '" + text + "': this HeadLab was built against a LibTorch without CUDA "
                                "(Debian's is CPU-only); build it against a CUDA LibTorch (README, \"GPU build\")");
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

void move_to_device(Model& model, torch::Device device) {
  if (model_device(model) == device) return;
  if (device.is_cuda()) {
    int64_t bytes = 0;
    for (const auto& p : model.module->parameters()) bytes += p.numel() * static_cast<int64_t>(p.element_size());
    for (const auto& b : model.module->buffers()) bytes += b.numel() * static_cast<int64_t>(b.element_size());
    size_t free_bytes = 0, total_bytes = 0;
    if (card_memory(device.index() < 0 ? 0 : device.index(), free_bytes, total_bytes) &&
        static_cast<double>(bytes) > 0.9 * static_cast<double>(free_bytes))
      throw std::invalid_argument(model.folder + ": its weights take " + gigabytes(double(bytes)) + " and " +
                                  device_name(device) + " has " + gigabytes(double(free_bytes)) + " free of " +
                                  gigabytes(double(total_bytes)) + ": run it on the CPU, or free the card");
    use_exact_float32();
  }
  torch::NoGradGuard no_grad;
  model.module->to(device);
  model.mapped_bytes = 0;  // on a card the weights are the card's copies; back on the CPU, owned copies
}

void check_run_memory(const MemoryEstimate& estimate, const Model& model, const std::string& what, int64_t tokens) {
  const torch::Device device = model_device(model);
  size_t free_bytes = 0, total_bytes = 0;
  if (!device.is_cuda()) return check_memory(estimate, what, tokens);
  if (!card_memory(device.index() < 0 ? 0 : device.index(), free_bytes, total_bytes)) return;
  int64_t weights = 0;
  for (const auto& p : model.module->parameters()) weights += p.numel() * static_cast<int64_t>(p.element_size());
  const int64_t room = static_cast<int64_t>(total_bytes) - weights;
  if (estimate.total() <= room) return;
  throw MemoryLimitError(what + " needs about " + format_bytes(estimate.total()) + " (" + std::to_string(tokens) +
                         " tokens; attention maps " + format_bytes(estimate.maps) + "), more than the " +
                         format_bytes(room) + " that " + device_name(device) +
                         " has beside the model's weights. Use a shorter input" +
                         (estimate.maps > estimate.total() / 4 ? " (the maps grow with its square)" : "") +
                         ", capture fewer stages, or run on the CPU.");
}

void use_exact_float32() { at::globalContext().setFloat32MatmulPrecision("highest"); }

}  // namespace headlab::core
