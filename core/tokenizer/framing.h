// How a tokenizer frames a sentence — the special tokens encode(text, true) puts around it through
// its post-processor (BERT: [CLS] … [SEP]; Llama: <s> …; nothing for GPT-2's byte-level BPE or a
// tokenizer saved without one). The trainer and the head measurements frame their inputs this way,
// so a model is trained, measured and run on the same kind of input.
#pragma once

#include "core/config.h"
#include "core/tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace headlab::core {

struct SentenceFrame {
  std::optional<int64_t> begin, end;  // the ids before and after the sentence, if any
  bool framed() const { return begin.has_value() || end.has_value(); }
};

inline SentenceFrame sentence_frame(const Tokenizer& tokenizer) {
  const char* probe = "a";
  const auto bare = tokenizer.encode(probe, false).ids, full = tokenizer.encode(probe, true).ids;
  SentenceFrame f;
  if (full.size() <= bare.size()) return f;
  // The bare ids sit inside the framed ones; what precedes them is the prefix.
  size_t at = 0;
  while (at + bare.size() <= full.size() && !std::equal(bare.begin(), bare.end(), full.begin() + at)) ++at;
  if (at + bare.size() > full.size()) return f;  // not a plain frame: treat as none
  if (at > 0) f.begin = full.front();
  if (at + bare.size() < full.size()) f.end = full.back();
  return f;
}

// The token a decoder's text starts from: [CLS] / <s>, else the begin-of-sequence token — what an
// encoder-decoder's decoder is trained to start from (core/train/data.h). nullopt when there is none.
inline std::optional<int64_t> decoder_start_id(const Tokenizer& tokenizer) {
  return tokenizer.cls_id() ? tokenizer.cls_id() : tokenizer.bos_id();
}

// An encoder-decoder's start token: the config's (Hugging Face's decoder_start_token_id: BART's
// </s>, T5's and Marian's <pad>), else the tokenizer's begin token.
inline std::optional<int64_t> decoder_start_id(const ModelConfig& config, const Tokenizer& tokenizer) {
  return config.decoder_start_id ? config.decoder_start_id : decoder_start_id(tokenizer);
}

// An encoder-decoder's encoder input. Imported Hugging Face models read their text as their
// tokenizer frames it (T5 and Marian append </s>, BART wraps it in <s> … </s>), as the
// `transformers` tokenizer call does; HeadLab's own models are trained on the bare ids.
inline std::vector<int64_t> encoder_input_ids(const ModelConfig& config, const Tokenizer& tokenizer,
                                              std::string_view text) {
  return tokenizer.encode(text, config.family != "native").ids;
}

// A causal model's prompt. An imported Hugging Face decoder reads the text's ids after the
// begin-of-sequence token when the tokenizer has one (its training texts followed one). HeadLab's own
// causal models are trained on bare ids (core/train/data.cpp packs no begin token), so they read the
// bare ids — as the window and `headlab run` give them.
inline std::vector<int64_t> causal_prompt_ids(const ModelConfig& config, const Tokenizer& tokenizer,
                                              std::string_view text) {
  std::vector<int64_t> ids = tokenizer.encode(text, false).ids;
  if (config.family == "native") return ids;
  if (auto bos = tokenizer.bos_id(); bos && (ids.empty() || ids.front() != *bos)) ids.insert(ids.begin(), *bos);
  return ids;
}

}  // namespace headlab::core
