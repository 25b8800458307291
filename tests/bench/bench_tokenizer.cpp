// Tokenizer throughput: ~1 MB of English (Gutenberg texts from ../shared/data/text/gutenberg beside the checkout
// when present, else generated) encoded line by line with each test tokenizer; prints MB/s.
// Standalone (no Catch2). Usage: bench_tokenizer [tokenizer-dir ...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.h"
#include "shared_data.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kTargetBytes = 1 << 20;

std::vector<std::string> load_text() {
  std::vector<std::string> lines;
  size_t total = 0;
  for (const auto& f : headlab::test::gutenberg_books()) {
    std::ifstream in(f);
    std::string line;
    while (total < kTargetBytes && std::getline(in, line)) {
      total += line.size() + 1;
      lines.push_back(line);
    }
  }
  if (total < kTargetBytes) {  // deterministic pseudo-English
    const char* words[] = {"the", "of", "and", "a", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on",
                           "are", "as", "with", "his", "they", "I", "at", "be", "this", "have", "from", "or",
                           "one", "had", "by", "word", "but", "not", "what", "all", "were", "we", "when", "your",
                           "can", "said", "there", "use", "an", "each", "which", "she", "do", "how", "their",
                           "if", "will", "up", "other", "about", "out", "many", "then", "them", "these", "so",
                           "some", "her", "would", "make", "like", "him", "into", "time", "has", "look", "two",
                           "more", "write", "go", "see", "number", "no", "way", "could", "people", "Tokenizer",
                           "don't", "it's", "1984,", "3.14", "(maybe)", "\"quoted\"", "naïve", "café."};
    uint32_t seed = 1;
    while (total < kTargetBytes) {
      std::string line;
      for (int w = 0; w < 14; ++w) {
        seed = seed * 1664525u + 1013904223u;
        line += (w ? " " : "") + std::string(words[(seed >> 8) % (sizeof(words) / sizeof(words[0]))]);
      }
      total += line.size() + 1;
      lines.push_back(line);
    }
  }
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) dirs.push_back(argv[i]);
  if (dirs.empty()) {
    for (const char* n : {"gpt2", "bert-base-uncased", "qwen3"})
      dirs.push_back(std::string(HEADLAB_SOURCE_DIR) + "/tests/data/tokenizers/" + n);
  }
  const std::vector<std::string> lines = load_text();
  size_t bytes = 0;
  for (const auto& l : lines) bytes += l.size() + 1;
  std::printf("text: %zu lines, %.2f MB\n", lines.size(), bytes / 1e6);
  for (const auto& dir : dirs) {
    auto t0 = Clock::now();
    auto tok = headlab::core::Tokenizer::load(dir);
    const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
    // Pass 1 starts with an empty word cache; pass 2 shows the steady state.
    // HEADLAB_BENCH_PASSES=N runs more passes (for profiling the encode loop alone).
    const char* env = std::getenv("HEADLAB_BENCH_PASSES");
    const int passes = env ? std::max(1, std::atoi(env)) : 2;
    for (int pass = 1; pass <= passes; ++pass) {
      size_t tokens = 0;
      auto t1 = Clock::now();
      for (const auto& l : lines) tokens += tok->encode(l).ids.size();
      const double s = std::chrono::duration<double>(Clock::now() - t1).count();
      std::printf("%-20s load %.2f s  pass %d: %zu tokens in %.3f s = %.1f MB/s\n",
                  fs::path(dir).filename().c_str(), load_s, pass, tokens, s, bytes / 1e6 / s);
    }
  }
  return 0;
}
