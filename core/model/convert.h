// Converting a trained model into another attention variant, as the papers behind the variants do.
// Grouped-query attention (Ainslie et al. 2023, §2.1): the key and value heads of each group are
// mean-pooled into one; MQA is one group. Collaborative attention (Cordonnier et al. 2020, §4): the
// heads' key-query products are decomposed into shared projections and per-head mixing vectors.
// The result is an ordinary model (save_model writes it).
#pragma once

#include "core/model/model.h"

#include "core/model/cp_als.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace headlab::core {

// `model` with every self-attention layer of its stacks turned into GQA with `groups` key/value
// heads: kv head g is the mean of the model's kv heads g·r … g·r + r − 1 (r = kv_heads / groups),
// weights and biases alike. groups = kv_heads changes nothing. Throws std::invalid_argument when
// groups does not divide the kv heads, or for talking heads and collaborative attention (their keys
// are not per head). Cross-attention is left as it is.
std::shared_ptr<Model> convert_to_gqa(const Model& model, int groups);

// One self-attention layer's collaborative fit.
struct CollaborativeLayer {
  Stack stack = Stack::Encoder;  // Encoder or Decoder
  int layer = 0;
  double relative_error = 0;  // ‖T − T̂‖_F / ‖T‖_F over the layer's h products W_Q^i W_K^iᵀ
  int iterations = 0;         // ALS sweeps
};

struct CollaborativeConversion {
  std::shared_ptr<Model> model;
  std::vector<CollaborativeLayer> layers;
};

// `model` with every self-attention layer turned into collaborative attention with shared key size
// D̃_k = `shared_key_size` (Cordonnier et al. 2020, §4). Per layer the products T_i = W_Q^i W_K^iᵀ
// [h, D, D] get a rank-D̃_k CP decomposition by ALS (core/model/cp_als.h): T_i ≈ W̃_Q diag(m_i) W̃_Kᵀ. The
// query bias is folded into the per-head content bias r_i = W_K^i b_Q^i (the paper's
// re-parametrisation; the key bias and the rest only add terms constant along the keys, which the
// softmax cancels), and the logit scale stays the model's 1/sqrt(d_k). Values and outputs are kept.
// With D̃_k ≥ h·d_k the ALS starts from the exact block solution (W̃_Q = [W_Q^1 … W_Q^h], m_i the
// indicator of head i's block), so the converted model computes the same function. Throws
// std::invalid_argument for RoPE (a rotation per head does not factor through shared projections),
// talking heads, additive scoring, per-head q/k norms, or a model already collaborative.
// `progress` (optional) is called after every ALS sweep with the layer being fitted (0-based over
// both stacks), how many layers there are, the sweep and its relative error.
using CollaborativeProgress = std::function<void(int layer, int layers, int sweep, double error)>;
CollaborativeConversion convert_to_collaborative(const Model& model, int shared_key_size, const CpOptions& options = {},
                                                 const CollaborativeProgress& progress = {});

// What a conversion is called in the converted model's name, messages and the window: "GQA 2", "MQA"
// (`to` "mqa", or "gqa" with one group) or "collaborative, shared key size 64".
std::string conversion_label(const std::string& to, int groups, int shared_key_size);

// The fit's relative error per layer, " E0 0.3120 E1 0.2983 …" (E encoder, D decoder).
std::string layer_errors_text(const CollaborativeConversion& conversion);

// The ALS settings both the command line and the window convert with: `iterations` sweeps at most,
// stopping once a sweep improves the relative error by less than 1e-7.
CpOptions conversion_cp_options(int iterations);

// Writes `converted` as a native model folder: its name gains " (`what`)", the weights keep the
// source's dtype (F64 becomes F32), and `source_folder`'s tokenizer.json, when there is one, is copied.
void save_converted_model(Model& converted, const Model& source, const std::string& source_folder,
                          const std::string& folder, const std::string& what);

}  // namespace headlab::core
