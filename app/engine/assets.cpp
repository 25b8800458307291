// Finding the assets folder and the newest trained model in it (torch-free).
#include "app/engine/workbench_engine.h"

#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;

namespace headlab::app {

const char* stage_name(Stage stage) {
  static const char* const names[] = {"J", "L", "W", "U"};
  return names[static_cast<int>(stage)];
}

int AttentionSummary::heads(Stage stage) const {
  switch (stage) {
    case Stage::J: return logit_heads;
    case Stage::L:
    case Stage::W: return softmax_heads;
    case Stage::U: return output_heads;
  }
  return output_heads;
}

const AttentionSummary* ModelSummary::find(const std::string& stack) const {
  for (const auto& a : attentions)
    if (a.stack == stack) return &a;
  return nullptr;
}

const AttentionMaps* RunSnapshot::find(const std::string& stack) const {
  for (const auto& a : attentions)
    if (a.stack == stack) return &a;
  return nullptr;
}

const PositionOutput* RunSnapshot::output_at(int position) const {
  for (const auto& o : outputs)
    if (o.position == position) return &o;
  return nullptr;
}

const TokenizedText& RunSnapshot::query_tokens(const std::string& stack) const {
  return stack == "encoder" || decoder_tokens.ids.empty() ? tokens : decoder_tokens;
}

const TokenizedText& RunSnapshot::key_tokens(const std::string& stack) const {
  return stack == "decoder" && !decoder_tokens.ids.empty() ? decoder_tokens : tokens;
}

std::string find_assets_dir() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("HEADLAB_ASSETS")) candidates.emplace_back(env);
  candidates.emplace_back(fs::current_path() / "assets");
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path() / "assets");
    candidates.push_back(exe.parent_path() / "../assets");
    candidates.push_back(exe.parent_path() / "../../assets");
    candidates.push_back(exe.parent_path() / "../share/headlab/assets");
  }
#ifdef HEADLAB_SOURCE_DIR
  candidates.push_back(fs::path(HEADLAB_SOURCE_DIR) / "assets");
#endif
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

}  // namespace headlab::app
