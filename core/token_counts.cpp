#include "core/token_counts.h"
#include "core/json_integer.h"

#include "core/atomic_file.h"
#include "core/tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace headlab::core {

void count_tokens(const Tokenizer& tokenizer, const std::string& text, TokenCounts& counts) {
  if (counts.counts.size() < static_cast<size_t>(tokenizer.vocab_size()))
    counts.counts.resize(static_cast<size_t>(tokenizer.vocab_size()), 0);
  // Every token the text spells, [UNK] and added tokens typed in the text included: each has a
  // character span, so it can be a sentence's rarest token. The framing ([CLS], [SEP], BOS) is not
  // added here and is never a candidate.
  for (int64_t id : tokenizer.encode(text, /*add_special_tokens=*/false).ids) {
    if (id < 0 || id >= static_cast<int64_t>(counts.counts.size())) continue;
    ++counts.counts[static_cast<size_t>(id)];
    ++counts.total;
  }
}

TokenCounts count_tokens_in_files(const Tokenizer& tokenizer, const std::vector<std::string>& files) {
  TokenCounts counts;
  counts.counts.assign(static_cast<size_t>(tokenizer.vocab_size()), 0);
  for (const auto& path : files) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot open");
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) count_tokens(tokenizer, line, counts);
    }
    if (in.bad()) throw std::runtime_error(path + ": read error");
    // A file given twice (a corpus oversampled) is counted twice and named once.
    const std::string name = std::filesystem::path(path).filename().string();
    if (std::find(counts.files.begin(), counts.files.end(), name) == counts.files.end()) counts.files.push_back(name);
  }
  return counts;
}

std::vector<int64_t> frequency_ranks(const TokenCounts& counts, const Tokenizer& tokenizer) {
  const size_t V = std::max(counts.counts.size(), static_cast<size_t>(tokenizer.vocab_size()));
  auto count_of = [&](size_t id) { return id < counts.counts.size() ? counts.counts[id] : 0; };
  std::vector<int64_t> sorted(V);  // counts, descending
  for (size_t id = 0; id < V; ++id) sorted[id] = count_of(id);
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  std::vector<int64_t> ranks(V, 0);
  for (size_t id = 0; id < V; ++id) {
    // Ids strictly more frequent: the prefix of `sorted` greater than this count.
    const auto more = std::lower_bound(sorted.begin(), sorted.end(), count_of(id), std::greater<>()) - sorted.begin();
    ranks[id] = 1 + static_cast<int64_t>(more);
  }
  return ranks;
}

void save_token_counts(const TokenCounts& counts, const std::string& path) {
  nlohmann::json j = {{"format", "headlab-token-counts"}, {"format_version", 1}, {"files", counts.files},
                      {"total", counts.total}, {"counts", counts.counts}};
  write_file_atomic(path, j.dump() + "\n");
}

TokenCounts load_token_counts(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  try {
    const auto j = nlohmann::json::parse(in);
    if (j.value("format", "") != "headlab-token-counts")
      throw std::runtime_error("'format' is not \"headlab-token-counts\"");
    TokenCounts counts;
    counts.counts = j.at("counts").get<std::vector<int64_t>>();
    counts.total = core::get_integer<int64_t>(j.at("total"));
    for (const auto& name : j.value("files", std::vector<std::string>{}))  // older files may name one twice
      if (std::find(counts.files.begin(), counts.files.end(), name) == counts.files.end()) counts.files.push_back(name);
    for (int64_t c : counts.counts)
      if (c < 0) throw std::runtime_error("'counts' holds a negative count");
    return counts;
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace headlab::core
