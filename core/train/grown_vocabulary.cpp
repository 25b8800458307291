#include "core/train/grown_vocabulary.h"

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

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

}  // namespace headlab::core::train
