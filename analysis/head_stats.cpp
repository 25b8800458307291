#include "analysis/head_stats.h"

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
  auto A = maps.to(torch::kFloat64).contiguous();
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
  auto m = word_maps.to(torch::kFloat64).contiguous();
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

void accumulate_layer(HeadReport& report, const std::string& stack, int layer, int heads_per_layer,
                      const torch::Tensor& maps, const SentenceLayout& layout) {
  const auto& settings = report.settings;
  auto A = maps.to(torch::kFloat32).contiguous();
  const int64_t H = A.size(0), T = A.size(1), S = A.size(2);
  if (T != static_cast<int64_t>(layout.query_word.size()) || S != static_cast<int64_t>(layout.key_word.size()))
    throw std::invalid_argument("accumulate_layer: maps are [" + std::to_string(T) + ", " + std::to_string(S) +
                                "] but the sentence has " + std::to_string(layout.query_word.size()) + " × " +
                                std::to_string(layout.key_word.size()) + " tokens");
  const float* a = A.data_ptr<float>();
  const bool syntactic = settings.has("syntactic") && !layout.arcs.empty();
  std::vector<std::vector<int>> predicted;
  if (syntactic) predicted = word_argmax(word_level_maps(A, layout));
  for (int64_t h = 0; h < H; ++h) {
    HeadEntry* e = report.find(stack, layer, static_cast<int>(h));
    if (!e) throw std::logic_error("accumulate_layer: no entry for " + stack + " " + std::to_string(layer) + "." + std::to_string(h));
    for (int64_t t = 0; t < T; ++t) {
      if (layout.special_query(size_t(t))) continue;
      const float* row = a + (h * T + t) * S;
      // Maxima and argmaxes over non-special keys; ties go to the lowest index. (Mixed weights U may
      // be negative: the maxima start below every value.)
      int best = -1;
      float best_value = 0, all_max = std::numeric_limits<float>::lowest();
      for (int64_t s = 0; s < S; ++s) {
        all_max = std::max(all_max, row[s]);
        if (!layout.special_key(size_t(s)) && (best < 0 || row[s] > best_value)) {
          best = static_cast<int>(s);
          best_value = row[s];
        }
      }
      ++e->queries;
      e->confidence_sum += best < 0 ? 0.0 : best_value;
      e->confidence_all_keys_sum += all_max;
      if (best < 0) continue;
      ++e->offsets[best - static_cast<int>(t)];
      if (layout.rare_counted) {
        ++e->rare_queries;
        if (best == layout.rarest) ++e->rare_hits;
        if (best == layout.rarest || best == layout.second_rarest) ++e->rare_two_hits;
      }
    }
    if (!syntactic) continue;
    const size_t index = size_t(layer) * size_t(heads_per_layer) + size_t(h);
    auto& relations = report.relations[stack];
    for (const auto& arc : layout.arcs) {
      RelationStats& r = relations[arc.relation];
      if (r.dependent_to_head.size() <= index) {
        r.dependent_to_head.resize(index + 1, 0);
        r.head_to_dependent.resize(index + 1, 0);
      }
      if (predicted[h][arc.dependent] == arc.head) ++r.dependent_to_head[index];
      if (predicted[h][arc.head] == arc.dependent) ++r.head_to_dependent[index];
    }
  }
}

void accumulate_arcs(HeadReport& report, const std::string& stack, int heads_in_stack, const SentenceLayout& layout) {
  if (!report.settings.has("syntactic")) return;
  const int max_offset = report.settings.baseline_max_offset;
  auto& relations = report.relations[stack];
  for (const auto& arc : layout.arcs) {
    RelationStats& r = relations[arc.relation];
    if (static_cast<int>(r.dependent_to_head.size()) < heads_in_stack) {
      r.dependent_to_head.resize(heads_in_stack, 0);
      r.head_to_dependent.resize(heads_in_stack, 0);
    }
    ++r.count;
    // The fixed-offset baseline from the dependent: offset head − dependent predicts the head when
    // it is within −max…+max (never 0: a word is not its own head).
    const int offset = arc.head - arc.dependent;
    if (offset != 0 && std::abs(offset) <= max_offset) ++r.baseline_hits[offset];
  }
}

}  // namespace headlab::analysis
