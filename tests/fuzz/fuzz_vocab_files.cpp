// vocab.txt (WordPiece) and vocab.json + merges.txt (byte-level BPE): the input is split at its
// first NUL byte into the two files; each folder is loaded and, if it loads, encodes a text.
#include "fuzz_common.h"

#include "core/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t cut = all.find('\0');
  const std::string_view first = all.substr(0, cut), second = cut == std::string_view::npos ? "" : all.substr(cut + 1);
  static const fs::path wp = headlab::fuzz::scratch_dir() / "wordpiece", bpe = headlab::fuzz::scratch_dir() / "bpe";
  fs::create_directories(wp);
  fs::create_directories(bpe);
  headlab::fuzz::write_scratch("wordpiece/vocab.txt", first);
  headlab::fuzz::write_scratch("bpe/vocab.json", first);
  headlab::fuzz::write_scratch("bpe/merges.txt", second);
  for (const auto& dir : {wp, bpe})
    headlab::fuzz::expect_clean([&] {
      auto tok = headlab::core::Tokenizer::load(dir.string());
      auto e = tok->encode("Hello, world: the [MASK] sat. \xc3\xa9\xe6\x9d\xb1", true);
      (void)tok->decode(e.ids);
    });
  return 0;
}
