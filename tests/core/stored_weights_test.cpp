// Weights as stored (core/model/linear.h, core/model/model.h Residency::Mapped): a BF16 sharded folder
// is opened without float32 copies of its matrices, computes what its float32 upcast computes, and is
// refused with the file and tensor named when a shard is damaged. The ~310 MB folder is written at
// test time in Llama-3's layout (HF names, three shards and an index), never committed.
#include "test_common.h"

#include "hf_fixtures.h"

#include "analysis/lrp.h"
#include "core/memory_budget.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/safetensors_torch.h"
#include "core/model/system_info.h"

#include <nlohmann/json.hpp>

#include <malloc.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace headlab::core;
using headlab::test::hf::relative_difference;
using headlab::test::TempDir;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {


struct Shape {
  int layers = 8, hidden = 1024, heads = 16, kv_heads = 4, head_dim = 64, ffn = 2816, vocab = 32000;
};

// Writes the folder; returns the bytes of its three shards.
int64_t write_bf16_llama(const fs::path& dir, const Shape& s) {
  torch::manual_seed(36);
  std::vector<std::vector<std::pair<std::string, torch::Tensor>>> shards(3);
  auto matrix = [](int64_t rows, int64_t cols) { return (torch::randn({rows, cols}) * 0.02).to(torch::kBFloat16); };
  auto norm = [](int64_t size) { return (1 + 0.1 * torch::randn({size})).to(torch::kBFloat16); };
  shards[0].emplace_back("model.embed_tokens.weight", matrix(s.vocab, s.hidden));
  for (int l = 0; l < s.layers; ++l) {
    auto& shard = shards[1 + (l >= s.layers / 2 ? 1 : 0)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    shard.emplace_back(p + "self_attn.q_proj.weight", matrix(s.heads * s.head_dim, s.hidden));
    shard.emplace_back(p + "self_attn.k_proj.weight", matrix(s.kv_heads * s.head_dim, s.hidden));
    shard.emplace_back(p + "self_attn.v_proj.weight", matrix(s.kv_heads * s.head_dim, s.hidden));
    shard.emplace_back(p + "self_attn.o_proj.weight", matrix(s.hidden, s.heads * s.head_dim));
    shard.emplace_back(p + "mlp.gate_proj.weight", matrix(s.ffn, s.hidden));
    shard.emplace_back(p + "mlp.up_proj.weight", matrix(s.ffn, s.hidden));
    shard.emplace_back(p + "mlp.down_proj.weight", matrix(s.hidden, s.ffn));
    shard.emplace_back(p + "input_layernorm.weight", norm(s.hidden));
    shard.emplace_back(p + "post_attention_layernorm.weight", norm(s.hidden));
  }
  shards[2].emplace_back("model.norm.weight", norm(s.hidden));
  shards[0].emplace_back("lm_head.weight", matrix(s.vocab, s.hidden));
  nlohmann::json map = nlohmann::json::object();
  int64_t bytes = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string file = "model-0000" + std::to_string(i + 1) + "-of-00003.safetensors";
    save_safetensors((dir / file).string(), shards[i], DType::BF16, {{"format", "pt"}});
    for (const auto& [name, tensor] : shards[i]) map[name] = file;
    bytes += static_cast<int64_t>(fs::file_size(dir / file));
  }
  std::ofstream(dir / "model.safetensors.index.json") << nlohmann::json{{"metadata", {{"total_size", bytes}}}, {"weight_map", map}}.dump(2);
  const nlohmann::json config = {
      {"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"torch_dtype", "bfloat16"},
      {"hidden_size", s.hidden}, {"intermediate_size", s.ffn}, {"num_hidden_layers", s.layers},
      {"num_attention_heads", s.heads}, {"num_key_value_heads", s.kv_heads}, {"head_dim", s.head_dim},
      {"hidden_act", "silu"}, {"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5},
      {"rope_theta", 500000.0}, {"tie_word_embeddings", false}, {"vocab_size", s.vocab},
      {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                        {"original_max_position_embeddings", 1024}}}};
  std::ofstream(dir / "config.json") << config.dump(2);
  return bytes;
}

// Sets HEADLAB_WEIGHTS for one test (core/model/model.cpp: which folders stay mapped) and restores it.
struct WeightsPolicy {
  explicit WeightsPolicy(const char* value) {
    if (const char* old = std::getenv("HEADLAB_WEIGHTS")) previous = old, had = true;
    ::setenv("HEADLAB_WEIGHTS", value, 1);
  }
  ~WeightsPolicy() {
    if (had) ::setenv("HEADLAB_WEIGHTS", previous.c_str(), 1);
    else ::unsetenv("HEADLAB_WEIGHTS");
  }
  std::string previous;
  bool had = false;
};

std::vector<int64_t> some_ids(int64_t count, int64_t vocab) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < count; ++i) ids.push_back((i * 7919 + 13) % vocab);
  return ids;
}

}  // namespace

TEST_CASE("stored weights: a BF16 sharded folder opens mapped, computes as its float32 upcast, and is refused when "
          "damaged", "[stored_weights]") {
  // 310 MB of BF16 is 620 MB in float32, under the size HeadLab copies by default: mapped on request.
  WeightsPolicy policy("mapped");
  TempDir dir("stored-weights");
  const Shape shape;
  const int64_t file_bytes = write_bf16_llama(dir.path, shape);
  REQUIRE(file_bytes > 300'000'000);

  // Opening: the matrices are views of the mapped shards. Resident memory rises by the file pages the
  // NaN scan reads (page cache, shared and evictable); anonymous memory by almost nothing.
  ::malloc_trim(0);  // the generated tensors' memory handed back, so the baseline holds still
  const int64_t rss_before = process_memory("VmRSS"), anon_before = process_memory("RssAnon");
  REQUIRE(rss_before > 0);
  REQUIRE(anon_before > 0);
  auto mapped = load_model(dir.str());
  // What the model keeps, not what the allocator holds on to after the open's transient buffers
  // (HeadLab keeps freed memory for reuse; under load more threads' arenas held 88 MB of it).
  ::malloc_trim(0);
  const int64_t rss_rise = process_memory("VmRSS") - rss_before, anon_rise = process_memory("RssAnon") - anon_before;
  INFO("file " << file_bytes << " B; VmRSS +" << rss_rise << " B, RssAnon +" << anon_rise << " B");
  // The file's pages plus a fixed cost that does not grow with the model (module structures, thread
  // arenas: measured 17–31 MB here; an 8B folder opens with 0.09 GB anonymous in all). A float32 copy
  // of the matrices would add 620 MB, a BF16 copy 310 MB.
  constexpr double kFixed = 64 << 20;
  CHECK(rss_rise <= double(file_bytes) + kFixed);
  CHECK(anon_rise <= kFixed);
  CHECK(mapped->mapped_bytes >= 0.99 * double(file_bytes));
  {
    // The shards' stored bytes: their files less each 8-byte length and JSON header.
    const auto files = WeightFiles::open_folder(dir.str());
    REQUIRE(files->files().size() > 1);
    int64_t expected = 0;
    for (const auto& f : files->files()) {
      std::ifstream in(f->path(), std::ios::binary);
      uint64_t header = 0;
      in.read(reinterpret_cast<char*>(&header), 8);
      expected += static_cast<int64_t>(std::filesystem::file_size(f->path()) - 8 - header);
    }
    CHECK(files->bytes() == expected);
    CHECK(files->bytes() <= file_bytes);
  }
  {
    auto block = mapped->module->block(Stack::Decoder, 0);
    CHECK(block->attn->q->weight.scalar_type() == torch::kBFloat16);
    CHECK(block->ffn->down->weight.scalar_type() == torch::kBFloat16);
    CHECK(mapped->module->head_weight.scalar_type() == torch::kBFloat16);
    CHECK(block->attn_norm->weight.scalar_type() == torch::kFloat32);
  }

  // The same folder with every weight copied to float32, the path before weights stayed as stored.
  auto upcast = load_model(dir.str());
  own_weights(*upcast);
  CHECK(upcast->mapped_bytes == 0);
  CHECK(upcast->module->block(Stack::Decoder, 0)->attn->q->weight.scalar_type() == torch::kFloat32);

  SECTION("every output equals the float32 upcast's within 1e-6 relative") {
    RunRequest request;
    request.ids = some_ids(24, shape.vocab);
    request.capture = kCaptureWeights | kCaptureHeadOutputs | kCaptureResidual;
    const auto a = run(*mapped, request), b = run(*upcast, request);
    CHECK(relative_difference(a->logits, b->logits) < 1e-6);
    for (int l = 0; l < shape.layers; ++l) {
      const auto& x = a->decoder.layers[size_t(l)].self;
      const auto& y = b->decoder.layers[size_t(l)].self;
      CHECK(headlab::test::max_abs_diff(x.weights, y.weights) < 1e-6);
      CHECK(relative_difference(x.head_outputs, y.head_outputs) < 1e-6);
    }
    // The backward pass (LRP) recomputes the upcasts instead of keeping them; the same relevances.
    const auto r = headlab::analysis::lrp_relevance(*mapped, request.ids);
    const auto s = headlab::analysis::lrp_relevance(*upcast, request.ids);
    CHECK(r.target == Approx(s.target).epsilon(1e-6));
    const auto& rh = r.heads.at(Stack::Decoder);
    const auto& sh = s.heads.at(Stack::Decoder);
    double largest = 0, worst = 0;
    for (size_t l = 0; l < rh.size(); ++l)
      for (size_t h = 0; h < rh[l].size(); ++h) {
        largest = std::max(largest, std::abs(sh[l][h]));
        worst = std::max(worst, std::abs(rh[l][h] - sh[l][h]));
      }
    CHECK(largest > 0);
    CHECK(worst <= 1e-5 * largest);
    CHECK(r.relative_residual() < 1e-4);
  }

  SECTION("the memory limit counts what a run keeps, not the mapped weights") {
    struct LimitGuard {
      ~LimitGuard() { set_memory_limit(0); }
    } guard;
    RunRequest request;
    request.ids = some_ids(24, shape.vocab);
    // A limit under the folder's 310 MB but over what the run keeps: the mapped weights are page
    // cache, not the run's, and the run goes ahead.
    set_memory_limit(100ll << 20);
    CHECK(run(*mapped, request)->logits.size(0) == 24);
    // Under what the run keeps: refused before it starts, with the sizes and what to change.
    set_memory_limit(1ll << 20);
    CHECK_THROWS_AS(run(*mapped, request), MemoryLimitError);
    CHECK_THROWS_WITH(run(*mapped, request), Contains("this run needs about") && Contains("24 tokens") &&
                                                 Contains("more than the limit of 1 MB") && Contains("--memory-limit"));
    CHECK_THROWS_AS(headlab::analysis::lrp_relevance(*mapped, request.ids), MemoryLimitError);
  }

  SECTION("a truncated shard is refused naming the file and a tensor past its end") {
    const fs::path shard = dir.path / "model-00002-of-00003.safetensors";
    mapped.reset();
    upcast.reset();
    fs::resize_file(shard, fs::file_size(shard) - 4096);
    try {
      load_model(dir.str());
      FAIL("a truncated shard loaded");
    } catch (const std::exception& e) {
      CHECK_THAT(e.what(), Contains("model-00002-of-00003.safetensors") && Contains("tensor 'model.layers."));
    }
  }

  SECTION("a shard named in the index but missing is refused naming the shard and a tensor it holds") {
    mapped.reset();
    upcast.reset();
    fs::remove(dir.path / "model-00003-of-00003.safetensors");
    try {
      load_model(dir.str());
      FAIL("a folder without one of its shards loaded");
    } catch (const std::exception& e) {
      CHECK_THAT(e.what(), Contains("model-00003-of-00003.safetensors") && Contains("does not exist") &&
                               Contains("'model."));
    }
  }

  SECTION("a tensor in two shards is refused naming both files and the tensor") {
    mapped.reset();
    upcast.reset();
    // Shard 3 rewritten with one of shard 2's tensors beside its own.
    const fs::path third = dir.path / "model-00003-of-00003.safetensors";
    auto file = SafetensorsFile::open(third.string());
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto& info : file.tensors()) tensors.emplace_back(info.name, load_tensor(file, info.name, torch::kBFloat16).clone());
    tensors.emplace_back("model.layers.0.input_layernorm.weight", torch::ones({shape.hidden}, torch::kBFloat16));
    save_safetensors(third.string(), tensors, DType::BF16);
    try {
      load_model(dir.str());
      FAIL("a tensor stored twice loaded");
    } catch (const std::exception& e) {
      CHECK_THAT(e.what(), Contains("model.layers.0.input_layernorm.weight") && Contains("is also in") &&
                               Contains("model-00002-of-00003.safetensors") && Contains("model-00003-of-00003.safetensors"));
    }
  }
}

TEST_CASE("stored weights: an F32 folder runs bit-identically mapped and copied", "[stored_weights]") {
  const std::string folder = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/llama";
  WeightsPolicy policy("mapped");
  auto mapped = load_model(folder);
  REQUIRE(mapped->weights_dtype == "F32");
  CHECK(mapped->mapped_bytes > 0);
  auto copied = load_model(folder);
  own_weights(*copied);
  RunRequest request;
  request.ids = {1, 5, 9, 2, 7, 3};
  request.capture = kCaptureWeights;
  const auto a = run(*mapped, request), b = run(*copied, request);
  CHECK(torch::equal(a->logits, b->logits));
  CHECK(torch::equal(a->decoder.layers[0].self.weights, b->decoder.layers[0].self.weights));
}

TEST_CASE("stored weights: a projection upcast in row blocks equals the float32 product, forward and backward",
          "[stored_weights]") {
  torch::manual_seed(3);
  const int64_t K = 512, N = 3 * stored_rows_per_step(K) + 17;  // three full blocks and a partial one
  const torch::Tensor w = (torch::randn({N, K}) * 0.05).to(torch::kBFloat16);
  const torch::Tensor b = torch::randn({N});
  const torch::Tensor x = torch::randn({2, 5, K}, torch::requires_grad());
  const torch::Tensor y = stored_linear(x, w, b);
  const torch::Tensor expected = torch::linear(x, w.to(torch::kFloat32), b);
  REQUIRE(y.sizes() == expected.sizes());
  CHECK(relative_difference(y, expected) < 1e-6);
  const torch::Tensor g = torch::randn_like(y);
  const auto gx = torch::autograd::grad({y}, {x}, {g})[0];
  const auto ex = torch::autograd::grad({expected}, {x}, {g})[0];
  CHECK(relative_difference(gx, ex) < 1e-6);
  // Without autograd the same numbers.
  torch::NoGradGuard no_grad;
  CHECK(relative_difference(stored_linear(x.detach(), w, b), expected) < 1e-6);

  // A few rows (a generation step) read BF16 and F16 weights directly (AVX-512 where the CPU has it),
  // including a row length that is not a multiple of 16.
  for (const auto type : {torch::kBFloat16, torch::kHalf})
    for (const int64_t k : {int64_t(512), int64_t(100)})
      for (const int64_t rows : {int64_t(1), int64_t(3), int64_t(8)}) {
        const torch::Tensor weights = (torch::randn({N, k}) * 0.05).to(type);
        const torch::Tensor input = torch::randn({rows, k});
        const torch::Tensor reference = torch::linear(input.to(torch::kFloat64), weights.to(torch::kFloat64), b.to(torch::kFloat64));
        INFO(c10::toString(type) << " K " << k << ", " << rows << " rows");
        CHECK(relative_difference(stored_linear(input, weights, b).to(torch::kFloat64), reference) < 1e-6);
      }
}

TEST_CASE("stored weights: small folders are copied to float32 unless HEADLAB_WEIGHTS says otherwise", "[stored_weights]") {
  const std::string folder = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/llama-bf16";
  {
    auto model = load_model(folder);  // a few MB: copied, the faster way to compute at this size
    CHECK(model->mapped_bytes == 0);
    CHECK(model->module->block(Stack::Decoder, 0)->attn->q->weight.scalar_type() == torch::kFloat32);
  }
  {
    WeightsPolicy policy("mapped");
    auto model = load_model(folder);
    CHECK(model->mapped_bytes > 0);
    CHECK(model->module->block(Stack::Decoder, 0)->attn->q->weight.scalar_type() == torch::kBFloat16);
  }
  {
    WeightsPolicy policy("float32");
    CHECK(load_model(folder)->mapped_bytes == 0);
  }
  WeightsPolicy policy("bf16");
  CHECK_THROWS_WITH(load_model(folder), Contains("HEADLAB_WEIGHTS is 'bf16'") && Contains("mapped or float32"));
}

TEST_CASE("stored weights: every Hugging Face family computes mapped what it computes copied", "[stored_weights][hf_import]") {
  // Each family's weights as views of its files (BF16 and F16 fixtures upcast block by block, F32
  // ones as they are) against the same folder copied to float32: logits, every map, and LRP's
  // backward pass through the stored projections.
  for (const std::string& name : headlab::test::hf::one_per_family()) {
    DYNAMIC_SECTION(name) {
      const std::string folder = headlab::test::hf::fixture(name);
      const auto expected = headlab::test::hf::read_expected(folder);
      std::shared_ptr<Model> mapped;
      {
        WeightsPolicy policy("mapped");
        mapped = load_model(folder);
      }
      auto copied = load_model(folder);
      REQUIRE(mapped->mapped_bytes > 0);
      REQUIRE(copied->mapped_bytes == 0);
      RunRequest request;
      request.ids = expected.ids;
      request.decoder_ids = expected.decoder_ids;
      request.token_types = expected.token_types;
      const auto a = run(*mapped, request), b = run(*copied, request);
      CHECK(relative_difference(a->logits, b->logits) < 1e-6);
      for (const Stack stack : {Stack::Encoder, Stack::Decoder}) {
        const auto& x = stack == Stack::Encoder ? a->encoder : a->decoder;
        const auto& y = stack == Stack::Encoder ? b->encoder : b->decoder;
        REQUIRE(x.layers.size() == y.layers.size());
        for (size_t l = 0; l < x.layers.size(); ++l) {
          CHECK(headlab::test::max_abs_diff(x.layers[l].self.weights, y.layers[l].self.weights) < 1e-6);
          if (x.layers[l].cross.weights.defined())
            CHECK(headlab::test::max_abs_diff(x.layers[l].cross.weights, y.layers[l].cross.weights) < 1e-6);
        }
      }
      const auto r = headlab::analysis::lrp_relevance(*mapped, expected.ids, {}, {}, expected.decoder_ids);
      const auto s = headlab::analysis::lrp_relevance(*copied, expected.ids, {}, {}, expected.decoder_ids);
      CHECK(r.target == Approx(s.target).epsilon(1e-5).margin(1e-6));
      CHECK(r.relative_residual() < 1e-5);
      for (const auto& [stack, layers] : s.heads)
        for (size_t l = 0; l < layers.size(); ++l)
          for (size_t h = 0; h < layers[l].size(); ++h)
            CHECK(r.heads.at(stack)[l][h] == Approx(layers[l][h]).epsilon(1e-4).margin(1e-6 * std::abs(s.target) + 1e-7));
    }
  }
}
