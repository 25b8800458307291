#include "analysis/head_roles.h"

#include "core/model.h"
#include "core/run.h"
#include "core/tokenizer.h"
#include "core/tokenizer_framing.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace headlab::analysis {

std::vector<int64_t> token_frequencies(const core::Tokenizer& tokenizer, const std::vector<std::string>& texts) {
  std::vector<int64_t> freq(static_cast<size_t>(tokenizer.vocab_size()), 0);
  for (const auto& text : texts) {
    std::stringstream in(text);
    for (std::string line; std::getline(in, line);)
      for (int64_t id : tokenizer.encode(line).ids)
        if (id >= 0 && id < static_cast<int64_t>(freq.size())) ++freq[static_cast<size_t>(id)];
  }
  return freq;
}

namespace {

struct RelationCounts {
  std::map<int, int64_t> offsets;  // head − dependent word offset → count
  int64_t count = 0;
  std::vector<int64_t> to_head, to_dependent;  // hits per (layer, head)
};

}  // namespace

HeadRoleReport measure_head_roles(core::Model& model, const std::vector<UdSentence>& sentences,
                                  const std::vector<int64_t>& frequencies, const HeadRoleOptions& o) {
  if (!model.tokenizer) throw std::runtime_error("measuring head roles needs a model with a tokenizer");
  const auto& tok = *model.tokenizer;
  const bool encoder = model.config.kind == core::StackKind::Encoder;
  HeadRoleReport report;
  report.stack = encoder ? "encoder" : "decoder";
  const int layers = model.module->layer_count(report.stack);
  const auto& attention = (encoder ? model.config.encoder : model.config.decoder)->attention;
  const int heads = attention.output_heads();
  const int H = layers * heads;
  std::vector<std::map<int, int64_t>> offset_hist(H);
  std::vector<int64_t> rare_hits(H, 0), special_hits(H, 0), rare_content_hits(H, 0), uncommon_hits(H, 0);
  // The rare_common_tokens most frequent ids (ties broken by id).
  std::vector<bool> common(frequencies.size(), false);
  {
    std::vector<int64_t> order(frequencies.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
    const size_t n = std::min(order.size(), static_cast<size_t>(std::max<int64_t>(0, o.rare_common_tokens)));
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                      [&](int64_t a, int64_t b) { return frequencies[a] != frequencies[b] ? frequencies[a] > frequencies[b] : a < b; });
    for (size_t i = 0; i < n; ++i) common[static_cast<size_t>(order[i])] = true;
  }
  std::map<std::string, RelationCounts> relations;
  // An encoder's sentence is framed as its tokenizer frames one ([CLS] … [SEP], <s> …, or nothing).
  const auto [begin, end] = core::sentence_frame(tok);

  size_t used = 0;
  for (const auto& sentence : sentences) {
    if (o.max_sentences && used >= o.max_sentences) break;
    // Tokens word by word, so every token knows its word.
    std::vector<int64_t> ids;
    std::vector<int> word_of;  // -1 for special tokens
    if (encoder && begin) { ids.push_back(*begin); word_of.push_back(-1); }
    const int W = static_cast<int>(sentence.words.size());
    for (int w = 0; w < W; ++w) {
      const std::string text = (w > 0 && tok.kind() == "bpe" ? " " : "") + sentence.words[w].form;
      for (int64_t id : tok.encode(text).ids) {
        ids.push_back(id);
        word_of.push_back(w);
      }
    }
    if (encoder && end) { ids.push_back(*end); word_of.push_back(-1); }
    const int T = static_cast<int>(ids.size());
    if (T > o.max_tokens || T < 3) continue;
    ++used;
    std::vector<int> content;
    for (int t = 0; t < T; ++t)
      if (word_of[t] >= 0) content.push_back(t);
    bool any_word_without_token = false;
    std::vector<int> tokens_per_word(W, 0);
    for (int t : content) ++tokens_per_word[word_of[t]];
    for (int c : tokens_per_word) any_word_without_token |= c == 0;
    int rare_pos = content.front();
    auto freq_of = [&](int64_t id) {
      return id >= 0 && id < static_cast<int64_t>(frequencies.size()) ? frequencies[id] : 0;
    };
    for (int t : content)
      if (freq_of(ids[t]) < freq_of(ids[rare_pos])) rare_pos = t;
    const int64_t rare_id = ids[rare_pos];
    const bool uncommon = !(rare_id >= 0 && rare_id < static_cast<int64_t>(common.size()) && common[rare_id]);

    core::RunRequest request;
    request.ids = ids;
    if (!encoder && model.config.kind == core::StackKind::EncoderDecoder) break;  // not measured
    request.capture = core::kCaptureWeights | core::kCaptureMixedWeights;
    auto trace = core::run(model, request);
    const auto& stack = encoder ? trace->encoder : trace->decoder;

    // Word-level attention (Clark et al.): sum over the attended word's tokens, mean over the
    // attending word's tokens; special tokens dropped.
    auto M = torch::zeros({W, T});
    for (int t : content) M[word_of[t]][t] = 1.0;
    auto counts = M.sum(1).clamp_min(1).view({1, W, 1});
    for (int l = 0; l < layers; ++l) {
      auto A = core::value_weights(stack.layers[l].self).to(torch::kFloat32);  // [heads, T, T]
      auto top = A.argmax(-1);                                                 // [heads, T]
      auto top_acc = top.accessor<int64_t, 2>();
      auto content_mask = M.sum(0).gt(0).view({1, 1, T});                     // word tokens as keys
      auto top_content = A.masked_fill(content_mask.logical_not(), -1.0f).argmax(-1);
      auto top_content_acc = top_content.accessor<int64_t, 2>();
      auto Aw = torch::matmul(torch::matmul(M, A), M.t()) / counts;            // [heads, W, W]
      auto wtop = Aw.argmax(-1);                                               // [heads, W]
      auto wtop_acc = wtop.accessor<int64_t, 2>();
      for (int h = 0; h < heads; ++h) {
        const int index = l * heads + h;
        for (int q : content) {
          ++offset_hist[index][static_cast<int>(top_acc[h][q]) - q];
          if (top_acc[h][q] == rare_pos) {
            ++rare_hits[index];
            if (uncommon) ++uncommon_hits[index];
          }
          if (word_of[top_acc[h][q]] < 0) ++special_hits[index];
          if (top_content_acc[h][q] == rare_pos) ++rare_content_hits[index];
        }
        if (any_word_without_token) continue;
        for (int d = 0; d < W; ++d) {
          const int head_word = sentence.words[d].head - 1;
          if (head_word < 0 || head_word >= W) continue;
          auto& rc = relations[sentence.words[d].relation];
          if (rc.to_head.empty()) {
            rc.to_head.assign(H, 0);
            rc.to_dependent.assign(H, 0);
          }
          if (wtop_acc[h][d] == head_word) ++rc.to_head[index];
          if (wtop_acc[h][head_word] == d) ++rc.to_dependent[index];
        }
      }
    }
    report.queries += static_cast<int64_t>(content.size());
    if (uncommon) report.uncommon_queries += static_cast<int64_t>(content.size());
    if (!any_word_without_token)
      for (int d = 0; d < W; ++d) {
        const int head_word = sentence.words[d].head - 1;
        if (head_word < 0 || head_word >= W) continue;
        auto& rc = relations[sentence.words[d].relation];
        ++rc.count;
        ++rc.offsets[head_word - d];
      }
  }
  report.sentences = static_cast<int64_t>(used);

  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      const int index = l * heads + h;
      HeadRole r;
      r.layer = l;
      r.head = h;
      int64_t best = 0;
      for (const auto& [offset, n] : offset_hist[index])
        if (n > best) {
          best = n;
          r.best_offset = offset;
        }
      if (report.queries > 0) {
        r.positional_share = double(best) / double(report.queries);
        r.rare_share = double(rare_hits[index]) / double(report.queries);
        r.special_share = double(special_hits[index]) / double(report.queries);
        r.rare_share_content = double(rare_content_hits[index]) / double(report.queries);
      }
      if (report.uncommon_queries > 0)
        r.rare_share_uncommon = double(uncommon_hits[index]) / double(report.uncommon_queries);
      r.positional = r.positional_share >= o.positional_threshold;
      r.rare = r.rare_share > o.rare_threshold;
      report.heads.push_back(r);
    }
  for (const auto& [name, rc] : relations) {
    if (rc.count < o.min_relation_count) continue;
    int64_t best_offset = 0;
    for (const auto& [offset, n] : rc.offsets) best_offset = std::max(best_offset, n);
    const double baseline = double(best_offset) / double(rc.count);
    for (int dir = 0; dir < 2; ++dir) {
      const auto& hits = dir == 0 ? rc.to_head : rc.to_dependent;
      RelationScore s;
      s.relation = name;
      s.direction = dir == 0 ? "dependent->head" : "head->dependent";
      s.baseline = baseline;
      s.count = rc.count;
      for (int i = 0; i < H; ++i) {
        const double acc = double(hits[i]) / double(rc.count);
        if (acc >= baseline + o.syntactic_margin) report.heads[i].syntactic = true;
        if (acc > s.accuracy) {
          s.accuracy = acc;
          s.layer = i / heads;
          s.head = i % heads;
        }
      }
      report.relations.push_back(s);
    }
  }
  for (const auto& r : report.heads) {
    report.positional_heads += r.positional;
    report.rare_heads += r.rare;
    report.syntactic_heads += r.syntactic;
  }
  return report;
}

nlohmann::json HeadRoleReport::to_json() const {
  nlohmann::json j;
  j["stack"] = stack;
  j["sentences"] = sentences;
  j["queries"] = queries;
  j["uncommon_queries"] = uncommon_queries;
  j["positional_heads"] = positional_heads;
  j["rare_word_heads"] = rare_heads;
  j["syntactic_heads"] = syntactic_heads;
  for (const auto& h : heads)
    j["heads"].push_back({{"layer", h.layer}, {"head", h.head}, {"best_offset", h.best_offset},
                          {"positional_share", h.positional_share}, {"rare_share", h.rare_share},
                          {"special_share", h.special_share}, {"rare_share_content_keys", h.rare_share_content},
                          {"rare_share_uncommon_sentences", h.rare_share_uncommon},
                          {"positional", h.positional}, {"rare_word", h.rare}, {"syntactic", h.syntactic}});
  for (const auto& r : relations)
    j["relations"].push_back({{"relation", r.relation}, {"direction", r.direction}, {"layer", r.layer},
                              {"head", r.head}, {"accuracy", r.accuracy}, {"baseline", r.baseline},
                              {"count", r.count}});
  return j;
}

std::string HeadRoleReport::summary() const {
  std::ostringstream s;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%lld sentences, %lld query tokens (%s); %lld in sentences whose rarest token is uncommon\n",
                static_cast<long long>(sentences), static_cast<long long>(queries), stack.c_str(),
                static_cast<long long>(uncommon_queries));
  s << buf << "layer.head  best-offset  positional  rare-word  (on specials, rare among word keys, rare in "
           "sentences whose rarest token is uncommon)\n";
  for (const auto& h : heads) {
    std::snprintf(buf, sizeof buf, "  %d.%d        %+4d        %5.1f%%%s    %5.1f%%%s   (%5.1f%%, %5.1f%%, %5.1f%%)%s\n",
                  h.layer, h.head, h.best_offset, 100 * h.positional_share, h.positional ? "*" : " ",
                  100 * h.rare_share, h.rare ? "*" : " ", 100 * h.special_share, 100 * h.rare_share_content,
                  100 * h.rare_share_uncommon, h.syntactic ? "  syntactic" : "");
    s << buf;
  }
  s << "relation        direction         best head  accuracy  baseline  count\n";
  for (const auto& r : relations) {
    std::snprintf(buf, sizeof buf, "  %-12s  %-16s  %d.%d        %5.1f%%    %5.1f%%   %lld%s\n", r.relation.c_str(),
                  r.direction.c_str(), r.layer, r.head, 100 * r.accuracy, 100 * r.baseline,
                  static_cast<long long>(r.count), r.accuracy >= r.baseline + 0.10 ? "  *" : "");
    s << buf;
  }
  std::snprintf(buf, sizeof buf, "positional heads: %d, rare-word heads: %d, syntactic heads: %d\n", positional_heads,
                rare_heads, syntactic_heads);
  s << buf;
  return s.str();
}

}  // namespace headlab::analysis
