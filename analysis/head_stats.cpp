#include "analysis/head_stats.h"

#include "analysis/measure.h"

#include "analysis/conllu.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace headlab::analysis {

void set_rare_positions(SentenceLayout& layout, const std::vector<int64_t>& ranks, int64_t rare_min_rank) {
  layout.rarest = layout.second_rarest = -1;
  const int S = static_cast<int>(layout.key_word.size());
  for (int s = 0; s < S; ++s) {
    if (layout.special_key(size_t(s))) continue;
    if (layout.rarest < 0 || ranks[s] > ranks[layout.rarest]) {
      layout.second_rarest = layout.rarest;
      layout.rarest = s;
    } else if (layout.second_rarest < 0 || ranks[s] > ranks[layout.second_rarest]) {
      layout.second_rarest = s;
    }
  }
  layout.rare_counted = layout.rarest >= 0 && ranks[layout.rarest] > rare_min_rank;
}

std::vector<bool> words_with_tokens(const std::vector<int>& token_word, int words) {
  std::vector<bool> has(static_cast<size_t>(std::max(0, words)), false);
  for (int w : token_word)
    if (w >= 0 && w < words) has[static_cast<size_t>(w)] = true;
  return has;
}

std::vector<SentenceLayout::Arc> scored_arcs(const std::vector<int>& heads, const std::vector<std::string>& relations,
                                             bool strip_subtypes, const std::vector<bool>& word_has_token,
                                             int64_t* unscorable) {
  std::vector<SentenceLayout::Arc> arcs;
  const int W = static_cast<int>(heads.size());
  auto has_token = [&](int w) { return word_has_token.empty() || (w < static_cast<int>(word_has_token.size()) && word_has_token[size_t(w)]); };
  for (int d = 0; d < W; ++d) {
    if (heads[d] < 0 || heads[d] >= W || heads[d] == d) continue;
    const std::string relation = normalize_relation(relations[d], strip_subtypes);
    const std::string base = relation.substr(0, relation.find(':'));
    if (base == "root" || base == "punct" || relation.empty()) continue;
    if (!has_token(d) || !has_token(heads[d])) {
      if (unscorable) ++*unscorable;
      continue;
    }
    arcs.push_back({d, heads[d], relation});
  }
  return arcs;
}

torch::Tensor word_level_maps(const torch::Tensor& maps, const SentenceLayout& layout) {
  const int64_t H = maps.size(0), T = maps.size(1), S = maps.size(2);
  const int W = layout.words;
  auto A = maps.to(torch::kCPU, torch::kFloat64).contiguous();
  auto out = torch::zeros({H, W, W}, torch::kFloat64);
  const double* a = A.data_ptr<double>();
  double* o = out.data_ptr<double>();
  std::vector<int> tokens_in_word(W, 0);
  for (int t = 0; t < T; ++t)
    if (layout.query_word[t] >= 0) ++tokens_in_word[layout.query_word[t]];
  for (int64_t h = 0; h < H; ++h)
    for (int64_t t = 0; t < T; ++t) {
      const int i = layout.query_word[t];
      if (i < 0) continue;
      const double weight = 1.0 / tokens_in_word[i];  // from a word: the mean over its tokens
      const double* row = a + (h * T + t) * S;
      double* orow = o + (h * W + i) * W;
      for (int64_t s = 0; s < S; ++s) {
        const int j = layout.key_word[s];
        if (j >= 0) orow[j] += weight * row[s];  // to a word: the sum over its tokens
      }
    }
  return out;
}

std::vector<std::vector<int>> word_argmax(const torch::Tensor& word_maps) {
  auto m = word_maps.to(torch::kCPU, torch::kFloat64).contiguous();
  const int64_t H = m.size(0), W = m.size(1);
  const double* p = m.data_ptr<double>();
  std::vector<std::vector<int>> out(H, std::vector<int>(W, -1));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < W; ++i) {
      const double* row = p + (h * W + i) * W;
      double best = 0.0;  // strictly above 0, else nothing is predicted
      for (int64_t j = 0; j < W; ++j)
        if (j != i && row[j] > best) {
          best = row[j];
          out[h][i] = static_cast<int>(j);
        }
    }
  return out;
}

RowMaxima row_maxima(const torch::Tensor& maps_f32, const SentenceLayout& layout) {
  const int64_t H = maps_f32.size(0), T = maps_f32.size(1), S = maps_f32.size(2);
  if (T != static_cast<int64_t>(layout.query_word.size()) || S != static_cast<int64_t>(layout.key_word.size()))
    throw std::invalid_argument("accumulate_layer: maps are [" + std::to_string(T) + ", " + std::to_string(S) +
                                "] but the sentence has " + std::to_string(layout.query_word.size()) + " × " +
                                std::to_string(layout.key_word.size()) + " tokens");
  const float* a = maps_f32.data_ptr<float>();
  RowMaxima rows;
  rows.heads = H;
  rows.queries = T;
  rows.best.assign(size_t(H * T), -1);
  rows.best_value.assign(size_t(H * T), 0.0f);
  rows.all_keys_max.assign(size_t(H * T), 0.0f);
  rows.distribution.assign(size_t(H * T), false);
  rows.counted.assign(size_t(T), false);
  for (int64_t t = 0; t < T; ++t) rows.counted[size_t(t)] = !layout.special_query(size_t(t));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t t = 0; t < T; ++t) {
      if (!rows.counted[size_t(t)]) continue;
      const float* row = a + (h * T + t) * S;
      // Maxima and argmaxes over non-special keys; ties go to the lowest index. (Mixed weights U may
      // be negative: the maxima start below every value.)
      int best = -1;
      float best_value = 0, all_max = std::numeric_limits<float>::lowest(), all_min = 0;
      double sum = 0;
      for (int64_t k = 0; k < S; ++k) {
        all_max = std::max(all_max, row[k]);
        all_min = std::min(all_min, row[k]);
        sum += row[k];
        if (!layout.special_key(size_t(k)) && (best < 0 || row[k] > best_value)) {
          best = static_cast<int>(k);
          best_value = row[k];
        }
      }
      const size_t i = rows.at(h, t);
      rows.best[i] = best;
      rows.best_value[i] = best_value;
      rows.all_keys_max[i] = all_max;
      rows.distribution[i] = all_min >= -1e-6f && std::abs(sum - 1.0) <= 1e-3;
    }
  return rows;
}

void count_queries(HeadReport& report, core::Stack stack, int layer, const RowMaxima& rows) {
  for (int64_t h = 0; h < rows.heads; ++h) {
    HeadEntry* e = report.find(stack, layer, static_cast<int>(h));
    if (!e) throw std::logic_error("accumulate_layer: no entry for " + std::string(core::stack_name(stack)) + " " + std::to_string(layer) + "." + std::to_string(h));
    for (int64_t t = 0; t < rows.queries; ++t)
      if (rows.counted[size_t(t)]) ++e->queries;
  }
}

void accumulate_layer(HeadReport& report, core::Stack stack, int layer, int heads_per_layer,
                      const torch::Tensor& maps, const SentenceLayout& layout) {
  const auto A = maps.to(torch::kFloat32).contiguous();
  const RowMaxima rows = row_maxima(A, layout);
  count_queries(report, stack, layer, rows);
  for (auto& m : measures_for_run(report.settings))
    if (m->reads_maps()) m->add_layer(report, stack, layer, heads_per_layer, A, rows, layout);
}

void accumulate_arcs(HeadReport& report, core::Stack stack, int heads_in_stack, const SentenceLayout& layout) {
  for (auto& m : measures_for_run(report.settings)) m->add_stack(report, stack, heads_in_stack, layout);
}

}  // namespace headlab::analysis
