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
// strictly increasing levels. Edges are collected first, then laid out once as arrays by node
// (each node's arcs side by side, an arc knowing its reverse): the solver scans arcs in memory order.
class FlowNetwork {
 public:
  explicit FlowNetwork(int nodes) : nodes_(nodes), level_(nodes), next_(nodes) {}

  // Adds an edge and returns its id for set_capacity; only before the first solve.
  int add_edge(int from, int to, double capacity) {
    edges_.push_back({from, to, capacity});
    return static_cast<int>(edges_.size()) - 1;
  }

  // A new capacity for an edge; it counts from the next reset().
  void set_capacity(int edge, double capacity) {
    build();
    const int a = edge_arc_[edge];
    capacity_[a] = capacity;
    touched_.push_back(a);
    largest_ = std::max(largest_, capacity);
  }

  // For a layered network, where every edge goes from some level k to k + 1 and the source is at
  // level 0: the levels themselves are the first search's distances, so a solve starts without it.
  void set_layers(std::vector<int> levels) { layers_ = std::move(levels); }

  // Back to the capacities (no flow), to solve again for another source or sink. Only the arcs a
  // solve or set_capacity changed are restored: one max flow touches few of the arcs.
  void reset() {
    build();
    for (int a : touched_) arcs_[a].residual = capacity_[a];
    touched_.clear();
  }

  double max_flow(int source, int sink) {
    if (source == sink) return std::numeric_limits<double>::infinity();
    build();
    // Residuals at or below this are saturated: float64 leaves crumbs of ~1e-17 behind.
    epsilon_ = 1e-13 * largest_;
    // What leaves the source and what enters the sink are both cuts: once the flow fills the smaller,
    // the search for a further path (a whole BFS) can be skipped.
    double out = 0, in = 0;
    for (int a = offset_[source]; a < offset_[source + 1]; ++a) out += arcs_[a].residual;
    for (int a = offset_[sink]; a < offset_[sink + 1]; ++a) in += arcs_[arcs_[a].reverse].residual;
    const double bound = std::min(out, in);
    double total = 0;
    // Every arc that differs from its capacity is in touched_: none means no flow yet, so the layers
    // are the distances.
    bool layered = !layers_.empty() && touched_.empty();
    while (total < bound - epsilon_ && (layered ? (level_ = layers_, true) : build_levels(source, sink))) {
      layered = false;
      for (int v = 0; v < nodes_; ++v) next_[v] = offset_[v];
      total += push(source, sink, std::numeric_limits<double>::infinity());
    }
    return total;
  }

 private:
  struct Edge {
    int from, to;
    double capacity;
  };
  struct Arc {
    int to;
    int reverse;  // index of the opposite arc
    double residual;
  };

  // Lays the edges out by node: offset_[v] … offset_[v + 1] are v's arcs (out-edges and reverses).
  void build() {
    if (built_) return;
    built_ = true;
    offset_.assign(nodes_ + 1, 0);
    for (const auto& e : edges_) ++offset_[e.from + 1], ++offset_[e.to + 1];
    for (int v = 0; v < nodes_; ++v) offset_[v + 1] += offset_[v];
    std::vector<int> fill(offset_.begin(), offset_.end() - 1);
    arcs_.resize(2 * edges_.size());
    capacity_.assign(arcs_.size(), 0.0);  // a reverse arc's is 0
    edge_arc_.resize(edges_.size());
    for (size_t e = 0; e < edges_.size(); ++e) {
      const Edge& edge = edges_[e];
      const int forward = fill[edge.from]++, backward = fill[edge.to]++;
      arcs_[forward] = {edge.to, backward, edge.capacity};
      arcs_[backward] = {edge.from, forward, 0.0};
      capacity_[forward] = edge.capacity;
      edge_arc_[e] = forward;
      largest_ = std::max(largest_, edge.capacity);
    }
  }

  bool build_levels(int source, int sink) {
    std::fill(level_.begin(), level_.end(), -1);
    queue_.assign(1, source);
    level_[source] = 0;
    for (size_t head = 0; head < queue_.size(); ++head) {
      const int v = queue_[head];
      for (int a = offset_[v]; a < offset_[v + 1]; ++a) {
        const Arc& arc = arcs_[a];
        if (arc.residual > epsilon_ && level_[arc.to] < 0) {
          level_[arc.to] = level_[v] + 1;
          queue_.push_back(arc.to);
        }
      }
    }
    return level_[sink] >= 0;
  }

  // Pushes up to `limit` from v towards the sink along level-increasing arcs; returns what it pushed.
  double push(int v, int sink, double limit) {
    if (v == sink) return limit;
    double pushed = 0;
    for (int& a = next_[v]; a < offset_[v + 1]; ++a) {
      Arc& arc = arcs_[a];
      if (arc.residual <= epsilon_ || level_[arc.to] != level_[v] + 1) continue;
      const double got = push(arc.to, sink, std::min(limit - pushed, arc.residual));
      if (got > 0) {
        arc.residual -= got;
        arcs_[arc.reverse].residual += got;
        touched_.push_back(a);
        touched_.push_back(arc.reverse);
        pushed += got;
        if (limit - pushed <= epsilon_) return pushed;  // keep this arc: it may have room left
      }
    }
    return pushed;
  }

  int nodes_;
  bool built_ = false;
  std::vector<Edge> edges_;
  std::vector<int> offset_, edge_arc_;
  std::vector<Arc> arcs_;
  std::vector<double> capacity_;  // per arc
  std::vector<int> layers_, level_, next_, queue_, touched_;
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
  // each row renormalised (a no-op when A's rows already sum to 1). With learned sinks A's rows sum to
  // 1 − the heads' mean sink share; the sink carries no token, so renormalising spreads its share over
  // the tokens in proportion to A' — rollout follows where the read tokens came from.
  auto R = 0.5 * A + 0.5 * torch::eye(A.size(0), A.options().dtype(torch::kFloat64));
  return R / R.sum(1, /*keepdim=*/true);
}

at::Tensor attention_rollout(const std::vector<at::Tensor>& layers) {
  if (layers.empty()) throw std::invalid_argument("attention rollout/flow: no layers");
  at::Tensor rollout;
  for (const auto& maps : layers) rollout = rollout_step(rollout, maps);
  return rollout;
}

at::Tensor rollout_step(const at::Tensor& rollout, const at::Tensor& maps) {
  torch::NoGradGuard no_grad;
  // Rollout (their eq. 1): Ã(l_i) = A(l_i) Ã(l_{i−1}), starting from the first layer.
  auto residual = residual_attention(maps);
  if (!rollout.defined()) return residual;
  if (rollout.size(0) != residual.size(0))
    throw std::invalid_argument("attention rollout: layers have different lengths (" + std::to_string(rollout.size(0)) +
                                " vs " + std::to_string(residual.size(0)) + ")");
  return torch::matmul(residual, rollout);
}

std::vector<double> attention_flow(const std::vector<at::Tensor>& layers, int position) {
  torch::NoGradGuard no_grad;
  auto residual = residual_layers(layers);
  const int T = static_cast<int>(residual.front().size(0));
  const int L = static_cast<int>(residual.size());
  if (position < 0 || position >= T)
    throw std::out_of_range("attention_flow: position " + std::to_string(position) + " outside 0.." +
                            std::to_string(T - 1));
  // The graph of nodes (l, i), l = 0 … L, keeps only what can carry flow from one token to the
  // position: nodes that reach the position (a causal map's later positions do not), without the
  // other tokens of level 0 or the other positions of level L. The source is the token itself (its
  // edges into level 1 change per token), the sink the position; level l of 1 … L − 1 is the nodes
  // (l − 1)·T + i.
  std::vector<const double*> data;
  for (auto& r : residual) data.push_back((r = r.contiguous()).data_ptr<double>());
  auto weight = [&](int l, int i, int j) {  // Ã of layer l: the edge (l, j) → (l + 1, i)
    return data[l][static_cast<int64_t>(i) * T + j];
  };
  // reaches[l][i]: node (l, i) has a path of positive edges to the position.
  std::vector<std::vector<char>> reaches(L + 1, std::vector<char>(T, 0));
  reaches[L][position] = 1;
  for (int l = L - 1; l >= 1; --l)
    for (int i = 0; i < T; ++i)
      if (reaches[l + 1][i])
        for (int j = 0; j < T; ++j) reaches[l][j] = reaches[l][j] || weight(l, i, j) > 0;
  const int source = (L - 1) * T, sink = source + 1;
  auto node = [&](int level, int i) { return level == L ? sink : (level - 1) * T + i; };
  FlowNetwork network(sink + 1);
  std::vector<int> level_of(sink + 1);
  for (int v = 0; v < source; ++v) level_of[v] = v / T + 1;
  level_of[source] = 0;
  level_of[sink] = L;
  network.set_layers(std::move(level_of));
  for (int l = 1; l < L; ++l)
    for (int i = 0; i < T; ++i) {
      if (!reaches[l + 1][i]) continue;
      for (int j = 0; j < T; ++j)
        // Masked keys (weight 0) get no edge; negative weights (possible after talking-heads mixing) carry nothing.
        if (weight(l, i, j) > 0) network.add_edge(node(l, j), node(l + 1, i), weight(l, i, j));
    }
  std::vector<std::pair<int, int>> source_edges;  // (level-1 node, edge id)
  for (int i = 0; i < T; ++i)
    if (reaches[1][i]) source_edges.emplace_back(i, network.add_edge(source, node(1, i), 0.0));
  // Flow from each input token to the position at the last layer, one max-flow problem each.
  std::vector<double> flow(T);
  for (int j = 0; j < T; ++j) {
    for (const auto& [i, edge] : source_edges) network.set_capacity(edge, std::max(0.0, weight(0, i, j)));
    network.reset();
    flow[j] = network.max_flow(source, sink);
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
