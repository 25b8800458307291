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

// How a model reads a text — the one rule for the window's input, `run`, `patch`, `predict`,
// `generate` and the dataset analysis, so every one of them gives the same text the same ids:
//  - a model imported from Hugging Face reads the text as its tokenizer frames it, as `transformers`'
//    tokenizer(text) does: the post-processor's template (Llama's and Gemma's begin token, BERT's
//    [CLS] … [SEP], T5's and Marian's closing </s>; GPT-2's and Qwen's add nothing);
//  - a HeadLab model as it was trained: an encoder (a masked LM) framed by its tokenizer ([CLS] …
//    [SEP], as the trainer frames its examples), a causal model and an encoder-decoder's encoder the
//    bare ids (core/train/data.cpp packs no begin token).
// A token added here has no characters: offsets {0, 0}, marked special. Throws std::invalid_argument
// naming the token when the tokenizer gives an id the model has no embedding for (a folder whose
// tokenizer files do not belong to its weights).
Encoding model_encoding(const ModelConfig& config, const Tokenizer& tokenizer, std::string_view text);

// The check model_encoding makes, for a text read without it (`run --no-special-tokens`): throws
// std::invalid_argument naming the first token whose id is outside the model's vocabulary.
void check_encoding_fits(const ModelConfig& config, const Tokenizer& tokenizer, const Encoding& encoding);

// An encoder-decoder's encoder input (model_encoding).
inline std::vector<int64_t> encoder_input_ids(const ModelConfig& config, const Tokenizer& tokenizer,
                                              std::string_view text) {
  return model_encoding(config, tokenizer, text).ids;
}

// A causal model's prompt (model_encoding).
inline std::vector<int64_t> causal_prompt_ids(const ModelConfig& config, const Tokenizer& tokenizer,
                                              std::string_view text) {
  return model_encoding(config, tokenizer, text).ids;
}

}  // namespace headlab::core
