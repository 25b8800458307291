#include "core/asset_paths.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace fs = std::filesystem;

namespace headlab::core {

std::string find_assets_dir() {
  std::vector<fs::path> candidates;
  for (const char* name : {"HEADLAB_DATA", "HEADLAB_ASSETS"})
    if (const char* env = std::getenv(name); env && *env) candidates.emplace_back(env);
  std::error_code ec;
  if (const auto cwd = fs::current_path(ec); !ec) candidates.emplace_back(cwd / "assets");
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path() / "assets");
    candidates.push_back(exe.parent_path() / "../assets");
    candidates.push_back(exe.parent_path() / "../../assets");
    candidates.push_back(exe.parent_path() / "../share/headlab/assets");
    candidates.push_back(exe.parent_path() / "../../share/headlab/assets");  // libexec/headlab/headlab-engine
  }
  for (const auto& c : candidates)
    if (fs::is_directory(c / "configs", ec) || fs::is_directory(c / "models", ec))
      return fs::weakly_canonical(c, ec).string();
  return "";
}

std::string find_default_model(const std::string& assets_dir) {
  if (assets_dir.empty()) return "";
  std::error_code ec;
  const fs::path models = fs::path(assets_dir) / "models";
  auto complete = [&](const fs::path& dir) {
    return fs::is_regular_file(dir / "config.json", ec) && fs::is_regular_file(dir / "model.safetensors", ec);
  };
  if (complete(models / "default")) return (models / "default").string();
  fs::path best;
  fs::file_time_type best_time{};
  for (const auto& entry : fs::directory_iterator(models, ec)) {
    if (!entry.is_directory() || !complete(entry.path())) continue;
    const auto t = fs::last_write_time(entry.path() / "config.json", ec);
    if (best.empty() || t > best_time) best = entry.path(), best_time = t;
  }
  return best.string();
}

std::string default_model_or_throw() {
  const std::string assets = find_assets_dir();
  if (assets.empty())
    throw std::runtime_error("no --model given and no assets folder found (looked in $HEADLAB_DATA, ./assets and "
                             "beside the program, e.g. ../share/headlab/assets)");
  const std::string model = find_default_model(assets);
  if (model.empty()) throw std::runtime_error("no --model given and " + assets + "/models holds no complete model folder");
  return model;
}

}  // namespace headlab::core
