#include "core/model/linear.h"

#include "core/precision.h"

#include <torch/autograd.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/init.h>
#include <torch/torch.h>
#include <ATen/Parallel.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cmath>
#include <cstdint>

namespace headlab::core {
namespace {

thread_local bool weights_arrive_later = false;

// Torch's float32 matmul precision follows the process's choice (core/precision.h): TF32 on a card
// only in fast precision. Set here, where every run's first product passes, so a choice made after
// a model moved to a card (the window's) reaches the card's products too.
std::atomic<int> matmul_precision_set{-1};
std::mutex matmul_precision_mutex;
void sync_matmul_precision() {
  if (matmul_precision_set.load() == static_cast<int>(current_precision())) return;
  std::lock_guard<std::mutex> lock(matmul_precision_mutex);
  const Precision want = current_precision();  // read again under the lock: the last writer sets the newest choice
  at::globalContext().setFloat32MatmulPrecision(want == Precision::fast ? "high" : "highest");
  matmul_precision_set.store(static_cast<int>(want));
}

constexpr int64_t kStepBytes = 4 << 20;
constexpr int64_t kCardStepBytes = int64_t(256) << 20;

#if defined(__x86_64__) && defined(__GNUC__)
// A few rows of x against every row of a contiguous BF16 or F16 w, each weight upcast in registers:
// y[t, n] = Σ_k x[t, k] · w[n, k] in float32, 16 lanes then summed. Generation's steps (one token)
// are bound by reading the weights; upcasting them through a buffer first reads them at ~9 GB/s,
// this at the memory's speed. Rows n0 … n1 − 1; up to four rows of x per pass over a weight row.
template <bool kHalf>
__attribute__((target("avx512f"))) void few_rows_avx512(const float* x, int64_t T, int64_t K, const uint16_t* w,
                                                         int64_t n0, int64_t n1, float* y, int64_t N) {
  for (int64_t n = n0; n < n1; ++n) {
    const uint16_t* row = w + n * K;
    for (int64_t t0 = 0; t0 < T; t0 += 4) {
      const int64_t tn = std::min<int64_t>(4, T - t0);
      const float* x0 = x + t0 * K;
      __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
      int64_t k = 0;
      for (; k + 16 <= K; k += 16) {
        const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k));
        __m512 weights;
        if constexpr (kHalf) weights = _mm512_cvtph_ps(packed);
        else weights = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(packed), 16));
        for (int64_t t = 0; t < tn; ++t) acc[t] = _mm512_fmadd_ps(weights, _mm512_loadu_ps(x0 + t * K + k), acc[t]);
      }
      for (int64_t t = 0; t < tn; ++t) {
        float sum = _mm512_reduce_add_ps(acc[t]);
        for (int64_t j = k; j < K; ++j) {
          const float weight = kHalf ? static_cast<float>(c10::Half(row[j], c10::Half::from_bits()))
                                     : static_cast<float>(c10::BFloat16(row[j], c10::BFloat16::from_bits()));
          sum += weight * x0[t * K + j];
        }
        y[(t0 + t) * N + n] = sum;
      }
    }
  }
}

bool has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}
#endif

// x2 [M, K] · wᵀ straight from a stored BF16/F16 w [N, K] for M ≤ kFewRows float32 rows, when the CPU
// has AVX-512; undefined where it does not apply (the caller upcasts in blocks instead).
constexpr int64_t kFewRows = 8;
torch::Tensor few_rows_product(const torch::Tensor& x2, const torch::Tensor& w) {
#if defined(__x86_64__) && defined(__GNUC__)
  const auto type = w.scalar_type();
  if (!x2.is_cpu() || !w.is_cpu() || !has_avx512() || x2.scalar_type() != torch::kFloat32 || x2.size(0) > kFewRows || !w.is_contiguous() ||
      (type != torch::kBFloat16 && type != torch::kHalf))
    return {};
  const torch::Tensor x = x2.contiguous();
  const int64_t T = x.size(0), K = x.size(1), N = w.size(0);
  torch::Tensor y = torch::empty({T, N}, x.options());
  const float* xp = x.data_ptr<float>();
  const auto* wp = reinterpret_cast<const uint16_t*>(w.data_ptr());
  float* yp = y.data_ptr<float>();
  const bool half = type == torch::kHalf;
  at::parallel_for(0, N, 64, [&](int64_t n0, int64_t n1) {
    if (half) few_rows_avx512<true>(xp, T, K, wp, n0, n1, yp, N);
    else few_rows_avx512<false>(xp, T, K, wp, n0, n1, yp, N);
  });
  return y;
#else
  return {};
#endif
}

// Rows of w [N, K] upcast per step: ~4 MiB on the CPU (the cache); on a card, where each step is a
// kernel launch and memory is plentiful, ~256 MiB (a whole projection of an 8B model at once).
int64_t rows_per_step(const torch::Tensor& w) {
  const int64_t K = w.size(1);
  return w.is_cpu() ? stored_rows_per_step(K) : std::max<int64_t>(1, kCardStepBytes / (4 * std::max<int64_t>(1, K)));
}

// Calls visit(r, rows) for consecutive row blocks of w [N, K]: rows = w[r : r + n] upcast to the dtype of `options`
// in one reused buffer (valid until the next call).
template <typename Visit>
void for_each_upcast_block(const torch::Tensor& w, const torch::TensorOptions& options, Visit visit) {
  const int64_t N = w.size(0), K = w.size(1);
  const int64_t step = std::min(N, rows_per_step(w));
  torch::Tensor buffer = torch::empty({step, K}, options);
  for (int64_t r = 0; r < N; r += step) {
    torch::Tensor rows = buffer.narrow(0, 0, std::min(step, N - r));
    rows.copy_(w.narrow(0, r, rows.size(0)));
    visit(r, rows);
  }
}

// x2 [M, K] · wᵀ (+ b [N], x2's dtype, or undefined) → [M, N] with a stored w [N, K], block by block.
// Runs without autograd (StoredProduct's backward recomputes what it needs).
torch::Tensor blocked_product(const torch::Tensor& x2, const torch::Tensor& w, const torch::Tensor& b) {
  if (torch::Tensor y = few_rows_product(x2, w); y.defined()) return b.defined() ? y + b : y;
  if (rows_per_step(w) >= w.size(0)) return torch::nn::functional::linear(x2, w.to(x2.scalar_type()), b);
  std::vector<torch::Tensor> parts;
  for_each_upcast_block(w, x2.options(), [&](int64_t r, const torch::Tensor& rows) {
    parts.push_back(torch::nn::functional::linear(x2, rows, b.defined() ? b.narrow(0, r, rows.size(0)) : b));
  });
  return torch::cat(parts, 1);
}

// gradient [M, N] · w [N, K] → [M, K], summed over the same row blocks of w.
torch::Tensor blocked_input_gradient(const torch::Tensor& g2, const torch::Tensor& w) {
  if (rows_per_step(w) >= w.size(0)) return torch::mm(g2, w.to(g2.scalar_type()));
  torch::Tensor sum = torch::zeros({g2.size(0), w.size(1)}, g2.options());
  for_each_upcast_block(w, g2.options(), [&](int64_t r, const torch::Tensor& rows) {
    sum.addmm_(g2.narrow(1, r, rows.size(0)), rows);
  });
  return sum;
}

// x · wᵀ + b with a stored weight, differentiable in x and b (b: an empty tensor when there is none);
// the backward upcasts w again block by block instead of keeping the upcast rows.
class StoredProduct : public torch::autograd::Function<StoredProduct> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x2, const torch::Tensor& w,
                               const torch::Tensor& b) {
    ctx->saved_data["w"] = w;
    ctx->saved_data["bias"] = b.numel() > 0;
    return blocked_product(x2, w, b.numel() > 0 ? b : torch::Tensor());
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const torch::Tensor w = ctx->saved_data["w"].toTensor();
    const torch::Tensor g = grads[0].contiguous();  // [M, N]
    return {blocked_input_gradient(g, w), torch::Tensor(), ctx->saved_data["bias"].toBool() ? g.sum(0) : torch::Tensor()};
  }
};

}  // namespace

int64_t stored_rows_per_step(int64_t row_length) {
  return std::max<int64_t>(1, kStepBytes / (4 * std::max<int64_t>(1, row_length)));
}

torch::Tensor stored_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  sync_matmul_precision();
  // torch::nn::Linear's own arithmetic (addmm for matrices, matmul then + b otherwise), bit for bit.
  if (w.scalar_type() == x.scalar_type()) return torch::nn::functional::linear(x, w, b);
  // Fast (core/precision.h): the product in BF16 (x and b rounded to it, float32 accumulation, the
  // result rounded to BF16), back in x's dtype; autograd differentiates through the casts. Only BF16:
  // F16's range (65504) could overflow on activations float32 holds, and LibTorch 1.13's CPU kernels
  // have no F16 product. On the CPU a generation step's few rows stay with few_rows_product, which
  // reads a BF16 weight faster than a BF16 GEMV does (9.3 against 6.4 tokens/s for a Llama-3.2-1B
  // shape on AVX-512).
  if (current_precision() == Precision::fast && w.scalar_type() == torch::kBFloat16 &&
      x.scalar_type() == torch::kFloat32 && (!w.is_cpu() || x.numel() > kFewRows * x.size(-1)))
    return torch::nn::functional::linear(x.to(w.scalar_type()), w, b.defined() ? b.to(w.scalar_type()) : b)
        .to(x.scalar_type());
  // [..., K] → [M, K] and back: the row blocks work on matrices.
  auto out_shape = x.sizes().vec();
  out_shape.back() = w.size(0);
  const torch::Tensor x2 = x.reshape({-1, x.size(-1)});
  const torch::Tensor bias = b.defined() ? b.to(x.scalar_type()) : torch::Tensor();
  const bool graph = torch::GradMode::is_enabled() && (x.requires_grad() || (b.defined() && b.requires_grad()));
  torch::Tensor y;
  if (graph) {
    y = StoredProduct::apply(x2, w, bias.defined() ? bias : torch::zeros({0}, x.options()));
  } else {
    torch::NoGradGuard no_grad;
    y = blocked_product(x2, w, bias);
  }
  return y.view(out_shape);
}

torch::Tensor as_float(const torch::Tensor& w) {
  const auto type = w.scalar_type();
  return type == torch::kBFloat16 || type == torch::kHalf ? w.to(torch::kFloat32) : w;
}

LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias) : in_features(in), out_features(out) {
  weight = register_parameter("weight", new_weight({out, in}));
  if (with_bias) bias = register_parameter("bias", new_weight({out}));
  else bias = register_parameter("bias", {}, /*requires_grad=*/false);
  if (WeightsArriveLater::active()) return;
  // torch::nn::LinearImpl::reset_parameters, step for step.
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5));
  if (with_bias) {
    const auto fan_in = std::get<0>(torch::nn::init::_calculate_fan_in_and_fan_out(weight));
    const double bound = 1 / std::sqrt(static_cast<double>(fan_in));
    torch::nn::init::uniform_(bias, -bound, bound);
  }
}

EmbeddingImpl::EmbeddingImpl(int64_t count, int64_t dim) {
  weight = register_parameter("weight", new_weight({count, dim}));
  if (WeightsArriveLater::active()) return;
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(weight);
}

torch::Tensor EmbeddingImpl::forward(const torch::Tensor& ids) {
  return as_float(torch::embedding(weight, ids));
}

torch::Tensor new_weight(const std::vector<int64_t>& shape) {
  if (!WeightsArriveLater::active()) return torch::empty(shape);
  return torch::empty_strided(shape, std::vector<int64_t>(shape.size(), 0));
}

void with_storage(torch::Tensor& param) {
  if (param.numel() <= 1) return;
  for (const int64_t stride : param.strides())
    if (stride != 0) return;
  param.set_data(torch::empty(param.sizes(), param.options()));
}

WeightsArriveLater::WeightsArriveLater() : previous_(weights_arrive_later) { weights_arrive_later = true; }
WeightsArriveLater::~WeightsArriveLater() { weights_arrive_later = previous_; }
bool WeightsArriveLater::active() { return weights_arrive_later; }

}  // namespace headlab::core
