// Max-pooling of captured attention maps into thumbnails (core/map_detail.h says why and how big).
#pragma once

#include "core/map_detail.h"
#include "core/model/attention.h"

#include <torch/torch.h>

namespace headlab::core {

// maps [h, T, S] → [h, pooled_length(T), pooled_length(S)]: each cell the largest of its block
// (the last block of a side may be shorter). A [h, T] tensor (the sink's share per query) pools its
// rows alike → [h, pooled_length(T)]. `side` ≤ 0 returns `maps` itself.
torch::Tensor pool_map(const torch::Tensor& maps, int side);

// Pools every map stage of `stages` (J, L, W, U and the sink's share; batch removed) in place; U
// stays the same tensor as W where it was.
void pool_stages(AttentionStages& stages, int side);

}  // namespace headlab::core
