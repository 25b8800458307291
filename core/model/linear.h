// The two weight-holding layers of every model — a linear projection and an embedding table — whose
// weights may stay as the model folder stores them. A loaded folder's large matrices are zero-copy
// views of its memory-mapped safetensors files, in their stored dtype (F32, F16 or BF16): an 8B
// model in BF16 costs its 16 GB of page cache, not 32 GB of float32 copies. A projection whose
// weight is narrower than its input computes in the input's precision by upcasting the weight a few
// rows at a time into a reused buffer, so at most ~4 MiB of float32 weight exists at once; the
// backward pass (LRP, importance) upcasts again instead of keeping every layer's float32 weights.
//
// Same-dtype weights (float32 models: everything trained or created in HeadLab, F32 folders) run
// exactly as torch::nn::Linear and torch::nn::Embedding do, with the same initialisation, so their
// results are bit-identical to those modules'.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <vector>

namespace headlab::core {

// x [..., K] · wᵀ + b → [..., N]; w [N, K] in any floating dtype (the result has x's), b [N] or
// undefined. Differentiable with respect to x and b (not w: a stored weight is never trained).
torch::Tensor stored_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b = {});

// A stored F16/BF16 `w` upcast to float32; any other tensor itself (no copy: a float64 model stays
// float64). For code that multiplies weights directly.
torch::Tensor as_float(const torch::Tensor& w);

// Rows of a stored weight upcast per step of stored_linear(): ~4 MiB of float32 (at least one row).
int64_t stored_rows_per_step(int64_t row_length);

class LinearImpl : public torch::nn::Module {
 public:
  // torch::nn::Linear's shapes and initialisation (Kaiming-uniform weight, uniform bias), drawn from
  // the same generator in the same order.
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true);
  torch::Tensor forward(const torch::Tensor& x) { return stored_linear(x, weight, bias); }
  torch::Tensor weight;  // [out, in]
  torch::Tensor bias;    // [out], undefined without bias
  int64_t in_features, out_features;
};
TORCH_MODULE(Linear);

class EmbeddingImpl : public torch::nn::Module {
 public:
  // torch::nn::Embedding's shape and initialisation (standard normal).
  EmbeddingImpl(int64_t count, int64_t dim);
  // ids [...] (int64) → [..., dim], float32 when the table is stored narrower.
  torch::Tensor forward(const torch::Tensor& ids);
  torch::Tensor weight;  // [count, dim]
};
TORCH_MODULE(Embedding);

// While one is alive on this thread, new Linear and Embedding modules (and the LM head) skip their
// initialisation and hold placeholders of their shape with no memory behind them (every stride 0):
// a loader that maps or fills every weight right after constructing a model allocates nothing it
// then throws away. A placeholder must get storage (with_storage) before anything writes into it.
class WeightsArriveLater {
 public:
  WeightsArriveLater();
  ~WeightsArriveLater();
  WeightsArriveLater(const WeightsArriveLater&) = delete;
  WeightsArriveLater& operator=(const WeightsArriveLater&) = delete;
  static bool active();

 private:
  bool previous_;
};

// A new weight of `shape`: a placeholder while WeightsArriveLater is active, else uninitialised memory.
torch::Tensor new_weight(const std::vector<int64_t>& shape);
// Gives a placeholder weight float32 memory of its shape (uninitialised); other tensors are left alone.
void with_storage(torch::Tensor& param);

}  // namespace headlab::core
