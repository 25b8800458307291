// config.json, native and Hugging Face: any bytes as the config of a folder whose weights are one
// small tensor. Opening the folder must refuse or succeed — never allocate for a config the weights
// cannot fill. The torch-free build opens it (open_model_folder: config, size limits, the weights'
// headers); the full build loads it (load_model: the module allocated, the weights copied).
#include "fuzz_common.h"

#ifdef HEADLAB_FUZZ_WITH_TORCH
#include "core/model/model.h"
#else
#include "core/model_folder.h"
#endif

namespace {

// model.safetensors with one F32 tensor "tokens.weight" [8, 4] of zeros, written byte by byte.
std::string one_tensor_file() {
  std::string header = R"({"tokens.weight":{"dtype":"F32","shape":[8,4],"data_offsets":[0,128]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return bytes + header + std::string(128, '\0');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const fs::path folder = [] {
    auto dir = headlab::fuzz::scratch_dir() / "model";
    fs::create_directories(dir);
    headlab::fuzz::write_scratch("model/model.safetensors", one_tensor_file());
    return dir;
  }();
  headlab::fuzz::write_scratch("model/config.json", {reinterpret_cast<const char*>(data), size});
#ifdef HEADLAB_FUZZ_WITH_TORCH
  headlab::fuzz::expect_clean([&] { (void)headlab::core::load_model(folder.string()); });
#else
  headlab::fuzz::expect_clean([&] { (void)headlab::core::open_model_folder(folder.string()); });
#endif
  return 0;
}
