// safetensors header and offsets: any bytes as a file. Every tensor listed must then be readable:
// each of its bytes (the torch-free build; ASan catches a read outside the mapping) or, in the
// full build, loaded as a float tensor (the conversion and zero-copy paths).
#include "fuzz_common.h"

#ifdef HEADLAB_FUZZ_WITH_TORCH
#include "core/model/safetensors_torch.h"
#else
#include "core/safetensors.h"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = headlab::fuzz::write_scratch("model.safetensors", {reinterpret_cast<const char*>(data), size});
  headlab::fuzz::expect_clean([&] {
    auto file = headlab::core::SafetensorsFile::open(path);
    for (const auto& info : file.tensors()) {
      if (info.end - info.begin > (64u << 20)) continue;  // a valid but large tensor: not what is fuzzed here
#ifdef HEADLAB_FUZZ_WITH_TORCH
      (void)headlab::core::load_tensor(file, info.name, torch::kFloat32);
#else
      const uint8_t* bytes = file.data(file.at(info.name));
      volatile uint8_t sum = 0;
      for (uint64_t i = 0; i < info.end - info.begin; ++i) sum = sum + bytes[i];
#endif
    }
  });
  return 0;
}
