// Activation patching (Vig et al. 2020; Meng et al. 2022; Wang et al. 2022): a run in which one
// activation — a layer's input, a head's queries, keys, values, pattern or output, an FFN's output —
// is taken from another run of the same length. The engine applies a RunRequest's patches where it
// computes each site, so that a patched run re-runs only from the first patched layer
// (core/model/run.h), and, with an interpolation weight that requires grad, gives attribution
// patching's gradients (Nanda 2023) from one backward pass.
#pragma once

#include "core/controls.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace headlab::core {

// The sites a patch can replace, with the shapes of their values (no batch axis). Head sites keep
// the head axis first and the position axis second, as the trace captures them.
enum class Site {
  Resid,    // a layer's input, the residual stream before it [T, D] (TransformerLens's hook_resid_pre)
  Q,        // the queries the scores read, per query head, after the q norm and RoPE [h_k, T, d_k]
  K,        // the keys, per stored key head (GQA/MQA: shared by a group), after the k norm and RoPE [kv, T, d_k]
  V,        // the values, per stored value head [kv, T, d_v]
  Pattern,  // the softmax weights W [h, T, S] (hook_pattern)
  Z,        // each head's attention-weighted values O before the gates and W_O [h_v, T, d_v] (hook_z)
  Mlp,      // the FFN's output as it joins the residual stream [T, D] (hook_mlp_out)
};
const char* site_name(Site site);               // "resid", "q", "k", "v", "pattern", "z", "mlp"
Site site_from_name(const std::string& name);   // throws std::invalid_argument naming the choices
bool site_has_heads(Site site);                 // q, k, v, pattern, z

struct ActivationPatch {
  Stack stack = Stack::Decoder;  // Encoder or Decoder self-attention layers
  int layer = 0;
  Site site = Site::Z;
  int head = -1;      // one head of the site's head axis, or −1 for every head (ignored by resid and mlp)
  int position = -1;  // one (query) position, or −1 for every position
  torch::Tensor value;  // the site's activations from the other run, shaped as above
  // Interpolation: the site becomes own + weight·(value − own). Undefined = 1, a replacement.
  // Broadcast against the site's shape without batch (per head: [H, 1, 1]); attribution patching
  // passes zeros that require grad.
  torch::Tensor weight;
};

// The patches of one layer, as the engine hands them to a block.
using LayerPatches = std::vector<const ActivationPatch*>;

// x [B, H, T, …] (a head site) or [B, T, D] (resid, mlp) with the patches of `site` applied, in
// x's dtype. Throws std::invalid_argument naming the site, layer and both shapes when a value does
// not fit, and when a head or position is outside x.
torch::Tensor apply_patches(const torch::Tensor& x, Site site, const LayerPatches& patches);

// Whether two patches are the same (same site and selection, the very same value and weight tensors).
bool same_patch(const ActivationPatch& a, const ActivationPatch& b);

}  // namespace headlab::core
