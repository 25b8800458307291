// CoNLL-U: any bytes as a treebank file; parsed sentences must have consistent heads.
#include "fuzz_common.h"

#include "analysis/conllu.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  headlab::fuzz::expect_clean([&] {
    auto sentences = headlab::analysis::parse_conllu(std::string(reinterpret_cast<const char*>(data), size), "fuzz.conllu");
    for (const auto& s : sentences)
      for (const auto& w : s.words)
        if (w.head < 0 || w.head > static_cast<int>(s.words.size())) std::abort();
  });
  return 0;
}
