// How runs compute (core/precision.h): exact keeps every product in float32; fast multiplies
// weights kept in their stored BF16/F16 dtype in that dtype, as transformers runs a BF16 model. On
// the CPU both are checked against a float64 product and a folder's float32 copy; tests/gpu holds
// the card's numbers (and TF32) against the CPU's.
#include "test_common.h"

#include "hf_fixtures.h"

#include "core/model/linear.h"
#include "core/model/model.h"
#include "core/precision.h"
#include "core/model/run.h"
#include "core/model/system_info.h"

#include <ATen/Context.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

using namespace headlab::core;
using headlab::test::hf::relative_difference;
using headlab::test::TempDir;
using Catch::Matchers::Contains;

TEST_CASE("precision: the names, and a stored BF16 product in fast precision rounds its input to BF16", "[precision]") {
  CHECK(parse_precision("exact") == Precision::exact);
  CHECK(parse_precision("fast") == Precision::fast);
  CHECK(std::string(precision_name(Precision::fast)) == "fast");
  for (const char* bad : {"", "Fast", "bf16", "turbo"})
    CHECK_THROWS_WITH(parse_precision(bad), Contains(std::string("'") + bad + "' is not a precision"));
  REQUIRE(current_precision() == Precision::exact);  // the process's default
  CHECK(recorded_precision().empty());                 // reports leave exact out

  torch::manual_seed(40);
  const torch::Tensor w = (torch::randn({96, 256}) * 0.05).to(torch::kBFloat16);
  const torch::Tensor b = torch::randn({96}) * 0.1;
  const torch::Tensor x = torch::randn({2, 7, 256}, torch::requires_grad());
  const torch::Tensor reference = torch::linear(x.detach().to(torch::kFloat64), w.to(torch::kFloat64), b.to(torch::kFloat64));
  // Rounding only the input to BF16 (8 bits of mantissa) is what fast precision adds.
  const torch::Tensor rounded_input =
      torch::linear(x.detach().to(torch::kBFloat16).to(torch::kFloat64), w.to(torch::kFloat64), b.to(torch::kFloat64));
  const torch::Tensor exact = stored_linear(x, w, b);
  torch::Tensor fast, fast_f32_weight;
  {
    PrecisionScope scope(Precision::fast);
    CHECK(current_precision() == Precision::fast);
    CHECK(recorded_precision() == "fast");
    fast = stored_linear(x, w, b);
    const torch::Tensor w32 = w.to(torch::kFloat32);
    fast_f32_weight = stored_linear(x.detach(), w32, b);  // a float32 weight on the CPU: nothing to change
  }
  CHECK(torch::equal(fast_f32_weight, stored_linear(x.detach(), w.to(torch::kFloat32), b)));
  CHECK(current_precision() == Precision::exact);  // the scope restored it
  // Torch's float32 matmul precision followed at each product: TF32 allowed in fast, not in exact.
  {
    PrecisionScope scope(Precision::fast);
    stored_linear(x.detach(), w, b);
    CHECK(at::globalContext().float32MatmulPrecision() == at::Float32MatmulPrecision::HIGH);
  }
  stored_linear(x.detach(), w, b);
  CHECK(at::globalContext().float32MatmulPrecision() == at::Float32MatmulPrecision::HIGHEST);
  {
    // What fast leaves exact: F16 weights, and on the CPU a product of at most 8 rows (a generation step).
    PrecisionScope scope(Precision::fast);
    const torch::Tensor half = w.to(torch::kHalf);
    CHECK(torch::equal(stored_linear(x.detach(), half, b), [&] {
      PrecisionScope exact(Precision::exact);
      return stored_linear(x.detach(), half, b);
    }()));
    const torch::Tensor step = x.detach()[0].narrow(0, 0, 3);  // [3, 256]
    CHECK(torch::equal(stored_linear(step, w, b), [&] {
      PrecisionScope exact(Precision::exact);
      return stored_linear(step, w, b);
    }()));
  }
  CHECK(fast.scalar_type() == torch::kFloat32);
  CHECK(relative_difference(exact.to(torch::kFloat64), reference) < 1e-6);
  const double fast_error = relative_difference(fast.to(torch::kFloat64), reference);
  INFO("fast against float64: " << fast_error);
  CHECK(fast_error > 1e-4);   // the product really ran in BF16
  CHECK(fast_error < 2e-2);   // and within BF16's rounding
  // Its error is the input's rounding (plus BF16 output rounding), not anything else.
  CHECK(relative_difference(fast.detach().to(torch::kFloat64), rounded_input) < 1e-2);
  // Gradients flow through the casts (LRP and importance differentiate with respect to x).
  const torch::Tensor g = torch::randn_like(exact);
  const auto gx_exact = torch::autograd::grad({exact}, {x}, {g})[0];
  const auto gx_fast = torch::autograd::grad({fast}, {x}, {g})[0];
  CHECK(gx_fast.scalar_type() == torch::kFloat32);
  CHECK(relative_difference(gx_fast, gx_exact) > 0);
  // Within BF16's rounding: how many roundings pile up depends on the CPU's kernel — 2.3% of the
  // largest gradient here on an AMD EPYC without AVX-512 BF16 (g @ W accumulated in BF16), less
  // where the kernel accumulates in float32. A wrong product (a missing cast, a 5% scale) exceeds 4%.
  CHECK(relative_difference(gx_fast, gx_exact) < 4e-2);
}

TEST_CASE("precision: a BF16 folder kept as stored runs fast within BF16's rounding of its float32 copy", "[precision]") {
  const std::string folder = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/llama-bf16";
  ::setenv("HEADLAB_WEIGHTS", "mapped", 1);  // kept as stored, so fast precision has BF16 products to make
  const std::shared_ptr<Model> mapped = load_model(folder);
  ::unsetenv("HEADLAB_WEIGHTS");
  auto copied = load_model(folder);
  REQUIRE(mapped->mapped_bytes > 0);
  REQUIRE(copied->mapped_bytes == 0);
  RunRequest request;
  request.ids = {1, 5, 9, 2, 7, 3, 11, 4, 8, 6, 10, 12};  // more than a generation step's few rows
  request.capture = kCaptureWeights;
  const auto reference = run(*copied, request);
  const auto exact = run(*mapped, request);
  std::shared_ptr<const Trace> fast, fast_copied;
  {
    PrecisionScope scope(Precision::fast);
    fast = run(*mapped, request);
    fast_copied = run(*copied, request);  // float32 weights on the CPU: the same as exact, bit for bit
  }
  CHECK(relative_difference(exact->logits, reference->logits) < 1e-6);
  CHECK(torch::equal(fast_copied->logits, reference->logits));
  const double logits = relative_difference(fast->logits, reference->logits);
  double maps = 0;
  for (size_t l = 0; l < reference->decoder.layers.size(); ++l)
    maps = std::max(maps, headlab::test::max_abs_diff(fast->decoder.layers[l].self.weights,
                                                      reference->decoder.layers[l].self.weights));
  INFO("fast: logits " << logits << " relative, maps " << maps << " absolute");
  CHECK(logits > 1e-5);
  CHECK(logits < 3e-2);
  CHECK(maps < 2e-2);
  // Rows still sum to 1: the softmax stays float32.
  const auto& w0 = fast->decoder.layers[0].self.weights;
  CHECK(headlab::test::max_abs_diff(w0.sum(-1), torch::ones_like(w0.sum(-1))) < 1e-5);
}

TEST_CASE("precision: --precision on the command line, recorded in reports that are refused to merge with exact ones",
          "[precision][cli]") {
  TempDir dir("precision-cli");
  std::string out;
  const std::string bin = HEADLAB_BINARY;
  CHECK(headlab::test::run_command(bin + " --precision turbo info --model " + HEADLAB_SOURCE_DIR + "/assets/models/default",
                                   out) == 2);
  INFO(out);
  CHECK_THAT(out, Contains("--precision: 'turbo' is not a precision"));
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);

  // The default model in BF16, kept as stored, so fast precision has BF16 products to make (LibTorch's
  // CPU kernels have none for F16, the default's own dtype: there fast computes exactly).
  const std::string shipped = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  save_model(*load_model(shipped), dir.str("bf16"), "BF16", shipped + "/tokenizer.json");
  const std::string weights = "HEADLAB_WEIGHTS=mapped ";
  const std::string analyze = " analyze --model " + dir.str("bf16") + " --data " +
                              HEADLAB_SOURCE_DIR + "/assets/data/en_ewt-dev-100.conllu --limit 12 --metrics confidence,positional --out ";
  // Runs a command; what it printed goes with a failure.
  auto succeeds = [&](const std::string& command) {
    const int rc = headlab::test::run_command(command, out);
    if (rc != 0) UNSCOPED_INFO(command << " → exit " << rc << ":\n" << out);
    return rc == 0;
  };
  REQUIRE(succeeds(weights + bin + analyze + dir.str("exact")));
  REQUIRE(succeeds(weights + bin + " --precision fast" + analyze + dir.str("fast")));
  // The global option goes after the command as well.
  REQUIRE(succeeds(weights + bin + analyze + dir.str("fast-after") + " --precision fast"));
  nlohmann::json exact, fast;
  std::ifstream(dir.str("exact/head_report.json")) >> exact;
  std::ifstream(dir.str("fast/head_report.json")) >> fast;
  CHECK_FALSE(exact["settings"].contains("precision"));  // an exact report reads as every report before
  CHECK(fast["settings"]["precision"] == "fast");
  CHECK(exact["settings"]["lrp_tolerance"] == 1e-3);
  CHECK(fast["settings"]["lrp_tolerance"] == 2e-2);  // LRP's conservation loosens in BF16
  nlohmann::json after;
  std::ifstream(dir.str("fast-after/head_report.json")) >> after;
  CHECK(after["heads"] == fast["heads"]);
  std::ifstream md(dir.str("fast/head_report.md"));
  const std::string text((std::istreambuf_iterator<char>(md)), {});
  CHECK_THAT(text, Contains("- precision: fast"));
  // The confidences moved, a little.
  const double a = exact["heads"][0]["confidence"].get<double>();
  const double b = fast["heads"][0]["confidence"].get<double>();
  CHECK(a != b);
  CHECK(std::abs(a - b) < 1e-2);
  // Two shards of one analysis, one of them fast: not one pass's report.
  REQUIRE(succeeds(weights + bin + analyze + dir.str("shard0") + " --shard 0/2"));
  REQUIRE(succeeds(weights + bin + analyze + dir.str("shard1") + " --shard 1/2 --precision fast"));
  CHECK(headlab::test::run_command(bin + " merge --out " + dir.str("merged") + " " + dir.str("shard0") + " " + dir.str("shard1"),
                                   out) != 0);
  CHECK_THAT(out, Contains("differ in precision (exact vs fast)"));

  // The run dump's metadata says so too; an exact dump has no such entry.
  for (const std::string precision : {"exact", "fast"}) {
    const std::string dump = dir.str("run-" + precision + ".safetensors");
    REQUIRE(succeeds(weights + bin + " --precision " + precision + " run --model " + dir.str("bf16") +
                     " --text 'the cat sat on the mat' --out " + dump));
    std::ifstream in(dump, std::ios::binary);
    uint64_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 8);
    std::string header(n, ' ');
    in.read(&header[0], static_cast<std::streamsize>(n));
    const auto meta = nlohmann::json::parse(header)["__metadata__"];
    INFO(precision << ": " << meta.dump());
    CHECK(meta.contains("precision") == (precision == "fast"));
    if (precision == "fast") CHECK(meta["precision"] == "fast");
  }
}
