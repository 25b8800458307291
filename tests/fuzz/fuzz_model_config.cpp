// config.json, native and Hugging Face: any bytes as the config of a folder whose weights are one
// small tensor. load_model must refuse or load; never allocate for a config the weights cannot fill.
#include "fuzz_common.h"

#include "core/model.h"
#include "core/safetensors_torch.h"

#include <torch/torch.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const fs::path folder = [] {
    auto dir = headlab::fuzz::scratch_dir() / "model";
    fs::create_directories(dir);
    headlab::core::save_safetensors((dir / "model.safetensors").string(),
                                    {{"tokens.weight", torch::zeros({8, 4})}}, headlab::core::DType::F32, {});
    return dir;
  }();
  headlab::fuzz::write_scratch("model/config.json", {reinterpret_cast<const char*>(data), size});
  headlab::fuzz::expect_clean([&] { (void)headlab::core::load_model(folder.string()); });
  return 0;
}
