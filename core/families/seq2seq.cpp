// Hugging Face encoder-decoder families → ModelConfig + native parameter sources: BART and Marian
// (modeling_bart.py, modeling_marian.py, modeling_mbart.py) and T5 (modeling_t5.py). The numerics tests compare the
// result with independent float64 transcriptions in tests/data/hf/fixtures_seq2seq.py.
#include "core/families/families.h"
#include "core/families/family_parts.h"

#include <cmath>
#include <string>

namespace headlab::core::hf {
namespace {

// A key of an older config that names a variant of the architecture: accepted at the value the
// modeling code runs, refused at any other (a config key that changes numerics is read or refused).
void require_value(const HfConfig& c, const char* key, bool runs, const std::string& arch) {
  if (c.find(key) && c.boolean(key, runs) != runs)
    c.fail(std::string("'") + key + "' " + (runs ? "false" : "true") + " is not supported: " + arch + " runs it " +
           (runs ? "true" : "false"));
}

// modeling_bart.py's BartEncoderLayer (Marian's and mBART's name theirs the same), every piece with a bias.
const LayerTable kBartLayer = {
    {"attn.q", "self_attn.q_proj", Piece::Linear, Bias::Always},
    {"attn.k", "self_attn.k_proj", Piece::Linear, Bias::Always},
    {"attn.v", "self_attn.v_proj", Piece::Linear, Bias::Always},
    {"attn.o", "self_attn.out_proj", Piece::Linear, Bias::Always},
    {"attn_norm", "self_attn_layer_norm", Piece::Norm, Bias::Always},
    {"ffn.up", "fc1", Piece::Linear, Bias::Always},
    {"ffn.down", "fc2", Piece::Linear, Bias::Always},
    {"ffn_norm", "final_layer_norm", Piece::Norm, Bias::Always},
};
// BartDecoderLayer adds the cross attention and its norm.
const LayerTable kBartCrossAttention = {
    {"cross_attn.q", "encoder_attn.q_proj", Piece::Linear, Bias::Always},
    {"cross_attn.k", "encoder_attn.k_proj", Piece::Linear, Bias::Always},
    {"cross_attn.v", "encoder_attn.v_proj", Piece::Linear, Bias::Always},
    {"cross_attn.o", "encoder_attn.out_proj", Piece::Linear, Bias::Always},
    {"cross_norm", "encoder_attn_layer_norm", Piece::Norm, Bias::Always},
};

// modeling_t5.py's T5Block: layer.0 is the self-attention (T5LayerSelfAttention), layer.1 the
// decoder's cross-attention (T5LayerCrossAttention), the last the feed-forward (T5LayerFF); no
// biases anywhere, T5LayerNorm weight only.
const LayerTable kT5SelfAttention = {
    {"attn.q", "layer.0.SelfAttention.q", Piece::Linear},
    {"attn.k", "layer.0.SelfAttention.k", Piece::Linear},
    {"attn.v", "layer.0.SelfAttention.v", Piece::Linear},
    {"attn.o", "layer.0.SelfAttention.o", Piece::Linear},
    {"attn_norm", "layer.0.layer_norm", Piece::Norm},
};
const LayerTable kT5CrossAttention = {
    {"cross_attn.q", "layer.1.EncDecAttention.q", Piece::Linear},
    {"cross_attn.k", "layer.1.EncDecAttention.k", Piece::Linear},
    {"cross_attn.v", "layer.1.EncDecAttention.v", Piece::Linear},
    {"cross_attn.o", "layer.1.EncDecAttention.o", Piece::Linear},
    {"cross_norm", "layer.1.layer_norm", Piece::Norm},
};
// T5LayerFF under its sub-layer (add_layers' infix "layer.1." or "layer.2."): T5DenseActDense, or
// T5DenseGatedActDense (v1.1, FLAN-T5) with its gate wi_0 and up projection wi_1.
const LayerTable kT5Ffn = {
    {"ffn.up", "DenseReluDense.wi", Piece::Linear},
    {"ffn.down", "DenseReluDense.wo", Piece::Linear},
    {"ffn_norm", "layer_norm", Piece::Norm},
};
const LayerTable kT5GatedFfn = {
    {"ffn.gate", "DenseReluDense.wi_0", Piece::Linear},
    {"ffn.up", "DenseReluDense.wi_1", Piece::Linear},
    {"ffn.down", "DenseReluDense.wo", Piece::Linear},
    {"ffn_norm", "layer_norm", Piece::Norm},
};

}  // namespace

// modeling_bart.py / modeling_marian.py: post-LN encoder and decoder (self, causal self, cross
// attention, each followed by its LayerNorm; fc1 → act → fc2), one token table `shared` scaled by
// √d_model when scale_embedding, logits = lm_head(h) + final_logits_bias with lm_head tied to
// `shared`. BART: each stack has its own learned positions (BartLearnedPositionalEmbedding reads row
// t + 2: the importer keeps each table from row 2) and its own layernorm_embedding. Marian: the
// sinusoidal table of MarianSinusoidalPositionalEmbedding (sines in the first half, cosines in the
// second), the same for both stacks, no embedding norm; its stored copy is checked against it.
// mBART: BART's embeddings with pre-LN layers (each sublayer's LayerNorm before it) and a
// LayerNorm at the end of each stack (`layer_norm`).
Layout bart_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const std::string& arch = in.architecture;
  const HasTensor& has = in.has;
  const std::string& family = in.family;
  const bool marian = family == "marian", mbart = family == "mbart";
  // Keys of configs written before the families were split out of one BART class.
  require_value(c, "normalize_before", mbart, arch);
  require_value(c, "add_final_layer_norm", mbart, arch);
  require_value(c, "static_position_embeddings", marian, arch);
  require_value(c, "normalize_embedding", !marian, arch);
  if (marian) {
    if (!c.boolean("share_encoder_decoder_embeddings", true))
      c.fail("share_encoder_decoder_embeddings false is not supported (separate decoder embeddings)");
    // With shared embeddings, modeling_marian.py sizes the decoder and the head by vocab_size and
    // never reads decoder_vocab_size.
  }

  Layout layout;
  ModelConfig& m = layout.config;
  m.family = family;
  m.kind = StackKind::EncoderDecoder;
  m.objective = "seq2seq";
  m.vocab_size = c.integer("vocab_size");
  m.hidden_size = c.integer("d_model");
  const int offset = marian ? 0 : 2;  // BartLearnedPositionalEmbedding.offset
  const int position_rows = c.integer("max_position_embeddings", 1024) + offset;
  m.max_positions = position_rows - offset;
  m.positions = marian ? PositionKind::Sinusoidal : PositionKind::Learned;
  m.sinusoid_layout = SinusoidLayout::Halves;
  m.stack_embeddings = !marian;
  m.norm = NormKind::LayerNorm;
  m.norm_eps = 1e-5f;  // nn.LayerNorm's default: BART and Marian pass none
  m.norm_placement = mbart ? NormPlacement::Pre : NormPlacement::Post;
  m.embedding_norm = !marian;
  m.final_norm = mbart;
  if (c.boolean("scale_embedding", false)) m.embedding_scale = static_cast<float>(std::sqrt(double(m.hidden_size)));
  const Activation act = activation_from(c, "activation_function", "gelu");
  const int encoder_ffn = c.integer("encoder_ffn_dim"), decoder_ffn = c.integer("decoder_ffn_dim");
  if (encoder_ffn != decoder_ffn)
    c.fail("encoder_ffn_dim " + std::to_string(encoder_ffn) + " ≠ decoder_ffn_dim " + std::to_string(decoder_ffn) +
           " is not supported (HeadLab's stacks share one feed-forward size)");
  m.ffn = ffn_config(FfnKind::Mlp, encoder_ffn, act, true);
  auto stack = [&](const char* layers_key, const char* heads_key) {
    StackConfig st;
    st.layers = c.integer(layers_key);
    const int heads = c.integer(heads_key);
    const int head_dim = head_dim_of(c, m.hidden_size, heads, "d_model", heads_key);
    st.attention = attention(heads, heads, head_dim, true, true);  // scaling = head_dim^-0.5
    return st;
  };
  m.encoder = stack("encoder_layers", "encoder_attention_heads");
  m.decoder = stack("decoder_layers", "decoder_attention_heads");
  m.decoder->cross_attention = m.decoder->attention;
  // mBART's configs may leave it null (its decoder starts from the target language's code): the
  // tokenizer's begin token then stands in.
  if (!mbart || c.find("decoder_start_token_id"))
    m.decoder_start_id = c.integer("decoder_start_token_id", marian ? c.integer("pad_token_id", 0) : 2);

  Sources s(has);
  // *ForConditionalGeneration / MarianMTModel put the model under "model."; the bare model does not.
  const std::string p = has("model.shared.weight") || has("model.encoder.embed_tokens.weight") ? "model." : "";
  s.copy("tokens.weight", s.first_present({p + "shared.weight", p + "encoder.embed_tokens.weight",
                                           p + "decoder.embed_tokens.weight"}));
  if (marian) {
    layout.fixed_tables[p + "encoder.embed_positions.weight"] = "sinusoid";
    layout.fixed_tables[p + "decoder.embed_positions.weight"] = "sinusoid";
  } else {
    for (const char* st : {"encoder", "decoder"}) {
      TensorSource positions{p + st + ".embed_positions.weight", {position_rows, m.hidden_size}, 0, offset,
                             m.max_positions, false};
      s.add(std::string(st) == "encoder" ? "positions.weight" : "decoder_positions.weight", positions);
    }
    s.norm("embed_norm", p + "encoder.layernorm_embedding", true);
    s.norm("decoder_embed_norm", p + "decoder.layernorm_embedding", true);
  }
  if (mbart) {
    s.norm("encoder_norm", p + "encoder.layer_norm", true);
    s.norm("decoder_norm", p + "decoder.layer_norm", true);
  }
  add_layers(s, "encoder", m.encoder->layers, p + "encoder.layers.", kBartLayer);
  add_layers(s, "decoder", m.decoder->layers, p + "decoder.layers.", kBartLayer);
  add_layers(s, "decoder", m.decoder->layers, p + "decoder.layers.", kBartCrossAttention);
  const bool tied = c.boolean("tie_word_embeddings", true);
  const bool head = has("final_logits_bias") || has("lm_head.weight");
  if (head) {
    m.lm_head = LmHeadConfig{false, tied, has("final_logits_bias")};
    if (m.lm_head.bias) s.add("head_bias", TensorSource{"final_logits_bias", {1, m.vocab_size}, -1, 0, 0, false});
    if (!tied) s.copy("head_weight", "lm_head.weight");
  } else {
    m.lm_head = LmHeadConfig{false, true, false};
    layout.note = "no LM head in the file: logits = final hidden · token embeddingsᵀ";
  }
  layout.sources = s.take();
  layout.ignorable = [p, tied](const std::string& name) {
    // embed_tokens of each stack and a tied lm_head alias `shared`.
    return name == p + "encoder.embed_tokens.weight" || name == p + "decoder.embed_tokens.weight" ||
           name == p + "shared.weight" || (tied && name == "lm_head.weight");
  };
  return layout;
}

// modeling_t5.py: pre-norm encoder and decoder with T5LayerNorm (RMS without the mean, weight only),
// no biases anywhere, logits q·kᵀ without scaling plus the relative position bias of each stack's
// first block (a bidirectional bucketing in the encoder, a causal one in the decoder; none in the
// cross attention), each stack ending in final_layer_norm. Feed-forward: wo(relu(wi(x))), or for
// feed_forward_proj "gated-gelu" (v1.1) wo(gelu_new(wi_0(x)) ⊙ wi_1(x)). With tie_word_embeddings
// (transformers 5: scale_decoder_outputs) the decoder output is scaled by d_model^-0.5 before the head.
Layout t5_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const std::string& arch = in.architecture;
  const HasTensor& has = in.has;
  Layout layout;
  ModelConfig& m = layout.config;
  m.family = "t5";
  m.kind = StackKind::EncoderDecoder;
  m.objective = "seq2seq";
  m.vocab_size = c.integer("vocab_size");
  m.hidden_size = c.integer("d_model");
  // Relative positions need no table; the length T5 was trained at bounds what HeadLab feeds it.
  m.max_positions = c.integer("n_positions", 512);
  m.positions = PositionKind::None;
  m.norm = NormKind::RMSNorm;
  m.norm_eps = static_cast<float>(c.number("layer_norm_epsilon", 1e-6));
  m.norm_placement = NormPlacement::Pre;
  m.final_norm = true;
  // T5Config: "gated-ACT" or "ACT"; "gated-gelu" runs gelu_new. The dense_act_fn and is_gated_act
  // it derives are saved in config.json too, and read back they win (PretrainedConfig sets the
  // leftover keys after T5Config's own derivation).
  const std::string proj = c.string("feed_forward_proj", "relu");
  const bool proj_gated = proj.rfind("gated-", 0) == 0;
  std::string act_name = proj_gated ? proj.substr(6) : proj;
  if (proj == "gated-gelu") act_name = "gelu_new";
  const bool gated = c.boolean("is_gated_act", proj_gated);
  act_name = c.string("dense_act_fn", act_name);
  Activation act;
  if (act_name == "relu") act = Activation::Relu;
  else if (act_name == "gelu") act = Activation::Gelu;
  else if (act_name == "gelu_new" || act_name == "gelu_pytorch_tanh" || act_name == "gelu_fast") act = Activation::GeluTanh;
  else if (act_name == "silu" || act_name == "swish") act = Activation::Silu;
  else c.fail("activation '" + act_name + "' (feed_forward_proj '" + proj +
              "', dense_act_fn) is not supported (relu, gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, silu)");
  m.ffn = ffn_config(gated ? FfnKind::SwiGLU : FfnKind::Mlp, c.integer("d_ff"), act, false);
  const int heads = c.integer("num_heads");
  const int d_kv = c.integer("d_kv");
  RelativeBias bias;
  bias.buckets = c.integer("relative_attention_num_buckets", 32);
  bias.max_distance = c.integer("relative_attention_max_distance", 128);
  auto stack = [&](int layers) {
    StackConfig st;
    st.layers = layers;
    st.attention = attention(heads, heads, d_kv, false, false);
    st.attention.scale = 1.0f;  // T5 folds the 1/√d_kv into the initialisation of q
    st.attention.relative_bias = bias;
    return st;
  };
  const int layers = c.integer("num_layers");
  m.encoder = stack(layers);
  m.decoder = stack(c.integer("num_decoder_layers", layers));
  m.decoder->cross_attention = attention(heads, heads, d_kv, false, false);
  m.decoder->cross_attention->scale = 1.0f;
  m.decoder_start_id = c.integer("decoder_start_token_id", c.integer("pad_token_id", 0));
  // transformers 4.x: tie_word_embeddings decides both the tie and the d_model^-0.5 rescale.
  // transformers 5.x writes scale_decoder_outputs for the rescale and always says tied, keeping a
  // stored lm_head.weight as the head (T5 v1.1 / FLAN-T5 saved by 5.x).
  const bool v5 = c.contains("scale_decoder_outputs");
  const bool tied = v5 ? !has("lm_head.weight") : c.boolean("tie_word_embeddings", true);
  const bool scale_outputs = v5 ? c.boolean("scale_decoder_outputs", true) : tied;

  Sources s(has);
  s.copy("tokens.weight", s.first_present({"shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight"}));
  const LayerTable& ffn = gated ? kT5GatedFfn : kT5Ffn;
  add_layers(s, "encoder", m.encoder->layers, "encoder.block.", kT5SelfAttention);
  add_layers(s, "encoder", m.encoder->layers, "encoder.block.", ffn, {}, "layer.1.");
  add_layers(s, "decoder", m.decoder->layers, "decoder.block.", kT5SelfAttention);
  add_layers(s, "decoder", m.decoder->layers, "decoder.block.", kT5CrossAttention);
  add_layers(s, "decoder", m.decoder->layers, "decoder.block.", ffn, {}, "layer.2.");
  for (const char* st : {"encoder", "decoder"}) {
    // The relative-position buckets live in the first layer's self-attention and serve every layer.
    s.copy(std::string(st) + ".0.attn.relative_bias",
           std::string(st) + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight");
    s.norm(std::string(st) + "_norm", std::string(st) + ".final_layer_norm", false);
  }
  const bool has_head = arch == "T5ForConditionalGeneration" || has("lm_head.weight");
  if (has_head) {
    m.lm_head = LmHeadConfig{false, tied, false};
    if (scale_outputs) m.lm_head.input_scale = static_cast<float>(1.0 / std::sqrt(double(m.hidden_size)));
    if (!tied) s.copy("head_weight", "lm_head.weight");
  } else {
    m.lm_head = LmHeadConfig{false, true, false};
    layout.note = "no LM head in the file: logits = final hidden · token embeddingsᵀ";
  }
  layout.sources = s.take();
  layout.ignorable = [tied](const std::string& name) {
    // Old conversions carry a cross-attention position bias that T5 never reads
    // (T5ForConditionalGeneration._keys_to_ignore_on_load_unexpected).
    return name == "encoder.embed_tokens.weight" || name == "decoder.embed_tokens.weight" ||
           name == "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight" ||
           name == "shared.weight" || (tied && name == "lm_head.weight");
  };
  return layout;
}

}  // namespace headlab::core::hf
