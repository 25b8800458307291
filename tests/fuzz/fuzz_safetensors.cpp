// safetensors header and offsets: any bytes as a file; every tensor listed must then load.
#include "fuzz_common.h"

#include "core/safetensors_torch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = headlab::fuzz::write_scratch("model.safetensors", {reinterpret_cast<const char*>(data), size});
  headlab::fuzz::expect_clean([&] {
    auto file = headlab::core::SafetensorsFile::open(path);
    for (const auto& info : file.tensors()) {
      if (info.end - info.begin > (64u << 20)) continue;  // a valid but large tensor: not what is fuzzed here
      (void)headlab::core::load_tensor(file, info.name, torch::kFloat32);
    }
  });
  return 0;
}
