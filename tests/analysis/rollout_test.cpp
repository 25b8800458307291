// Attention rollout and attention flow (Abnar & Zuidema 2020): hand-computed examples, the
// properties the definitions imply, and the max-flow solver on graphs with known maximum flows.
#include "test_common.h"

#include "analysis/rollout.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace analysis = headlab::analysis;
using headlab::test::max_abs_diff;

namespace {

torch::Tensor matrix(const std::vector<std::vector<double>>& rows) {
  auto out = torch::zeros({int64_t(rows.size()), int64_t(rows[0].size())}, torch::kFloat64);
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j) out[i][j] = rows[i][j];
  return out;
}

// Random softmax attention [heads, T, T], float32 like the engine's; `causal` masks future keys.
torch::Tensor random_maps(int64_t heads, int64_t T, bool causal = false) {
  auto logits = torch::randn({heads, T, T}) * 2;
  if (causal) logits = logits.masked_fill(torch::ones({T, T}, torch::kBool).triu(1), -1e30);
  return torch::softmax(logits, -1);
}

std::vector<torch::Tensor> random_layers(int L, int64_t heads, int64_t T, bool causal = false) {
  std::vector<torch::Tensor> layers;
  for (int l = 0; l < L; ++l) layers.push_back(random_maps(heads, T, causal));
  return layers;
}

// The attention graph spelled out: node (l, i) = l·T + i, edge (l, j) → (l + 1, i) of capacity Ã_l[i, j].
std::vector<analysis::FlowEdge> attention_graph(const std::vector<torch::Tensor>& layers) {
  std::vector<analysis::FlowEdge> edges;
  for (size_t l = 0; l < layers.size(); ++l) {
    auto R = analysis::residual_attention(layers[l]);
    const int T = int(R.size(0));
    for (int i = 0; i < T; ++i)
      for (int j = 0; j < T; ++j) edges.push_back({int(l) * T + j, int(l + 1) * T + i, R[i][j].item<double>()});
  }
  return edges;
}

}  // namespace

TEST_CASE("residual attention: 0.5·mean_h A + 0.5·I, rows renormalised", "[rollout]") {
  // Two heads averaging to [[.5, 0, .5], [0, 0, 1], [0, 0, 1]].
  auto heads = torch::stack({matrix({{1, 0, 0}, {0, 0, 1}, {0, 0, 1}}), matrix({{0, 0, 1}, {0, 0, 1}, {0, 0, 1}})});
  auto R = analysis::residual_attention(heads.to(torch::kFloat32));
  CHECK(R.scalar_type() == torch::kFloat64);
  CHECK(max_abs_diff(R, matrix({{.75, 0, .25}, {0, .5, .5}, {0, 0, 1}})) < 1e-7);
  // Rows that do not sum to 1 (e.g. mixed talking-heads weights) are renormalised:
  // 0.5·[[0, 2], [0, 0]] + 0.5·I = [[.5, 1], [0, .5]] → [[1/3, 2/3], [0, 1]].
  CHECK(max_abs_diff(analysis::residual_attention(matrix({{0, 2}, {0, 0}}).unsqueeze(0)),
                     matrix({{1.0 / 3, 2.0 / 3}, {0, 1}})) < 1e-15);
  CHECK_THROWS_AS(analysis::residual_attention(torch::ones({2, 3, 4})), std::invalid_argument);
}

TEST_CASE("rollout of one layer is its residual attention, rows sum to 1, identity stays I", "[rollout]") {
  torch::manual_seed(1);
  auto one = random_maps(4, 6);
  CHECK(max_abs_diff(analysis::attention_rollout({one}), analysis::residual_attention(one)) < 1e-15);

  auto rollout = analysis::attention_rollout(random_layers(5, 3, 8));
  CHECK(max_abs_diff(rollout.sum(1), torch::ones({8}, torch::kFloat64)) < 1e-12);
  CHECK(rollout.min().item<double>() >= 0);

  // Every head attending to itself: each layer's Ã is I, and so is the product.
  auto identity = torch::eye(5).unsqueeze(0).expand({3, 5, 5});
  CHECK(max_abs_diff(analysis::attention_rollout({identity, identity, identity}), torch::eye(5, torch::kFloat64)) == 0);

  // Causal maps: nothing flows from a later token to an earlier position.
  auto causal = analysis::attention_rollout(random_layers(3, 2, 6, true));
  CHECK(causal.triu(1).abs().max().item<double>() == 0);

  CHECK_THROWS_AS(analysis::attention_rollout({}), std::invalid_argument);
  CHECK_THROWS_AS(analysis::attention_rollout({random_maps(2, 4), random_maps(2, 5)}), std::invalid_argument);
}

TEST_CASE("rollout of a hand-computed two-layer, three-token example", "[rollout]") {
  // Layer 1: token 1 attends to token 0, token 2 to token 1, token 0 to itself:
  //   Ã_1 = 0.5·A_1 + 0.5·I = [[1, 0, 0], [.5, .5, 0], [0, .5, .5]].
  auto layer1 = matrix({{1, 0, 0}, {1, 0, 0}, {0, 1, 0}}).unsqueeze(0);
  // Layer 2, two heads averaging to [[.5, 0, .5], [0, 0, 1], [0, 0, 1]]:
  //   Ã_2 = [[.75, 0, .25], [0, .5, .5], [0, 0, 1]].
  auto layer2 = torch::stack({matrix({{1, 0, 0}, {0, 0, 1}, {0, 0, 1}}), matrix({{0, 0, 1}, {0, 0, 1}, {0, 0, 1}})});
  // Ã_2 · Ã_1: row 0 = .75·[1, 0, 0] + .25·[0, .5, .5]; row 1 = .5·[.5, .5, 0] + .5·[0, .5, .5];
  // row 2 = [0, .5, .5].
  auto expected = matrix({{.75, .125, .125}, {.25, .5, .25}, {0, .5, .5}});
  CHECK(max_abs_diff(analysis::attention_rollout({layer1, layer2}), expected) < 1e-15);

  // Flow in the same graph. Into position 0 only (1, 0) (capacity .75) and (1, 2) (.25) lead;
  // token 0 reaches (1, 0) with capacity 1 and (1, 2) not at all: .75. Token 1 reaches (1, 2)
  // with .5, capped by .25: .25; token 2 the same: .25.
  auto flow = analysis::attention_flow({layer1, layer2}, 0);
  REQUIRE(flow.size() == 3);
  CHECK(flow[0] == Approx(.75).margin(1e-12));
  CHECK(flow[1] == Approx(.25).margin(1e-12));
  CHECK(flow[2] == Approx(.25).margin(1e-12));
  // Position 1: from (1, 1) (.5) and (1, 2) (.5). Token 0 → (1, 1) .5 → .5; token 1 → (1, 1) .5
  // and → (1, 2) .5: 1; token 2 → (1, 2) .5: .5.
  flow = analysis::attention_flow({layer1, layer2}, 1);
  CHECK(flow[0] == Approx(.5).margin(1e-12));
  CHECK(flow[1] == Approx(1).margin(1e-12));
  CHECK(flow[2] == Approx(.5).margin(1e-12));
}

TEST_CASE("max flow on graphs with known maximum flows", "[rollout]") {
  // Cormen et al., Introduction to Algorithms, Fig. 26.1: s = 0, v1 … v4 = 1 … 4, t = 5; max flow 23
  // (it needs flow cancelled along v2 → v1 / v3 → v2 to reach it).
  std::vector<analysis::FlowEdge> clrs = {{0, 1, 16}, {0, 2, 13}, {1, 3, 12}, {2, 1, 4}, {2, 4, 14},
                                          {3, 2, 9},  {3, 5, 20}, {4, 3, 7},  {4, 5, 4}};
  CHECK(analysis::max_flow(6, clrs, 0, 5) == Approx(23).margin(1e-12));
  CHECK(analysis::max_flow(6, clrs, 5, 0) == 0);  // nothing flows backwards

  // Two wide layers joined by one edge of capacity 0.1: the bottleneck is the flow.
  std::vector<analysis::FlowEdge> bottleneck;
  for (int i = 1; i <= 4; ++i) bottleneck.push_back({0, i, 1.0});
  for (int i = 1; i <= 4; ++i) bottleneck.push_back({i, 5, 1.0});
  bottleneck.push_back({5, 6, 0.1});
  for (int i = 7; i <= 10; ++i) bottleneck.push_back({6, i, 1.0});
  for (int i = 7; i <= 10; ++i) bottleneck.push_back({i, 11, 1.0});
  CHECK(analysis::max_flow(12, bottleneck, 0, 11) == Approx(0.1).margin(1e-15));
  // A parallel edge around the bottleneck adds exactly its capacity.
  bottleneck.push_back({2, 8, 0.25});
  CHECK(analysis::max_flow(12, bottleneck, 0, 11) == Approx(0.35).margin(1e-15));

  CHECK_THROWS_AS(analysis::max_flow(3, {{0, 3, 1}}, 0, 2), std::invalid_argument);
  CHECK_THROWS_AS(analysis::max_flow(3, {{0, 1, -1}}, 0, 2), std::invalid_argument);
  CHECK_THROWS_AS(analysis::max_flow(3, {}, 1, 1), std::invalid_argument);
}

TEST_CASE("attention flow: one layer is the edge, at most 1, two layers sum disjoint paths", "[rollout]") {
  torch::manual_seed(2);
  const int T = 6;
  // One layer: the only path from token j to position p is the edge of capacity Ã[p, j].
  auto one = random_maps(3, T);
  auto R = analysis::residual_attention(one);
  for (int p = 0; p < T; ++p) {
    auto flow = analysis::attention_flow({one}, p);
    for (int j = 0; j < T; ++j) CHECK(flow[j] == Approx(R[p][j].item<double>()).margin(1e-15));
  }
  // Two layers: from token j the paths j → m → p are edge-disjoint, each carrying
  // min(Ã_1[m, j], Ã_2[p, m]).
  auto layers = random_layers(2, 3, T);
  auto R1 = analysis::residual_attention(layers[0]), R2 = analysis::residual_attention(layers[1]);
  for (int p = 0; p < T; ++p) {
    auto flow = analysis::attention_flow(layers, p);
    for (int j = 0; j < T; ++j) {
      double expected = 0;
      for (int m = 0; m < T; ++m) expected += std::min(R1[m][j].item<double>(), R2[p][m].item<double>());
      CHECK(flow[j] == Approx(expected).margin(1e-12));
    }
  }
  // Deeper: every flow in [0, 1], and the explicit graph through max_flow gives the same values.
  auto deep = random_layers(4, 2, T);
  const auto edges = attention_graph(deep);
  for (int p = 0; p < T; ++p) {
    auto flow = analysis::attention_flow(deep, p);
    for (int j = 0; j < T; ++j) {
      CHECK(flow[j] >= 0);
      CHECK(flow[j] <= 1 + 1e-12);
      CHECK(flow[j] == Approx(analysis::max_flow(5 * T, edges, j, 4 * T + p)).margin(1e-12));
    }
  }
  // Causal maps: later tokens have no path to an earlier position.
  auto causal = analysis::attention_flow(random_layers(3, 2, T, true), 2);
  for (int j = 3; j < T; ++j) CHECK(causal[j] == 0);
  CHECK(causal[2] > 0);

  CHECK_THROWS_AS(analysis::attention_flow({one}, T), std::out_of_range);
}

TEST_CASE("max flow never decreases when capacities increase", "[rollout]") {
  torch::manual_seed(3);
  const int T = 5, L = 3;
  auto edges = attention_graph(random_layers(L, 2, T));
  std::mt19937 rng(4);
  std::uniform_int_distribution<size_t> pick(0, edges.size() - 1);
  std::uniform_real_distribution<double> amount(0.0, 0.3);
  const int sink = L * T + 1;
  for (int source = 0; source < T; ++source) {
    auto grown = edges;
    double before = analysis::max_flow((L + 1) * T, grown, source, sink);
    for (int round = 0; round < 20; ++round) {
      for (int k = 0; k < 5; ++k) grown[pick(rng)].capacity += amount(rng);
      const double after = analysis::max_flow((L + 1) * T, grown, source, sink);
      CHECK(after >= before - 1e-12);
      before = after;
    }
  }
}

TEST_CASE("attention flow on longer inputs equals max flow on the whole attention graph", "[rollout]") {
  // attention_flow solves a reduced graph per token (only nodes that reach the position, the first
  // search replaced by the layers); max_flow searches the full graph of (L + 1)·T nodes.
  torch::manual_seed(7);
  const int T = 24, L = 4;
  for (bool causal : {false, true}) {
    auto layers = random_layers(L, 3, T, causal);
    const auto edges = attention_graph(layers);
    for (int p : {0, 5, T - 1}) {
      auto flow = analysis::attention_flow(layers, p);
      for (int j = 0; j < T; ++j) {
        INFO((causal ? "causal" : "bidirectional") << ", position " << p << ", token " << j);
        CHECK(flow[j] == Approx(analysis::max_flow((L + 1) * T, edges, j, L * T + p)).margin(1e-12));
        if (causal && j > p) CHECK(flow[j] == 0);
      }
    }
  }
}
