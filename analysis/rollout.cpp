// Attention rollout and attention flow (Abnar & Zuidema 2020, arXiv 2005.00928, § 3).
#include "analysis/rollout.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace headlab::analysis {
namespace {

// A flow network for Dinic's algorithm (Dinic 1970): BFS levels, then blocking flows along
// strictly increasing levels. Arcs 2e and 2e + 1 are an edge and its residual reverse.
class FlowNetwork {
 public:
  explicit FlowNetwork(int nodes) : adjacent_(nodes), level_(nodes), next_(nodes) {}

  void add_edge(int from, int to, double capacity) {
    adjacent_[from].push_back(static_cast<int>(arcs_.size()));
    arcs_.push_back({to, capacity, capacity});
    adjacent_[to].push_back(static_cast<int>(arcs_.size()));
    arcs_.push_back({from, 0.0, 0.0});
    largest_ = std::max(largest_, capacity);
  }

  // Back to the original capacities (no flow), to solve again for another source or sink.
  void reset() {
    for (auto& arc : arcs_) arc.residual = arc.capacity;
  }

  double max_flow(int source, int sink) {
    if (source == sink) return std::numeric_limits<double>::infinity();
    // Residuals at or below this are saturated: float64 leaves crumbs of ~1e-17 behind.
    epsilon_ = 1e-13 * largest_;
    double total = 0;
    while (build_levels(source, sink)) {
      std::fill(next_.begin(), next_.end(), 0);
      total += push(source, sink, std::numeric_limits<double>::infinity());
    }
    return total;
  }

 private:
  struct Arc {
    int to;
    double residual;
    double capacity;
  };

  bool build_levels(int source, int sink) {
    std::fill(level_.begin(), level_.end(), -1);
    std::vector<int> queue{source};
    level_[source] = 0;
    for (size_t head = 0; head < queue.size(); ++head) {
      const int v = queue[head];
      for (int a : adjacent_[v]) {
        const Arc& arc = arcs_[a];
        if (arc.residual > epsilon_ && level_[arc.to] < 0) {
          level_[arc.to] = level_[v] + 1;
          queue.push_back(arc.to);
        }
      }
    }
    return level_[sink] >= 0;
  }

  // Pushes up to `limit` from v towards the sink along level-increasing arcs; returns what it pushed.
  double push(int v, int sink, double limit) {
    if (v == sink) return limit;
    double pushed = 0;
    for (int& i = next_[v]; i < static_cast<int>(adjacent_[v].size()); ++i) {
      Arc& arc = arcs_[adjacent_[v][i]];
      if (arc.residual <= epsilon_ || level_[arc.to] != level_[v] + 1) continue;
      const double got = push(arc.to, sink, std::min(limit - pushed, arc.residual));
      if (got > 0) {
        arc.residual -= got;
        arcs_[adjacent_[v][i] ^ 1].residual += got;
        pushed += got;
        if (limit - pushed <= epsilon_) return pushed;  // keep this arc: it may have room left
      }
    }
    return pushed;
  }

  std::vector<std::vector<int>> adjacent_;
  std::vector<Arc> arcs_;
  std::vector<int> level_, next_;
  double largest_ = 0, epsilon_ = 0;
};

// Each layer's Ã as float64 [T, T], all of one size.
std::vector<torch::Tensor> residual_layers(const std::vector<at::Tensor>& layers) {
  if (layers.empty()) throw std::invalid_argument("attention rollout/flow: no layers");
  std::vector<torch::Tensor> out;
  for (const auto& maps : layers) {
    out.push_back(residual_attention(maps));
    if (out.back().size(0) != out.front().size(0))
      throw std::invalid_argument("attention rollout/flow: layers have different lengths (" +
                                  std::to_string(out.front().size(0)) + " vs " + std::to_string(out.back().size(0)) + ")");
  }
  return out;
}

}  // namespace

at::Tensor residual_attention(const at::Tensor& maps) {
  if (!maps.defined() || maps.dim() < 2 || maps.dim() > 3 || maps.size(-1) != maps.size(-2))
    throw std::invalid_argument("residual_attention: expected self-attention maps [heads, T, T]");
  torch::NoGradGuard no_grad;
  auto m = maps.detach().to(torch::kCPU, torch::kFloat64);
  auto A = m.dim() == 3 ? m.mean(0) : m;  // the heads' average
  // Abnar & Zuidema: the residual connection as an identity edge of equal weight, A' = 0.5 A + 0.5 I,
  // each row renormalised (a no-op when A's rows already sum to 1).
  auto R = 0.5 * A + 0.5 * torch::eye(A.size(0), torch::kFloat64);
  return R / R.sum(1, /*keepdim=*/true);
}

at::Tensor attention_rollout(const std::vector<at::Tensor>& layers) {
  torch::NoGradGuard no_grad;
  auto residual = residual_layers(layers);
  // Rollout (their eq. 1): Ã(l_i) = A(l_i) Ã(l_{i−1}), starting from the first layer.
  auto rollout = residual.front();
  for (size_t l = 1; l < residual.size(); ++l) rollout = torch::matmul(residual[l], rollout);
  return rollout;
}

std::vector<double> attention_flow(const std::vector<at::Tensor>& layers, int position) {
  torch::NoGradGuard no_grad;
  auto residual = residual_layers(layers);
  const int T = static_cast<int>(residual.front().size(0));
  const int L = static_cast<int>(residual.size());
  if (position < 0 || position >= T)
    throw std::out_of_range("attention_flow: position " + std::to_string(position) + " outside 0.." +
                            std::to_string(T - 1));
  // Nodes (l, i) → l·T + i; the attention of layer l links its inputs (l, j) to its outputs (l + 1, i).
  FlowNetwork network((L + 1) * T);
  for (int l = 0; l < L; ++l) {
    auto a = residual[l].contiguous();
    const double* w = a.data_ptr<double>();
    for (int i = 0; i < T; ++i)
      for (int j = 0; j < T; ++j)
        // Masked keys (weight 0) get no edge; negative weights (possible after talking-heads mixing) carry nothing.
        if (w[i * T + j] > 0) network.add_edge(l * T + j, (l + 1) * T + i, w[i * T + j]);
  }
  // Flow from each input token to the position at the last layer, one max-flow problem each.
  std::vector<double> flow(T);
  for (int j = 0; j < T; ++j) {
    network.reset();
    flow[j] = network.max_flow(j, L * T + position);
  }
  return flow;
}

double max_flow(int nodes, const std::vector<FlowEdge>& edges, int source, int sink) {
  auto check_node = [&](int v, const char* what) {
    if (v < 0 || v >= nodes)
      throw std::invalid_argument(std::string("max_flow: ") + what + " " + std::to_string(v) + " outside 0.." +
                                  std::to_string(nodes - 1));
  };
  check_node(source, "source");
  check_node(sink, "sink");
  if (source == sink) throw std::invalid_argument("max_flow: source and sink are the same node");
  FlowNetwork network(nodes);
  for (const auto& e : edges) {
    check_node(e.from, "edge node");
    check_node(e.to, "edge node");
    if (!std::isfinite(e.capacity) || e.capacity < 0)
      throw std::invalid_argument("max_flow: capacities must be finite and >= 0");
    if (e.capacity > 0 && e.from != e.to) network.add_edge(e.from, e.to, e.capacity);
  }
  return network.max_flow(source, sink);
}

}  // namespace headlab::analysis
