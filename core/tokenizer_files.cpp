#include "core/tokenizer_files.h"

#include "core/atomic_file.h"

#include <filesystem>
#include <stdexcept>
#include <utility>
#include <vector>

namespace headlab::core {

namespace fs = std::filesystem;

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// Source file → its name in a model folder, chosen as Tokenizer::load chooses (tokenizer.json first,
// then vocab.txt, then vocab.json + merges.txt or encoder.json + vocab.bpe).
std::vector<std::pair<fs::path, std::string>> files_of(const fs::path& tokenizer) {
  const auto pair_in = [](const fs::path& dir) -> std::vector<std::pair<fs::path, std::string>> {
    for (auto [v, m] : {std::pair{"vocab.json", "merges.txt"}, std::pair{"encoder.json", "vocab.bpe"}})
      if (is_file(dir / v) && is_file(dir / m)) return {{dir / v, v}, {dir / m, m}};
    return {};
  };
  std::error_code ec;
  if (fs::is_directory(tokenizer, ec)) {
    if (is_file(tokenizer / "tokenizer.json")) return {{tokenizer / "tokenizer.json", "tokenizer.json"}};
    if (is_file(tokenizer / "vocab.txt")) return {{tokenizer / "vocab.txt", "vocab.txt"}};
    return pair_in(tokenizer);
  }
  const std::string name = tokenizer.filename().string();
  if (name == "merges.txt" || name == "vocab.json" || name == "encoder.json" || tokenizer.extension() == ".bpe")
    return pair_in(tokenizer.parent_path());
  if (tokenizer.extension() == ".txt") return {{tokenizer, "vocab.txt"}};
  return {{tokenizer, "tokenizer.json"}};
}

}  // namespace

void copy_tokenizer_files(const std::string& tokenizer, const std::string& folder) {
  if (tokenizer.empty()) return;
  const fs::path source(tokenizer);
  auto files = files_of(source);
  if (files.empty()) return;
  const fs::path config = (fs::is_directory(source) ? source : source.parent_path()) / "tokenizer_config.json";
  if (is_file(config)) files.emplace_back(config, "tokenizer_config.json");
  std::error_code ec;
  if (fs::is_directory(source, ec))
    for (const char* keyed : {"token_counts.json", "generation_config.json"})
      if (is_file(source / keyed)) files.emplace_back(source / keyed, keyed);
  for (const auto& [from, name] : files) {
    const fs::path to = fs::path(folder) / name;
    std::error_code ec;
    if (fs::exists(to, ec) && fs::equivalent(from, to, ec)) continue;
    copy_file_atomic(from.string(), to.string());
  }
}

void remove_model_companions(const std::string& folder) {
  for (const char* name : {"tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "encoder.json", "vocab.bpe",
                           "tokenizer_config.json", "token_counts.json", "generation_config.json"}) {
    const fs::path file = fs::path(folder) / name;
    std::error_code ec;
    if (is_file(file) && !fs::remove(file, ec) && ec)
      throw std::runtime_error(file.string() + ": cannot be removed (" + ec.message() + ")");
  }
}

std::string no_tokenizer(const std::string& folder) {
  for (const char* name : {"tokenizer.model", "spiece.model", "sentencepiece.bpe.model", "tokenizer.model.v3",
                           "tekken.json"}) {
    if (!is_file(fs::path(folder) / name)) continue;
    return folder + " has no tokenizer HeadLab reads: its " + name +
           " is a format HeadLab does not read (it reads tokenizer.json, vocab.txt, vocab.json with merges.txt); "
           "save the tokenizer as tokenizer.json beside it, e.g. with transformers' "
           "AutoTokenizer.from_pretrained(folder).save_pretrained(folder)";
  }
  return folder + " has no tokenizer";
}

}  // namespace headlab::core
