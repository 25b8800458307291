#include "core/model/map_pool.h"

namespace headlab::core {

torch::Tensor pool_map(const torch::Tensor& maps, int side) {
  if (side <= 0 || !maps.defined()) return maps;
  if (maps.dim() == 2) return pool_map(maps.unsqueeze(-1), side).squeeze(-1);  // [h, T] as [h, T, 1]
  TORCH_CHECK(maps.dim() == 3, "pool_map: expected [heads, T, S], got ", maps.sizes());
  const int64_t T = maps.size(1), S = maps.size(2);
  const int64_t bt = pooling_block(T, side), bs = pooling_block(S, side);
  if (bt == 1 && bs == 1) return maps;
  // ceil_mode keeps the short last block; a masked logit (−inf) stays −inf only where its whole block is.
  return torch::max_pool2d(maps.unsqueeze(0), {bt, bs}, {bt, bs}, {0, 0}, {1, 1}, /*ceil_mode=*/true).squeeze(0);
}

void pool_stages(AttentionStages& s, int side) {
  const bool u_is_w = s.mixed_weights.defined() && s.weights.defined() &&
                      s.mixed_weights.unsafeGetTensorImpl() == s.weights.unsafeGetTensorImpl();
  s.logits = pool_map(s.logits, side);
  s.mixed_logits = pool_map(s.mixed_logits, side);
  s.weights = pool_map(s.weights, side);
  s.sink_share = pool_map(s.sink_share, side);
  s.mixed_weights = u_is_w ? s.weights : pool_map(s.mixed_weights, side);
}

}  // namespace headlab::core
