// Arbitrary bytes (invalid UTF-8 included) through every shipped tokenizer: the shipped models' and
// the test tokenizers (GPT-2, BERT, Qwen3, SentencePiece Unigram and byte-fallback BPE,
// Llama-style). Encoding must not fail; offsets stay inside the input; decoding the ids must not
// fail.
#include "fuzz_common.h"

#include "core/tokenizer/tokenizer.h"

#include <vector>

#ifndef HEADLAB_SOURCE_DIR
#error "HEADLAB_SOURCE_DIR must name the source tree (tokenizer files)"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto tokenizers = [] {
    std::vector<std::shared_ptr<const headlab::core::Tokenizer>> out;
    const std::string root = HEADLAB_SOURCE_DIR;
    for (const char* p : {"/assets/models/default", "/assets/models/talking-heads", "/tests/data/tokenizers/gpt2",
                          "/tests/data/tokenizers/bert-base-uncased", "/tests/data/tokenizers/qwen3",
                          "/tests/data/tokenizers/spm-unigram", "/tests/data/tokenizers/spm-bpe",
                          "/tests/data/hf/llama", "/tests/data/hf/gemma3"})
      try {
        out.push_back(headlab::core::Tokenizer::load(root + p));
      } catch (const std::exception&) {
      }
    if (out.empty()) std::abort();
    return out;
  }();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto& tok : tokenizers) {
    auto e = tok->encode(text, true);
    for (const auto& [begin, end] : e.offsets)
      if (begin < 0 || begin > end || static_cast<size_t>(end) > size) {
        std::fprintf(stderr, "offset (%zu, %zu) outside an input of %zu bytes\n", size_t(begin), size_t(end), size);
        std::abort();
      }
    (void)tok->decode(e.ids);
  }
  return 0;
}
