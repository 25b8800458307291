#include "core/train/grown_vocabulary.h"

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

namespace headlab::core::train {

namespace fs = std::filesystem;

int64_t grown_vocabulary(const std::string& folder, const std::string& tokenizer_json) {
  const fs::path folder_tokenizer = fs::path(folder) / "tokenizer.json";
  if (tokenizer_json.empty() || !fs::exists(folder_tokenizer)) return 0;
  if (read_text_file(folder_tokenizer.string()) == read_text_file(tokenizer_json)) return 0;
  const auto before = Tokenizer::load(folder_tokenizer.string());
  const auto now = Tokenizer::load(tokenizer_json);
  auto refuse = [&](const std::string& why) {
    return std::runtime_error(folder + ": --init model was trained with another tokenizer than " + tokenizer_json +
                              ", and " + tokenizer_json + " does not extend it: " + why);
  };
  if (now->vocab_size() <= before->vocab_size())
    throw refuse("it has " + std::to_string(now->vocab_size()) + " tokens, the model's has " +
                 std::to_string(before->vocab_size()));
  for (int64_t id = 0; id < before->vocab_size(); ++id)
    if (before->id_to_token(id) != now->id_to_token(id))
      throw refuse("id " + std::to_string(id) + " is '" + before->id_to_token(id) + "' in the model's tokenizer and '" +
                   now->id_to_token(id) + "' in the run's");
  return before->vocab_size();
}

torch::Tensor draw_rows_like(const torch::Tensor& known, int64_t n, uint64_t seed) {
  if (known.dim() < 1 || known.size(0) < 2) throw std::invalid_argument("draw_rows_like: needs two known rows or more");
  torch::NoGradGuard no_grad;
  const torch::Tensor x = known.reshape({known.size(0), -1}).to(torch::kFloat64);  // [V, D]
  const int64_t d = x.size(1);
  const torch::Tensor mean = x.mean(0);                                         // [D]
  const torch::Tensor centred = x - mean;
  torch::Tensor cov = centred.t().mm(centred) / double(x.size(0) - 1);          // [D, D]
  // A little jitter keeps the factorisation defined when the rows span fewer than D directions.
  const double jitter = 1e-6 * std::max(1e-12, cov.diagonal().mean().item<double>());
  cov = cov + jitter * torch::eye(d, torch::kFloat64);
  const torch::Tensor lower = torch::linalg_cholesky(cov);                       // [D, D], cov = L Lᵀ
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  const torch::Tensor z = at::normal(0, 1, {n, d}, generator).to(torch::kFloat64);  // [n, D]
  std::vector<int64_t> shape(known.sizes().begin(), known.sizes().end());
  shape[0] = n;
  return (mean + z.mm(lower.t())).to(torch::kFloat32).reshape(shape);
}

NewTokenRows parse_new_token_rows(const std::string& name) {
  if (name == "typical") return NewTokenRows::Typical;
  if (name == "frequency") return NewTokenRows::Frequency;
  throw std::invalid_argument("new token rows '" + name + "': expected typical or frequency");
}

torch::Tensor rows_by_frequency(const torch::Tensor& known, const std::vector<int64_t>& counts,
                                const std::vector<int64_t>& excluded, int64_t n, int64_t neighbours) {
  const int64_t K = known.dim() >= 1 ? known.size(0) : 0;
  if (static_cast<int64_t>(counts.size()) < K + n)
    throw std::invalid_argument("rows_by_frequency: " + std::to_string(counts.size()) + " token counts for " +
                                std::to_string(K + n) + " tokens");
  std::vector<int64_t> candidates;  // known ids that may be neighbours, by (count, id)
  for (int64_t id = 0; id < K; ++id)
    if (std::find(excluded.begin(), excluded.end(), id) == excluded.end()) candidates.push_back(id);
  if (neighbours < 1 || static_cast<int64_t>(candidates.size()) < neighbours)
    throw std::invalid_argument("rows_by_frequency: " + std::to_string(candidates.size()) + " known tokens for " +
                                std::to_string(neighbours) + " neighbours");
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](int64_t a, int64_t b) { return counts[size_t(a)] < counts[size_t(b)]; });
  auto level = [&](int64_t id) { return std::log1p(static_cast<double>(counts[size_t(id)])); };
  torch::NoGradGuard no_grad;
  const torch::Tensor rows = known.reshape({K, -1}).to(torch::kFloat64);  // [K, D]
  torch::Tensor out = torch::empty({n, rows.size(1)}, torch::kFloat64);   // [n, D]
  const int64_t C = static_cast<int64_t>(candidates.size());
  for (int64_t i = 0; i < n; ++i) {
    const double target = level(K + i);
    // The window of `neighbours` grows from the insertion point towards the nearer side.
    int64_t right = std::lower_bound(candidates.begin(), candidates.end(), counts[size_t(K + i)],
                                     [&](int64_t id, int64_t c) { return counts[size_t(id)] < c; }) -
                    candidates.begin();
    int64_t left = right - 1;
    std::vector<int64_t> chosen;
    while (static_cast<int64_t>(chosen.size()) < neighbours) {
      const bool take_left =
          right >= C || (left >= 0 && target - level(candidates[size_t(left)]) <= level(candidates[size_t(right)]) - target);
      chosen.push_back(take_left ? candidates[size_t(left--)] : candidates[size_t(right++)]);
    }
    out[i] = rows.index_select(0, torch::tensor(chosen, torch::kLong)).mean(0);
  }
  std::vector<int64_t> shape(known.sizes().begin(), known.sizes().end());
  shape[0] = n;
  return out.to(torch::kFloat32).reshape(shape);
}

}  // namespace headlab::core::train
