// Tiny model configs the engine and analysis tests build on: one attention config and a model of
// any stack kind around it (16 wide, 32 positions). Header-only; torch-free.
#pragma once

#include "core/config.h"

#include <optional>

namespace headlab::test {

inline core::AttentionConfig attention(int heads, int kv_heads, int key_size, int value_size) {
  core::AttentionConfig a;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.key_size = key_size;
  a.value_size = value_size;
  return a;
}

// An encoder, decoder or encoder-decoder (cross-attention: 2 heads of 8) of `layers` layers.
inline core::ModelConfig small_model(core::StackKind kind, const core::AttentionConfig& a, int layers, int vocab_size) {
  core::ModelConfig c;
  c.kind = kind;
  c.vocab_size = vocab_size;
  c.hidden_size = 16;
  c.max_positions = 32;
  c.ffn.inner_size = 24;
  core::StackConfig stack{layers, a, std::nullopt, {}, false, std::nullopt};
  if (kind != core::StackKind::Decoder) c.encoder = stack;
  if (kind != core::StackKind::Encoder) {
    c.decoder = stack;
    if (kind == core::StackKind::EncoderDecoder) c.decoder->cross_attention = attention(2, 2, 8, 8);
    c.objective = kind == core::StackKind::Decoder ? "causal" : "seq2seq";
  }
  return c;
}

// Turns a config into a Llama-shaped one: RoPE, RMSNorm, SwiGLU without biases, no q/k/v/o biases in
// the decoder, an untied head.
inline core::ModelConfig llama_like(core::ModelConfig c) {
  c.positions = core::PositionKind::Rope;
  c.norm = core::NormKind::RMSNorm;
  c.ffn.kind = core::FfnKind::SwiGLU;
  c.ffn.activation = core::Activation::Silu;
  c.ffn.bias = false;
  if (c.decoder) {
    c.decoder->attention.qkv_bias = false;
    c.decoder->attention.out_bias = false;
  }
  c.lm_head.tied = false;
  return c;
}

// DeepSeek-V3's router over 4 experts of the config's FFN size: sigmoid scores, 2 groups of which the
// best one by its top-two sum is kept, top-2 experts, a choice bias, a routed scale of 2.5, a shared
// expert of `shared_inner` and a dense first layer of `dense_inner`.
inline core::MoeConfig deepseek_v3_router(int shared_inner, int dense_inner) {
  core::MoeConfig moe;
  moe.experts = 4;
  moe.top_k = 2;
  moe.shared_inner_size = shared_inner;
  moe.scores = core::RouterScores::Sigmoid;
  moe.groups = 2;
  moe.top_groups = 1;
  moe.group_score = core::GroupScore::TopTwoSum;
  moe.choice_bias = true;
  moe.scale = 2.5f;
  moe.dense_layers = {0};
  moe.dense_inner_size = dense_inner;
  return moe;
}

}  // namespace headlab::test
