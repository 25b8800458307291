// tokenizer.json: any bytes as the document; a tokenizer that loads must then encode and decode a
// fixed text (and the input itself) without failing.
#include "fuzz_common.h"

#include "core/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  headlab::fuzz::expect_clean([&] {
    auto tok = headlab::core::Tokenizer::from_json(text, "fuzz");
    for (std::string_view s : {std::string_view("The cat sat on the [MASK]. Ünïcödé 東京 🙂"), text.substr(0, 256)}) {
      auto e = tok->encode(s, true);
      (void)tok->decode(e.ids);
    }
  });
  return 0;
}
