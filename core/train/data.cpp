#include "core/train/data.h"

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/framing.h"
#include "core/tokenizer/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>

namespace headlab::core::train {

Objective objective_from_string(const std::string& name) {
  if (name == "mlm") return Objective::Mlm;
  if (name == "causal") return Objective::Causal;
  if (name == "seq2seq") return Objective::Seq2Seq;
  throw std::invalid_argument("objective must be mlm, causal or seq2seq, not '" + name + "'");
}

Objective objective_of(const ModelConfig& config) {
  switch (config.kind) {
    case StackKind::Encoder: return Objective::Mlm;
    case StackKind::Decoder: return Objective::Causal;
    case StackKind::EncoderDecoder: return Objective::Seq2Seq;
  }
  return Objective::Mlm;
}

const char* to_string(Objective objective) {
  switch (objective) {
    case Objective::Mlm: return "mlm";
    case Objective::Causal: return "causal";
    case Objective::Seq2Seq: return "seq2seq";
  }
  return "?";
}

uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9E3779B97F4A7C15ull + b + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

SpecialTokens special_tokens(const Tokenizer& tokenizer) {
  SpecialTokens s;
  s.vocab_size = tokenizer.vocab_size();
  s.mask = tokenizer.mask_id();
  s.pad = tokenizer.pad_id();
  s.begin = decoder_start_id(tokenizer);
  s.end = tokenizer.sep_id() ? tokenizer.sep_id() : tokenizer.eos_id();
  s.frame = sentence_frame(tokenizer);
  for (const auto& t : tokenizer.added_tokens())
    if (t.special) s.specials.push_back(t.id);
  for (auto id : {s.mask, s.pad, s.begin, s.end, tokenizer.unk_id()})
    if (id) s.specials.push_back(*id);
  std::sort(s.specials.begin(), s.specials.end());
  s.specials.erase(std::unique(s.specials.begin(), s.specials.end()), s.specials.end());
  return s;
}

int64_t Dataset::train_tokens() const {
  int64_t n = 0;
  for (const auto& e : train) n += static_cast<int64_t>(e.source.size() + e.target.size());
  return n;
}

int64_t held_out_period(double fraction) {
  if (fraction <= 0) return 0;
  return std::max<int64_t>(2, static_cast<int64_t>(std::llround(1.0 / fraction)));
}

Dataset make_lm_dataset(const std::vector<std::vector<int64_t>>& documents, int64_t seq_len, Objective objective,
                        const SpecialTokens& specials, double held_out_fraction) {
  if (objective == Objective::Seq2Seq) throw std::invalid_argument("make_lm_dataset: seq2seq needs pairs");
  const SentenceFrame frame = objective == Objective::Mlm ? specials.mlm_frame() : SentenceFrame{};
  const int64_t extra = (frame.begin ? 1 : 0) + (frame.end ? 1 : 0);
  const int64_t body = seq_len - extra;
  if (body < 2) throw std::invalid_argument("sequence length " + std::to_string(seq_len) + " is too short");
  const int64_t period = held_out_period(held_out_fraction);
  Dataset d;
  int64_t index = 0;
  for (const auto& doc : documents) {
    for (size_t start = 0; start + body <= doc.size(); start += static_cast<size_t>(body)) {
      Example e;
      if (frame.begin) e.source.push_back(*frame.begin);
      e.source.insert(e.source.end(), doc.begin() + start, doc.begin() + start + body);
      if (frame.end) e.source.push_back(*frame.end);
      ++index;
      (period && index % period == 0 ? d.held_out : d.train).push_back(std::move(e));
    }
  }
  if (d.train.empty())
    throw TooShortForASequence("no " + std::to_string(seq_len) + "-token sequence: every document (a file) has fewer " +
                             "than the " + std::to_string(body) +
                             " tokens of text one needs (give more text or a shorter --seq-len)");
  if (d.held_out.empty() && period) {  // tiny data: hold out the last example anyway
    d.held_out.push_back(d.train.back());
    if (d.train.size() > 1) d.train.pop_back();
  }
  return d;
}

Dataset make_seq2seq_dataset(const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>& pairs,
                             int64_t seq_len, double held_out_fraction) {
  const int64_t period = held_out_period(held_out_fraction);
  Dataset d;
  int64_t index = 0;
  for (const auto& [src, tgt] : pairs) {
    Example e;
    e.source.assign(src.begin(), src.begin() + std::min<int64_t>(seq_len, src.size()));
    e.target.assign(tgt.begin(), tgt.begin() + std::min<int64_t>(seq_len - 1, tgt.size()));
    if (e.source.empty() || e.target.empty()) continue;
    ++index;
    (period && index % period == 0 ? d.held_out : d.train).push_back(std::move(e));
  }
  if (d.train.empty()) throw std::runtime_error("no source<TAB>target pairs in the data");
  if (d.held_out.empty() && period) d.held_out.push_back(d.train.back());
  return d;
}

Dataset load_text_dataset(const std::vector<std::string>& paths, const Tokenizer& tokenizer, Objective objective,
                          int64_t seq_len, double held_out_fraction) {
  std::vector<std::vector<int64_t>> documents;
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs;
  for (const auto& path : paths) {
    const std::string text = read_text_file(path);
    std::vector<int64_t> doc;
    size_t start = 0, line_no = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      end = end == std::string::npos ? text.size() : end + 1;
      std::string_view line(text.data() + start, end - start);
      start = end;
      ++line_no;
      if (objective == Objective::Seq2Seq) {
        while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
        if (line.empty()) continue;
        const size_t tab = line.find('\t');
        if (tab == std::string_view::npos)
          throw std::runtime_error(path + ":" + std::to_string(line_no) + ": expected source<TAB>target");
        pairs.emplace_back(tokenizer.encode(line.substr(0, tab)).ids, tokenizer.encode(line.substr(tab + 1)).ids);
        continue;
      }
      auto ids = tokenizer.encode(line).ids;
      doc.insert(doc.end(), ids.begin(), ids.end());
    }
    if (objective != Objective::Seq2Seq) documents.push_back(std::move(doc));
  }
  try {
    if (objective == Objective::Seq2Seq) return make_seq2seq_dataset(pairs, seq_len, held_out_fraction);
    return make_lm_dataset(documents, seq_len, objective, special_tokens(tokenizer), held_out_fraction);
  } catch (const std::runtime_error& e) {
    std::string files;
    for (const auto& path : paths) files += (files.empty() ? "" : ", ") + path;
    if (dynamic_cast<const TooShortForASequence*>(&e)) throw TooShortForASequence(files + ": " + e.what());
    throw std::runtime_error(files + ": " + e.what());
  }
}

void Masking::validate() const {
  auto fraction = [](const char* name, double v) {
    if (!(v >= 0.0 && v <= 1.0))
      throw std::invalid_argument(std::string("masking: ") + name + " must be in [0, 1], got " + std::to_string(v));
  };
  fraction("rate", rate);
  fraction("mask", mask);
  fraction("random", random);
  fraction("all_mask_share", all_mask_share);
  if (rate == 0.0) throw std::invalid_argument("masking: rate must be above 0");
  if (!(rarity >= 0.0 && rarity <= 2.0))
    throw std::invalid_argument("masking: rarity must be in [0, 2], got " + std::to_string(rarity));
  if (mask + random > 1.0 + 1e-12)
    throw std::invalid_argument("masking: mask (" + std::to_string(mask) + ") + random (" + std::to_string(random) +
                                ") exceed 1");
}

std::vector<double> rarity_weights(const Dataset& data, const SpecialTokens& specials, double alpha) {
  if (alpha == 0.0) return {};
  auto is_special = [&](int64_t id) { return std::binary_search(specials.specials.begin(), specials.specials.end(), id); };
  std::vector<int64_t> count(static_cast<size_t>(specials.vocab_size), 0);
  int64_t total = 0;
  for (const Example& e : data.train)
    for (int64_t id : e.source) {
      if (id < 0 || id >= specials.vocab_size || is_special(id)) continue;
      ++count[static_cast<size_t>(id)];
      ++total;
    }
  std::vector<double> w(count.size());
  double sum = 0;  // Σ over training tokens of c^−α = Σ over ids of c · c^−α
  for (size_t id = 0; id < w.size(); ++id) {
    w[id] = std::pow(double(std::max<int64_t>(count[id], 1)), -alpha);
    sum += double(count[id]) * w[id];
  }
  if (total == 0 || sum <= 0) return {};
  const double mean = sum / double(total);
  for (double& x : w) x /= mean;
  return w;
}

Batch make_batch(const std::vector<const Example*>& examples, Objective objective, const SpecialTokens& specials,
                 uint64_t mask_seed, const Masking& masking) {
  const int64_t B = static_cast<int64_t>(examples.size());
  if (B == 0) throw std::invalid_argument("make_batch: no examples");
  const int64_t pad = specials.pad.value_or(0);
  size_t T = 0, S = 0;
  for (const Example* e : examples) {
    T = std::max(T, e->source.size());
    S = std::max(S, e->target.size() + 1);
  }
  std::vector<int64_t> ids(B * T, pad);
  std::vector<uint8_t> padding(B * T, 1);
  Batch batch;
  for (int64_t b = 0; b < B; ++b) {
    const auto& src = examples[b]->source;
    std::copy(src.begin(), src.end(), ids.begin() + b * T);
    std::fill(padding.begin() + b * T, padding.begin() + b * T + src.size(), 0);
    batch.tokens += static_cast<int64_t>(src.size());
  }
  const bool padded = std::find(padding.begin(), padding.end(), 1) != padding.end();
  auto long_tensor = [](std::vector<int64_t>& v, int64_t rows, int64_t cols) {
    return torch::from_blob(v.data(), {rows, cols}, torch::kLong).clone();
  };
  auto bool_tensor = [](std::vector<uint8_t>& v, int64_t rows, int64_t cols) {
    return torch::from_blob(v.data(), {rows, cols}, torch::kUInt8).to(torch::kBool);
  };

  if (objective == Objective::Seq2Seq) {
    if (!specials.begin || !specials.end) throw std::runtime_error("seq2seq needs begin and end tokens");
    std::vector<int64_t> dec(B * S, pad), labels(B * S, -100);
    std::vector<uint8_t> dec_pad(B * S, 1);
    for (int64_t b = 0; b < B; ++b) {
      const auto& tgt = examples[b]->target;
      dec[b * S] = *specials.begin;
      for (size_t i = 0; i < tgt.size(); ++i) {
        dec[b * S + i + 1] = tgt[i];
        labels[b * S + i] = tgt[i];
      }
      labels[b * S + tgt.size()] = *specials.end;
      std::fill(dec_pad.begin() + b * S, dec_pad.begin() + b * S + tgt.size() + 1, 0);
    }
    batch.ids = long_tensor(ids, B, T);
    if (padded) batch.padding = bool_tensor(padding, B, T);
    batch.decoder_ids = long_tensor(dec, B, S);
    batch.decoder_padding = bool_tensor(dec_pad, B, S);
    batch.labels = long_tensor(labels, B, S);
    return batch;
  }

  std::vector<int64_t> labels(B * T, -100);
  if (objective == Objective::Causal) {
    for (int64_t b = 0; b < B; ++b) {
      const auto& src = examples[b]->source;
      for (size_t t = 0; t + 1 < src.size(); ++t) labels[b * T + t] = src[t + 1];
    }
  } else {
    if (!specials.mask) throw std::runtime_error("masked LM needs a [MASK] token");
    std::mt19937_64 rng(mask_seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    auto is_special = [&](int64_t id) { return std::binary_search(specials.specials.begin(), specials.specials.end(), id); };
    auto random_token = [&] {
      for (;;) {
        const int64_t id = static_cast<int64_t>(rng() % static_cast<uint64_t>(specials.vocab_size));
        if (!is_special(id)) return id;
      }
    };
    std::vector<uint8_t> all_mask(static_cast<size_t>(B), 0);  // sequences whose targets all become [MASK]
    if (masking.all_mask_share > 0)  // no draw otherwise: batches stay as they were before the option
      for (auto& a : all_mask) a = u(rng) < masking.all_mask_share;
    int64_t masked = 0;
    size_t first_eligible = ids.size();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (padding[i] || is_special(ids[i])) continue;
      if (first_eligible == ids.size()) first_eligible = i;
      const size_t id = static_cast<size_t>(ids[i]);
      const double chance =
          id < masking.weights.size() ? std::min(1.0, masking.rate * masking.weights[id]) : masking.rate;
      if (u(rng) >= chance) continue;
      labels[i] = ids[i];
      ++masked;
      const double r = u(rng);
      if (all_mask[i / T] || r < masking.mask) ids[i] = *specials.mask;
      else if (r < masking.mask + masking.random) ids[i] = random_token();
    }
    if (masked == 0 && first_eligible < ids.size()) {  // never a batch without a target
      labels[first_eligible] = ids[first_eligible];
      ids[first_eligible] = *specials.mask;
    }
  }
  batch.ids = long_tensor(ids, B, T);
  if (padded) batch.padding = bool_tensor(padding, B, T);
  batch.labels = long_tensor(labels, B, T);
  return batch;
}

BatchOrder::BatchOrder(size_t examples, int64_t batch_size, uint64_t seed)
    : examples_(examples), batch_size_(std::max<int64_t>(1, batch_size)), seed_(seed) {
  if (examples == 0) throw std::invalid_argument("BatchOrder: no examples");
}

std::pair<int64_t, int64_t> BatchOrder::position(int64_t step) const {
  const int64_t p = step * batch_size_;
  return {p / static_cast<int64_t>(examples_), p % static_cast<int64_t>(examples_)};
}

std::vector<size_t> BatchOrder::batch(int64_t step) {
  std::vector<size_t> out;
  for (int64_t i = 0; i < batch_size_; ++i) {
    const int64_t p = step * batch_size_ + i;
    const int64_t epoch = p / static_cast<int64_t>(examples_);
    if (epoch != epoch_) {
      permutation_.resize(examples_);
      for (size_t k = 0; k < examples_; ++k) permutation_[k] = k;
      std::mt19937_64 rng(mix_seed(seed_, static_cast<uint64_t>(epoch)));
      for (size_t k = examples_ - 1; k > 0; --k) std::swap(permutation_[k], permutation_[rng() % (k + 1)]);
      epoch_ = epoch;
    }
    out.push_back(permutation_[static_cast<size_t>(p % static_cast<int64_t>(examples_))]);
  }
  return out;
}

}  // namespace headlab::core::train
