// ModelConfig: what a transformer stack is, in HeadLab's versioned config.json schema
// (documented in core/README.md, "Model folder format"). Torch-free: the GUI may include it.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headlab::core {

inline constexpr int kConfigFormatVersion = 1;

enum class StackKind { Encoder, Decoder, EncoderDecoder };
enum class NormKind { LayerNorm, RMSNorm };
enum class NormPlacement { Pre, Post };
// RopeLearned: RoPE in every attention plus a learned absolute table added to the embeddings.
enum class PositionKind { None, Learned, Sinusoidal, Rope, RopeLearned };
// None: an attention-only model (Elhage et al. 2021's two-layer models): blocks have no FFN and no
// norm before it. ClampedSwiGLU: gpt-oss's GLU (FfnConfig::limit).
enum class FfnKind { Mlp, SwiGLU, None, ClampedSwiGLU };
enum class Activation { Gelu, GeluTanh, Relu, Silu };
enum class Scoring { Dot, Additive };
// Sinusoidal position tables (Vaswani et al. 2017) with each frequency's sine and cosine side by
// side (sin, cos, sin, cos, …: "interleaved") or all sines then all cosines ("halves": fairseq and
// Marian's MarianSinusoidalPositionalEmbedding).
enum class SinusoidLayout { Interleaved, Halves };

// Scaled RoPE: the rope types transformers reads from rope_scaling / rope_parameters, each rescaling
// plain RoPE's inverse frequencies θ^(−2i/rot) for a longer context (core/model/rope.h):
//   Linear  (Chen et al. 2023, position interpolation): every frequency / factor.
//   Dynamic (dynamic NTK): a run of T > max_positions tokens uses the base
//           θ · (factor·T/max_positions − (factor − 1))^(rot/(rot−2)); shorter runs are plain RoPE.
//   Llama3  (Llama 3.1): wavelengths above original_max_positions/low_freq_factor / factor, below
//           original_max_positions/high_freq_factor kept, a linear blend in (original/λ) between.
//   Yarn    (Peng et al. 2023): per frequency a ramp from extrapolation (kept) to interpolation
//           (/ factor) between the dimensions that turn beta_fast and beta_slow times in
//           original_max_positions tokens (rounded outward when `truncate`), and cos and sin × attention_factor.
enum class RopeScalingKind { None, Linear, Dynamic, Llama3, Yarn };
struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::None;
  double factor = 1.0;
  int original_max_positions = 0;                        // llama3, yarn
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  double beta_fast = 32.0, beta_slow = 1.0;              // yarn
  bool truncate = true;                                  // yarn
  double attention_factor = 1.0;                         // yarn (resolved when the folder is read)
  bool operator==(const RopeScaling& o) const {
    return kind == o.kind && factor == o.factor && original_max_positions == o.original_max_positions &&
           low_freq_factor == o.low_freq_factor && high_freq_factor == o.high_freq_factor &&
           beta_fast == o.beta_fast && beta_slow == o.beta_slow && truncate == o.truncate &&
           attention_factor == o.attention_factor;
  }
  bool operator!=(const RopeScaling& o) const { return !(*this == o); }
};

// Talking-heads attention (Shazeer et al. 2020, arXiv 2003.02436): h_k key heads produce logits J,
// mixed by P_l [h_k, h] into h softmax heads, whose weights W are mixed by P_w [h, h_v] into h_v
// value heads: O = einsum(U, V) with U = einsum(W, P_w).
struct TalkingHeads {
  int key_heads = 0;      // h_k
  int softmax_heads = 0;  // h
  int value_heads = 0;    // h_v
};

// Collaborative attention (Cordonnier et al. 2020, arXiv 2006.16362): shared projections
// W̃_Q, W̃_K of width D̃_k and per-head mixing vectors m_i. With biases, head i's logits
// (X W̃_Q + b̃_Q) diag(m_i) (X W̃_K + b̃_K)ᵀ equal, up to terms constant along the keys (which the
// softmax cancels), X W̃_Q diag(m_i) W̃_Kᵀ Xᵀ + 1 r_iᵀ Xᵀ with r_i = W̃_K (b̃_Q ⊙ m_i): the paper's
// re-parametrisation keeps one free content bias r_i ∈ R^D per head (`content_bias` [h, D], present
// when qkv_bias) and no query/key biases. The default scale is 1/sqrt(D̃_k / h), as in the
// authors' code.
struct Collaborative {
  int shared_key_size = 0;  // D̃_k
};

// Which keys a query may see (Longformer, Beltagy et al. 2020): a sliding window of `window`
// positions on each side (0 = unlimited), keys at multiples of `dilation` only, plus global tokens
// that see and are seen by every position. `causal` is set by the stack (decoders).
struct AttentionPattern {
  int window = 0;
  int dilation = 1;
  std::vector<int> global_tokens;
};

// T5's relative position bias (Raffel et al. 2020, arXiv 1910.10683, §2.1; transformers'
// T5Attention._relative_position_bucket): a learned scalar per logit head and bucket of the key's
// offset from the query, added to the logits after the scale. Offsets below half the buckets get
// a bucket each; larger ones share logarithmically wider buckets up to max_distance. A
// bidirectional stack (an encoder) spends half the buckets on keys after the query; a causal one
// uses them all for keys before it. The table [buckets, h_k] is stored once per stack, in layer
// 0's self-attention ("encoder.0.attn.relative_bias"), and every layer adds it.
struct RelativeBias {
  int buckets = 32;
  int max_distance = 128;
};

// Multi-head latent attention (DeepSeek-V2, DeepSeek-AI 2024, arXiv 2405.04434, §2.1): every head's keys
// and values come from one shared latent c_KV = RMSNorm(W_DKV x) of width kv_rank through per-head
// up-projections (k_C = W_UK^h c_KV, v = W_UV^h c_KV), and each key ends in one rotated part k_R =
// RoPE(W_KR x) of width rope_size that all heads share; each query is [q_C ; RoPE(q_R)], straight from
// the stream or through a latent of its own (q_rank > 0: q = W_UQ RMSNorm(W_DQ x)). key_size is each
// head's whole query/key width (non-rotated + rope_size), value_size each head's value width. A KV cache
// holds c_KV and k_R only: kv_rank + rope_size numbers a token and layer, against MHA's
// heads · (key_size + value_size). Parameters ("attn.*"): q_down [q_rank, D] and q_latent_norm
// [q_rank] (with a query latent), q [heads · key_size, q_rank or D], kv_down [kv_rank + rope_size, D]
// (latent rows, then the rotated key's), kv_latent_norm [kv_rank], k [heads · (key_size − rope_size),
// kv_rank], v [heads · value_size, kv_rank], o. qkv_bias gives the down projections biases; the
// up projections have none. Self-attention only; kv_heads must equal heads.
struct LatentAttention {
  int kv_rank = 0;         // d_c (kv_lora_rank)
  int q_rank = 0;          // d_c' (q_lora_rank); 0 = no query latent
  int rope_size = 0;       // d_R (qk_rope_head_dim); 0 = no decoupled rotated part
  float norm_eps = 1e-6f;  // the latents' RMSNorm
  bool operator==(const LatentAttention& o) const {
    return kv_rank == o.kv_rank && q_rank == o.q_rank && rope_size == o.rope_size && norm_eps == o.norm_eps;
  }
};

// Disentangled attention (DeBERTa, He et al. 2021, arXiv 2006.03654, §3.1; transformers'
// DisentangledSelfAttention): besides content-to-content q_i·k_j, each logit adds content-to-position
// q_i·k^P_δ (c2p) and position-to-content k_j·q^P_δ (p2c), where δ is the key's relative position
// i − j as a row of one position table P [2·span, D] per stack and k^P = P W_K, q^P = P W_Q — the
// layer's own projections with their biases (`shared_keys`, DeBERTa-v3's share_att_key) or its own
// ("attn.pos_k", "attn.pos_q"). With `buckets` > 0 (DeBERTa-v3's position_buckets) offsets up to ±
// buckets/2 keep a row each and larger ones share logarithmic rows up to max_distance; else offsets
// are clamped to ±max_distance. span = buckets, or max_distance without buckets. The default scale is
// 1/sqrt(key_size · (1 + c2p + p2c)) for all three terms. The table, LayerNorm'd when `table_norm`
// (norm_rel_ebd "layer_norm"), is stored once per stack in layer 0's self-attention ("attn.rel_embeddings",
// "attn.rel_norm"). Self-attention only; kv_heads must equal heads.
struct Disentangled {
  int buckets = 0;          // position_buckets; 0 = none (offsets clamped)
  int max_distance = 512;   // max_relative_positions
  bool c2p = true, p2c = true;
  bool shared_keys = true;  // share_att_key
  bool table_norm = true;   // norm_rel_ebd "layer_norm"
  float table_norm_eps = 1e-7f;
  int span() const { return buckets > 0 ? buckets : max_distance; }
  int terms() const { return 1 + (c2p ? 1 : 0) + (p2c ? 1 : 0); }
  bool operator==(const Disentangled& o) const {
    return buckets == o.buckets && max_distance == o.max_distance && c2p == o.c2p && p2c == o.p2c &&
           shared_keys == o.shared_keys && table_norm == o.table_norm && table_norm_eps == o.table_norm_eps;
  }
};

struct AttentionConfig {
  int heads = 8;          // query heads (output heads unless talking-heads)
  int kv_heads = 8;       // MHA: == heads; MQA: 1; GQA: divides heads
  int key_size = 64;      // d_k per head (Bhojanapalli et al. 2020: need not be hidden/heads)
  int value_size = 64;    // d_v per head
  Scoring scoring = Scoring::Dot;
  std::optional<float> scale;  // logit scale; default 1/sqrt(key_size) (dot; disentangled: 1/sqrt(key_size · terms)), 1 (additive)
  bool qkv_bias = true;
  bool out_bias = true;
  // Per-head RMSNorm of queries and keys over d_k, with learned weights [d_k], before RoPE (Qwen3's
  // q_norm/k_norm): q_h ← q_h / sqrt(mean(q_h²) + eps) ⊙ w_q, likewise k. Not with collaborative heads.
  bool qk_norm = false;
  float qk_norm_eps = 1e-6f;
  // The q/k norms scale by (qk_norm_weight_offset + w): 1 for Gemma 3, whose weights are stored as
  // offsets from 1 (Gemma3RMSNorm), 0 for Qwen3.
  float qk_norm_weight_offset = 0.0f;
  // The q/k norms run over each projection whole — every head's queries [heads · d_k] and keys
  // [kv_heads · d_k] at once, with weights of those sizes — instead of per head (OLMo 2's q_norm/k_norm).
  bool qk_norm_whole = false;
  // > 0: logit soft-capping J ← cap · tanh(J / cap) after the scale, before the mask and softmax
  // (Gemma 2's attn_logit_softcapping; Gemma Team 2024, arXiv 2408.00118 § 2). 0 = none.
  float logit_softcap = 0.0f;
  // > 0: every query, key and value projection clamped to [−c, c] as it leaves its projection, before
  // the heads are split, norms and RoPE (OLMo's clip_qkv; Groeneveld et al. 2024, arXiv 2402.00838).
  // 0 = none.
  float qkv_clip = 0.0f;
  // ALiBi (Press et al. 2022, arXiv 2108.12409; BLOOM, MPT): each logit head h adds −m_h·|i − j| for query
  // i and key j after the scale, with the standard slopes m_h (alibi_slopes in core/model/attention.h).
  // Self-attention only; nothing is learned.
  bool alibi = false;
  // Learned attention sinks (gpt-oss; OpenAI 2025, the gpt-oss model card): each softmax head h has a
  // logit s_h (parameter "attn.sinks" [h]) that joins every row's softmax as one more key with no value,
  // W_ts = exp(L_ts) / (Σ_s' exp(L_ts') + exp(s_h)). A row of W then sums to 1 − the sink's share
  // exp(s_h) / (…) (AttentionStages::sink_share). Self-attention only.
  bool sinks = false;
  std::optional<TalkingHeads> talking_heads;
  std::optional<Collaborative> collaborative;
  std::optional<RelativeBias> relative_bias;  // self-attention only
  std::optional<LatentAttention> latent;      // self-attention only
  std::optional<Disentangled> disentangled;   // self-attention only
  AttentionPattern pattern;

  int logit_heads() const { return talking_heads ? talking_heads->key_heads : heads; }      // h_k
  int softmax_heads() const { return talking_heads ? talking_heads->softmax_heads : heads; }  // h
  int output_heads() const { return talking_heads ? talking_heads->value_heads : heads; }     // h_v
  int value_heads_stored() const { return talking_heads ? talking_heads->value_heads : kv_heads; }
  float logit_scale() const;
  // A short human name: "MHA", "GQA(8q/2kv)", "talking-heads(8/8/8)", …
  std::string variant_name() const;
};

// Layers that attend through a pattern and RoPE base of their own: Gemma 2/3's sliding-window
// ("local") layers between global ones (Gemma Team 2024, arXiv 2408.00118; 2025, arXiv 2503.19786).
struct LocalLayers {
  std::vector<int> layers;
  AttentionPattern pattern;         // replaces attention.pattern in these layers
  std::optional<float> rope_theta;  // RoPE base of these layers; empty = the model's rope_theta
};

struct StackConfig {
  int layers = 0;
  AttentionConfig attention;                       // self-attention
  std::optional<AttentionConfig> cross_attention;  // decoder of an encoder-decoder only
  // Layers whose self-attention skips the rotary embedding ("NoPE" layers, as Llama 4's and
  // SmolLM3's no_rope_layers): with positions rope / rope+learned, these layers see content only.
  std::vector<int> nope_layers;
  // Cross-layer parameter sharing (ALBERT, Lan et al. 2019, arXiv 1909.11942, §3.1): every layer of
  // the stack runs the same weights, stored once as layer 0 ("encoder.0.*"). Layer l still has its
  // own input, attention maps and head controls; only the parameters are shared.
  bool shared_layers = false;
  std::optional<LocalLayers> local;

  // The self-attention config of layer `layer`: `attention`, with the local pattern in local layers.
  AttentionConfig layer_attention(int layer) const;
  bool is_local(int layer) const;
};

// A mixture-of-experts FFN (Shazeer et al. 2017, arXiv 1701.06538; Mixtral, Jiang et al. 2024, arXiv
// 2401.04088; gpt-oss): a router (a Linear D → experts, "ffn.router") scores each token; its top_k
// experts run, each an FFN of the FfnConfig's kind and inner_size ("ffn.experts.{e}.*"), and their
// outputs add up with weights softmax(router logits) of those experts, renormalised over the k
// (`normalize`: Mixtral; gpt-oss's softmax over the k logits is the same) or not (OLMoE, Qwen2-MoE
// without norm_topk_prob). shared_inner_size > 0 adds an always-on expert of that inner size
// ("ffn.shared.*", DeepSeek's shared experts).
//
// DeepSeek's routers (DeepSeek-AI 2024, arXiv 2405.04434 §2.2; arXiv 2412.19437 §2.1.2): `scores`
// sigmoid instead of softmax; `groups` > 1 splits the experts into that many equal groups, keeps the
// `top_groups` best (a group's score its best expert's, or the sum of its best two: `group_score`) and
// picks the top_k among their experts; `choice_bias` adds a per-expert bias ("ffn.router_choice_bias"
// [experts], DeepSeek-V3's e_score_correction_bias) to the scores used to choose, not to the weights;
// the chosen weights (renormalised when `normalize`) are multiplied by `scale` (routed_scaling_factor).
// `dense_layers` run a plain FFN of `dense_inner_size` instead of experts (first_k_dense_replace).
enum class RouterScores { Softmax, Sigmoid };
enum class GroupScore { Max, TopTwoSum };
struct MoeConfig {
  int experts = 8;
  int top_k = 2;
  bool normalize = true;
  bool router_bias = false;
  int shared_inner_size = 0;
  RouterScores scores = RouterScores::Softmax;
  int groups = 1;
  int top_groups = 1;
  GroupScore group_score = GroupScore::Max;
  bool choice_bias = false;
  float scale = 1.0f;
  std::vector<int> dense_layers;
  int dense_inner_size = 0;
  bool is_dense(int layer) const;
};

struct FfnConfig {
  FfnKind kind = FfnKind::Mlp;
  int inner_size = 1024;  // ignored for FfnKind::None; an expert's with `moe`
  Activation activation = Activation::Gelu;  // Mlp and SwiGLU
  bool bias = true;
  // ClampedSwiGLU (gpt-oss's GptOssExperts): down((clamp(up, −limit, limit) + 1) ⊙ g·σ(1.702·g)) with
  // g = min(gate, limit).
  float limit = 7.0f;
  std::optional<MoeConfig> moe;  // set: the FFN is a mixture of experts of this shape
};

struct LmHeadConfig {
  bool transform = false;  // BERT: dense + activation + LayerNorm before the decoder
  bool tied = true;        // decoder weight shared with the token embedding
  bool bias = false;
  // The final hidden state is multiplied by this before the decoder (T5 with tied embeddings:
  // d_model^-0.5). 1 = none.
  float input_scale = 1.0f;
  // > 0: final logit soft-capping, logits ← softcap · tanh(logits / softcap) (Gemma 2's
  // final_logit_softcapping). 0 = none.
  float softcap = 0.0f;
};

struct ModelConfig {
  std::string name = "model";
  std::string description;  // free text shown by `headlab info`
  std::string family = "native";  // "native", or the imported folder's family (core/families/families.cpp's table)
  StackKind kind = StackKind::Encoder;
  int vocab_size = 0;
  int hidden_size = 256;
  int max_positions = 512;
  int type_vocab_size = 0;  // BERT token types (0 = none)
  // Factorised embeddings (ALBERT, Lan et al. 2019, §3.1; ELECTRA's embeddings_project, Clark et al.
  // 2020): 0 = none, the embeddings are hidden_size wide. E > 0: token, position and type embeddings
  // and the embedding norm are E wide, and a Linear E → hidden_size (with bias) follows the norm.
  // The LM head's transform then maps hidden_size → E, so a tied decoder reads the [V, E] table; a
  // tied head without transform scores against the projected table E_tok·W_projᵀ [V, hidden_size].
  int embedding_size = 0;
  PositionKind positions = PositionKind::Learned;
  SinusoidLayout sinusoid_layout = SinusoidLayout::Interleaved;
  // Encoder-decoder only: the decoder has a position table and embedding norm of its own
  // ("decoder_positions", "decoder_embed_norm"), as BART's per-stack embed_positions and
  // layernorm_embedding; the token table stays shared. False: both stacks read one of each.
  bool stack_embeddings = false;
  float rope_theta = 10000.0f;
  int rope_dim = 0;  // rotated dims per head (0 = all of key_size)
  // Scaled RoPE of the model's rope_theta (StackConfig::local layers with a base of their own stay
  // plain, as Gemma 3's local layers do).
  RopeScaling rope_scaling;
  // The rotated dims pair up as (x_{2i}, x_{2i+1}) (GPT-J's rotate_every_two: "interleaved") instead of
  // (x_i, x_{i+rot/2}) (rotate-half: Llama, GPT-NeoX): the same rotation in another order of the dims.
  bool rope_interleaved = false;
  NormKind norm = NormKind::LayerNorm;
  float norm_eps = 1e-5f;
  NormPlacement norm_placement = NormPlacement::Pre;
  bool embedding_norm = false;  // BERT: LayerNorm after the embeddings
  bool final_norm = true;       // pre-LN stacks: a norm after the last layer
  // Every norm scales by (norm_weight_offset + w): 1 for Gemma, whose RMSNorm weights are stored as
  // offsets from 1 (output · (1 + w)); 0 elsewhere.
  float norm_weight_offset = 0.0f;
  // Pre-LN blocks also normalise each sublayer's output before it joins the residual stream,
  // h ← h + norm_out(sublayer(norm_in(h))) (Gemma 2/3's post_attention_layernorm and
  // post_feedforward_layernorm around pre_feedforward_layernorm).
  bool sublayer_output_norm = false;
  // false: pre-LN blocks feed each sublayer the stream itself, with no norm before it (no attn_norm,
  // ffn_norm); with sublayer_output_norm, OLMo 2's h ← h + norm(sublayer(h)).
  bool sublayer_input_norm = true;
  // false: layer 0's attention reads its input without a norm (ModernBERT, whose embeddings end in one;
  // its first attn_norm is the identity). Pre-LN only.
  bool first_attention_norm = true;
  // Pre-LN blocks run attention and FFN side by side on the same input, h ← h + attn(attn_norm(h)) +
  // ffn(ffn_norm(h)) (GPT-NeoX's use_parallel_residual; GPT-J, Falcon and Phi-2 with one norm, imported
  // as the same weights in both).
  bool parallel_residual = false;
  // Token embeddings are multiplied by this before positions are added (Gemma: √hidden).
  float embedding_scale = 1.0f;
  FfnConfig ffn;
  LmHeadConfig lm_head;
  std::optional<StackConfig> encoder;
  std::optional<StackConfig> decoder;
  // Encoder-decoder: the token the decoder's input starts from (Hugging Face's
  // decoder_start_token_id: BART's </s>, T5's and Marian's <pad>); empty = the tokenizer's begin
  // token (core/tokenizer/framing.h).
  std::optional<int64_t> decoder_start_id;
  // Training objective the weights were made for: "mlm", "causal", "seq2seq" (informational).
  std::string objective = "mlm";

  // Throws std::runtime_error with every inconsistency found, e.g.
  // "decoder.attention: kv_heads (3) must divide heads (8)".
  void validate() const;
  int64_t parameter_count() const;
  // An upper estimate of parameter_count in floating point (never overflows): what validate()
  // compares with its limit before anything is allocated.
  double parameter_estimate() const;
  std::string summary() const;  // one paragraph for `headlab info`
  // Learned and sinusoidal positions are tables of max_positions rows; RoPE allocates nothing for it.
  bool has_position_table() const {
    return positions == PositionKind::Learned || positions == PositionKind::RopeLearned ||
           positions == PositionKind::Sinusoidal;
  }
  // Width of the embedding tables: embedding_size when factorised, else hidden_size.
  int embedding_width() const { return embedding_size > 0 ? embedding_size : hidden_size; }
};

// JSON <-> config (schema in core/README.md). from_json throws with the offending key path.
nlohmann::json to_json(const ModelConfig& config);
ModelConfig model_config_from_json(const nlohmann::json& json);
nlohmann::json to_json(const AttentionConfig& config);
AttentionConfig attention_config_from_json(const nlohmann::json& json, const std::string& where);

// Reads and validates a config.json file; errors name the file.
ModelConfig load_model_config(const std::string& path);

const char* to_string(StackKind kind);
const char* to_string(PositionKind kind);
const char* to_string(Activation activation);
const char* to_string(SinusoidLayout layout);
const char* to_string(RopeScalingKind kind);
// "default" | "linear" | "dynamic" | "llama3" | "yarn"; throws std::invalid_argument naming the others.
RopeScalingKind rope_scaling_kind_from_name(const std::string& name);

}  // namespace headlab::core
