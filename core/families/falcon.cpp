// Falcon (modeling_falcon.py): Falcon-7B's multi-query parallel block and Falcon-40B/180B's "new
// decoder architecture" with grouped key/value heads → ModelConfig + native parameter sources.
#include "core/families/families.h"
#include "core/families/family_parts.h"
#include "core/families/rope_parameters.h"

#include <string>

namespace headlab::core::hf {

using nlohmann::json;

// modeling_falcon.py (FalconForCausalLM). Three layouts of one fused query_key_value [rows, D], split
// with (grouped) slices as FalconAttention._split_heads reads it:
//   new_decoder_architecture: per key/value group g, its heads/kv query heads, then its key and value
//     ([kv, heads/kv + 2, head_dim] rows); the layer always runs attention and MLP side by side, from
//     ln_attn and ln_mlp (num_ln_in_parallel_attn 2) or one input_layernorm;
//   multi_query: every query head, then one key and one value head ([heads + 2, head_dim] rows);
//   otherwise per head its q, k, v ([heads, 3, head_dim] rows).
// Without new_decoder_architecture, parallel_attn runs both from input_layernorm; otherwise the block
// is sequential with post_attention_layernorm before the MLP. RoPE over the whole head (rotate-half);
// `bias` on every projection; a GELU MLP of ffn_hidden_size (4·hidden); ln_f; the head tied by default.
// ALiBi Falcons (falcon-rw) add the bias before the 1/√head_dim scale, which the engine's ALiBi does
// not: refused by name.
Layout falcon_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const int max_positions = c.integer("max_position_embeddings", 2048);
  if (c.boolean("alibi", false))
    c.fail("alibi true is not supported (Falcon adds ALiBi before the 1/sqrt(head_dim) scale; HeadLab after it)");
  const RopeSettings rope = read_rope(c, max_positions, 10000.0);
  if (rope.rotary_fraction != 1.0) c.fail("partial_rotary_factor is not supported (modeling_falcon.py rotates the whole head)");
  const bool new_arch = c.boolean("new_decoder_architecture", false);
  const bool multi_query = c.boolean("multi_query", true);
  const bool parallel = c.boolean("parallel_attn", true);
  const bool bias = c.boolean("bias", false);
  Layout layout = rope_decoder_layout(c, in.family, 2048, rope.theta);
  ModelConfig& m = layout.config;
  if (c.find("n_embed")) m.hidden_size = c.integer("n_embed");
  m.rope_scaling = rope.scaling;
  m.norm = NormKind::LayerNorm;
  m.norm_eps = static_cast<float>(c.number("layer_norm_epsilon", 1e-5));
  m.final_norm = true;
  m.parallel_residual = new_arch || parallel;
  const int D = m.hidden_size;
  const int inner = c.find("ffn_hidden_size") ? c.integer("ffn_hidden_size") : 4 * D;
  m.ffn = ffn_config(FfnKind::Mlp, inner, activation_from(c, "activation", "gelu"), bias);
  const int heads = c.integer("num_attention_heads");
  if (heads < 1 || D % heads != 0)
    c.fail("hidden_size (" + std::to_string(D) + ") must be a multiple of num_attention_heads (" + std::to_string(heads) + ")");
  const int hd = D / heads;
  const int kv = new_arch ? c.integer("num_kv_heads", heads) : multi_query ? 1 : heads;
  if (kv < 1 || heads % kv != 0)
    c.fail("num_kv_heads (" + std::to_string(kv) + ") must divide num_attention_heads (" + std::to_string(heads) + ")");
  StackConfig stack;
  stack.layers = c.integer("num_hidden_layers");
  stack.attention = attention(heads, kv, hd, bias, bias);
  m.decoder = stack;

  Sources s(in.has);
  const std::string p = in.has("transformer.word_embeddings.weight") ? "transformer." : "";
  s.copy("tokens.weight", p + "word_embeddings.weight");
  const int two_norms = c.integer("num_ln_in_parallel_attn", new_arch ? 2 : 1);
  if (two_norms != 1 && two_norms != 2) c.fail("num_ln_in_parallel_attn must be 1 or 2, got " + std::to_string(two_norms));
  const LayerTable rows = {
      {"attn.o", "self_attention.dense", Piece::Linear, Bias::Out},
      {"ffn.up", "mlp.dense_h_to_4h", Piece::Linear, Bias::Ffn},
      {"ffn.down", "mlp.dense_4h_to_h", Piece::Linear, Bias::Ffn},
      {"attn_norm", new_arch && two_norms == 2 ? "ln_attn" : "input_layernorm", Piece::Norm, Bias::Always},
      {"ffn_norm", new_arch ? (two_norms == 2 ? "ln_mlp" : "input_layernorm")
                   : parallel ? "input_layernorm" : "post_attention_layernorm",
       Piece::Norm, Bias::Always},
  };
  add_layers(s, "decoder", stack.layers, p + "h.", rows, {bias, bias, bias});
  const int64_t q_rows = int64_t(heads) * hd, group = heads / kv;
  const int64_t fused = q_rows + 2 * int64_t(kv) * hd;
  for (int l = 0; l < stack.layers; ++l) {
    const std::string n = "decoder." + std::to_string(l) + ".attn.";
    const std::string h = p + "h." + std::to_string(l) + ".self_attention.query_key_value.";
    for (const char* part : {"weight", "bias"}) {
      if (std::string(part) == "bias" && !bias) break;
      const bool w = std::string(part) == "weight";
      const std::vector<int64_t> shape = w ? std::vector<int64_t>{fused, D} : std::vector<int64_t>{fused};
      auto slice = [&](int64_t begin, int64_t count, int64_t groups) {
        TensorSource t;
        t.name = h + part;
        t.stored_shape = shape;
        t.slice_dim = 0, t.slice_begin = begin, t.slice_count = count, t.slice_groups = groups;
        return t;
      };
      if (new_arch) {  // [kv, group + 2, hd]
        s.add(n + "q." + part, slice(0, group * hd, kv));
        s.add(n + "k." + part, slice(group * hd, hd, kv));
        s.add(n + "v." + part, slice((group + 1) * hd, hd, kv));
      } else if (multi_query) {  // [heads + 2, hd]
        s.add(n + "q." + part, slice(0, q_rows, 0));
        s.add(n + "k." + part, slice(q_rows, hd, 0));
        s.add(n + "v." + part, slice(q_rows + hd, hd, 0));
      } else {  // [heads, 3, hd]
        s.add(n + "q." + part, slice(0, hd, heads));
        s.add(n + "k." + part, slice(hd, hd, heads));
        s.add(n + "v." + part, slice(2 * hd, hd, heads));
      }
    }
  }
  s.norm("decoder_norm", p + "ln_f", true);
  const bool tied = add_decoder_head(layout, s, in, true);  // FalconConfig ties by default
  layout.sources = s.take();
  layout.ignorable = [tied](const std::string& name) {
    return ends_with(name, "rotary_emb.inv_freq") || (tied && name == "lm_head.weight");
  };
  return layout;
}

}  // namespace headlab::core::hf
