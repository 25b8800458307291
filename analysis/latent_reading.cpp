#include "analysis/latent_reading.h"

#include "core/model/attention.h"

#include <torch/torch.h>

namespace headlab::analysis {

LatentReading latent_reading(const core::AttentionImpl& attention) {
  const auto& c = attention.config();
  if (!c.latent) return {};
  auto f64 = [](const torch::Tensor& t) { return t.detach().to(torch::kCPU, torch::kFloat64); };
  const auto& m = *c.latent;
  const int64_t H = c.heads, dR = m.rope_size, dN = c.key_size - dR;
  // The latent's rows of kv_down, scaled by its norm's weights: [d_c, D].
  const auto latent = f64(attention.kv_down->weight).narrow(0, 0, m.kv_rank) * f64(attention.kv_latent_norm).unsqueeze(1);
  LatentReading out;
  out.key = torch::matmul(f64(attention.k->weight), latent).t().contiguous();    // [D, h·d_N]
  out.value = torch::matmul(f64(attention.v->weight), latent).t().contiguous();  // [D, h·d_v]
  torch::Tensor query = f64(attention.q->weight);                                // [h·d_k, q_rank or D]
  if (m.q_rank > 0) query = torch::matmul(query * f64(attention.q_latent_norm).unsqueeze(0), f64(attention.q_down->weight));
  out.query = query.view({H, c.key_size, -1}).narrow(1, 0, dN).reshape({H * dN, -1}).t().contiguous();  // [D, h·d_N]
  return out;
}

}  // namespace headlab::analysis
