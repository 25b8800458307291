// The model shapes the benchmarks measure, and their clock. Header-only.
#pragma once

#include "core/config.h"

#include <chrono>

namespace headlab::bench {

// Seconds on the steady clock.
inline double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// GPT-2 small's shapes (12 layers, 768 wide, 12 heads of 64, 3072-wide GELU FFN, 50257 tokens,
// learned positions, tied head without bias); the weights are random.
inline core::ModelConfig gpt2_small_config() {
  core::ModelConfig c;
  c.name = "gpt2-small-shaped";
  c.kind = core::StackKind::Decoder;
  c.objective = "causal";
  c.vocab_size = 50257;
  c.hidden_size = 768;
  c.max_positions = 1024;
  c.positions = core::PositionKind::Learned;
  c.ffn.kind = core::FfnKind::Mlp;
  c.ffn.inner_size = 3072;
  c.ffn.activation = core::Activation::GeluTanh;
  c.ffn.bias = true;
  c.lm_head = {false, true, false};
  core::StackConfig stack;
  stack.layers = 12;
  stack.attention.heads = stack.attention.kv_heads = 12;
  stack.attention.key_size = stack.attention.value_size = 64;
  c.decoder = stack;
  return c;
}

}  // namespace headlab::bench
