// The transformer stacks built from a ModelConfig: embeddings, encoder and/or decoder blocks,
// final norms and the LM head. Parameter names are the native weight names
// ("encoder.0.attn.q.weight", …; see core/README.md, "Model folder format").
#pragma once

#include "core/model/attention.h"
#include "core/config.h"
#include "core/controls.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>

#include <string>
#include <vector>

namespace headlab::core {

// LayerNorm or RMSNorm scaled by (weight_offset + weight); with `lrp` the denominator is a constant
// (analysis/LRP.md rule 2).
class NormImpl : public torch::nn::Module {
 public:
  NormImpl(NormKind kind, int64_t size, float eps, float weight_offset = 0.0f);
  torch::Tensor forward(const torch::Tensor& x, bool lrp = false);
  torch::Tensor weight, bias;

 private:
  NormKind kind_;
  float eps_;
  float weight_offset_;
};
TORCH_MODULE(Norm);

// Element-wise activation; with `lrp` it passes relevance unchanged (analysis/LRP.md rule 3).
torch::Tensor activate(const torch::Tensor& z, Activation activation, bool lrp);

// GELU/ReLU MLP, SwiGLU (Shazeer 2020): down(act(gate(x)) ⊙ up(x)), or gpt-oss's clamped SwiGLU
// (FfnConfig::limit).
class FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(const FfnConfig& config, int64_t hidden_size);
  torch::Tensor forward(const torch::Tensor& x, bool lrp = false);
  Linear up{nullptr}, gate{nullptr}, down{nullptr};

 private:
  FfnConfig config_;
};
TORCH_MODULE(FeedForward);

// A mixture-of-experts FFN (MoeConfig): "router", "experts.{e}" and, when configured, "shared".
class MixtureImpl : public torch::nn::Module {
 public:
  MixtureImpl(const FfnConfig& config, int64_t hidden_size);
  // x [B, T, D] → [B, T, D]. `routing`, when given, receives each token's experts [B, T, top_k]
  // (int64, highest router weight first). With `lrp` the router's weights are constants (analysis/LRP.md
  // rule 1, as attention weights).
  torch::Tensor forward(const torch::Tensor& x, bool lrp = false, torch::Tensor* routing = nullptr);
  Linear router{nullptr};
  torch::Tensor choice_bias;  // MoeConfig::choice_bias: added to the scores that choose [experts]
  torch::nn::ModuleList experts{nullptr};
  FeedForward shared{nullptr};

 private:
  MoeConfig moe_;
};
TORCH_MODULE(Mixture);

// Everything one block needs besides its input.
struct BlockCall {
  bool causal = false;
  torch::Tensor padding;         // [B, T] bool, true = padding (optional)
  torch::Tensor memory;          // [B, S, D] encoder output (cross-attention only)
  torch::Tensor memory_padding;  // [B, S] bool (optional)
  const HeadControls* self_controls = nullptr;
  const HeadControls* cross_controls = nullptr;
  torch::Tensor self_gates, cross_gates;  // AttentionCall::head_gates of this layer [B or 1, h_v]
  unsigned capture = kCaptureNone;
  RopeTables rope;
  bool lrp = false;
  // Generation (core/model/kv_cache.h): the new tokens start at `position`; their self-attention keys and
  // values join `self_cache`, and cross-attention reads `cross_cache` once it is filled.
  LayerCache* self_cache = nullptr;
  LayerCache* cross_cache = nullptr;
  int64_t position = 0;
  // Activation patches of this layer (core/model/patch.h): self-attention sites and the FFN's output.
  const LayerPatches* patches = nullptr;
  // Set: receives the FFN's output as it joins the residual stream [B, T, D] (after its patches).
  torch::Tensor* mlp_capture = nullptr;
  // Set, in a mixture-of-experts block: receives each token's experts [B, T, top_k].
  torch::Tensor* routing_capture = nullptr;
};

class BlockImpl : public torch::nn::Module {
 public:
  // rotary = false: a NoPE layer (StackConfig::nope_layers) whose self-attention skips RoPE.
  // layer: its index in the stack, which decides whether it is one of StackConfig::local.
  BlockImpl(const ModelConfig& model, const StackConfig& stack, bool rotary = true, int layer = -1);
  // x [B, T, D] → [B, T, D]
  torch::Tensor forward(const torch::Tensor& x, const BlockCall& call, AttentionStages* self_stages,
                        AttentionStages* cross_stages);

  // The FFN sublayer without its norms (the dense FFN or the mixture of experts); x [B, T, D].
  torch::Tensor feed_forward(const torch::Tensor& x, bool lrp = false, torch::Tensor* routing = nullptr);
  bool has_ffn() const { return ffn || moe; }

  Attention attn{nullptr};
  Attention cross_attn{nullptr};
  FeedForward ffn{nullptr};  // a dense FFN ("ffn"), or
  Mixture moe{nullptr};      // a mixture of experts (also "ffn": FfnConfig::moe)
  Norm attn_norm{nullptr}, cross_norm{nullptr}, ffn_norm{nullptr};
  // ModelConfig::sublayer_output_norm: norms of each sublayer's output, before the residual sum.
  Norm attn_out_norm{nullptr}, cross_out_norm{nullptr}, ffn_out_norm{nullptr};

 private:
  bool pre_norm_;
  bool parallel_;    // ModelConfig::parallel_residual
  bool rotary_;      // false in a NoPE layer: self-attention ignores BlockCall::rope
  bool local_rope_;  // a StackConfig::local layer with its own RoPE base: reads rope.local_cos/sin
};
TORCH_MODULE(Block);

class TransformerImpl : public torch::nn::Module {
 public:
  explicit TransformerImpl(const ModelConfig& config);

  const ModelConfig& config() const { return config_; }

  // ids [B, T] (int64) → [B, T, D] embeddings (tokens + positions + types, embedding norm, and the
  // projection E → D of factorised embeddings); the tokens sit at positions [offset, offset + T).
  // `stack` = Stack::Decoder reads the decoder's own position table and norm where the model has them
  // (ModelConfig::stack_embeddings), else the shared ones.
  torch::Tensor embed(const torch::Tensor& ids, const torch::Tensor& token_types = {}, bool lrp = false,
                      int64_t offset = 0, Stack stack = Stack::Encoder);
  // The position table and embedding norm that `stack` reads: the decoder's own where the model has
  // them (ModelConfig::stack_embeddings), else the shared ones; either may be empty.
  Embedding& position_table(Stack stack);
  Norm& embedding_norm(Stack stack);
  // Rotary tables for T positions, empty unless the model uses RoPE (with the local layers' tables
  // when StackConfig::local sets a RoPE base of its own).
  RopeTables rope_tables(int64_t T, Stack stack) const;
  // hidden [B, T, D] after the last layer → logits [B, T, V] (final norm + LM head).
  torch::Tensor head(const torch::Tensor& hidden, Stack stack, bool lrp = false);

  // The distinct blocks of the encoder or the decoder (Stack::Cross: the decoder's): one per layer, or a single one when the stack
  // shares its layers (StackConfig::shared_layers). Run layer l with block(stack, l).
  torch::nn::ModuleList& blocks(Stack stack);
  // The block that runs layer `layer` (the same block for every layer of a shared stack).
  Block block(Stack stack, int layer);
  int layer_count(Stack stack) const;

  Embedding tokens{nullptr}, positions{nullptr}, token_types{nullptr};
  Norm embed_norm{nullptr};
  // ModelConfig::stack_embeddings: the decoder's own position table and embedding norm.
  Embedding decoder_positions{nullptr};
  Norm decoder_embed_norm{nullptr};
  Linear embed_project{nullptr};  // factorised embeddings: E → D
  torch::nn::ModuleList encoder_layers{nullptr}, decoder_layers{nullptr};
  Norm encoder_final_norm{nullptr}, decoder_final_norm{nullptr};
  Linear head_transform{nullptr};
  Norm head_norm{nullptr};
  torch::Tensor head_weight;  // [V, D], only when not tied
  torch::Tensor head_bias;    // [V]
  torch::Tensor sinusoid;     // [max_positions, E] buffer for sinusoidal positions (ModelConfig::sinusoid_layout)

 private:
  ModelConfig config_;
};
TORCH_MODULE(Transformer);

// Fills every parameter with HeadLab's initialisation for training from scratch
// (normal(0, 0.02) for projections and embeddings, norms at 1, biases at 0, mixing near identity).
void initialize_weights(Transformer& model, uint64_t seed);

// All parameters and buffers that belong in a weight file, by native name.
std::vector<std::pair<std::string, torch::Tensor>> named_weights(const Transformer& model);

}  // namespace headlab::core
