// Runs estimate their memory first and refuse, with a message saying what to change, what would
// not fit under the limit (core/memory_budget.h).
#include "test_common.h"
#include "small_models.h"

#include "analysis/lrp.h"
#include "core/memory_budget.h"
#include "core/model/model.h"
#include "core/model/run.h"

#include <cstdlib>

using namespace headlab;

namespace {

// Restores the default limit when a test ends.
struct LimitGuard {
  ~LimitGuard() { core::set_memory_limit(0); }
};

int64_t bytes_of(const torch::Tensor& t) { return t.defined() ? t.numel() * 4 : 0; }

}  // namespace

TEST_CASE("the estimate counts T² × heads × layers × stages for the maps", "[memory]") {
  auto c = test::small_model(core::StackKind::Encoder, test::attention(4, 2, 8, 8), 3, 50);
  const int64_t T = 1000;
  const auto weights_only = core::estimate_run_memory(c, T, 0, core::kCaptureWeights);
  CHECK(weights_only.maps == T * T * 4 * 3 * 4);  // W: 4 heads, 3 layers, float32
  const auto all = core::estimate_run_memory(c, T, 0, core::kCaptureAll);
  // J, L, W and U: one map per head each (GQA shares keys, not scores).
  CHECK(all.maps == T * T * (4 + 4 + 4 + 4) * 3 * 4);
  // Talking heads with 2 key heads: J has one map per key head.
  auto th = c;
  th.encoder->attention = test::attention(2, 2, 8, 8);
  th.encoder->attention.talking_heads = core::TalkingHeads{2, 4, 4};
  th.validate();
  CHECK(core::estimate_run_memory(th, T, 0, core::kCaptureLogits).maps == T * T * 2 * 3 * 4);
  CHECK(core::estimate_run_memory(th, T, 0, core::kCaptureWeights).maps == T * T * 4 * 3 * 4);
  CHECK(all.captured > all.maps);  // + residual stream, head outputs, logits
  CHECK(core::estimate_run_memory(c, T, 0, core::kCaptureAll, 0, true).backward > 0);
  CHECK(all.backward == 0);
  // Twice the tokens: the maps four times the bytes.
  CHECK(core::estimate_run_memory(c, 2 * T, 0, core::kCaptureAll).maps == 4 * all.maps);
}

TEST_CASE("the estimate covers what a run really keeps", "[memory]") {
  auto c = test::small_model(core::StackKind::Encoder, test::attention(4, 2, 4, 4), 2, 30);
  auto model = core::make_random_model(c, 5);
  core::RunRequest r;
  for (int i = 0; i < 24; ++i) r.ids.push_back(i % 30);
  r.capture = core::kCaptureAll;
  // A post-softmax mix so that U is its own tensor.
  r.controls.encoder_self.resize(2);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) r.controls.encoder_self[0].post_mix.push_back(i == j ? 0.625f : 0.125f);
  auto trace = core::run(*model, r);
  int64_t maps = 0, kept = bytes_of(trace->logits);
  for (const auto& layer : trace->encoder.layers) {
    const auto& s = layer.self;
    maps += bytes_of(s.logits) + bytes_of(s.mixed_logits) + bytes_of(s.weights) + bytes_of(s.mixed_weights);
    kept += bytes_of(s.head_outputs) + bytes_of(s.gated_outputs);
  }
  for (const auto& h : trace->encoder.hidden) kept += bytes_of(h);
  kept += maps;
  const auto e = core::estimate_run_memory(c, 24, 0, core::kCaptureAll);
  CHECK(e.maps == maps);
  CHECK(e.captured >= kept);
  CHECK(e.captured <= kept * 2);
}

TEST_CASE("a run over the limit is refused before it allocates, saying what to change", "[memory]") {
  LimitGuard guard;
  auto c = test::small_model(core::StackKind::Encoder, test::attention(2, 2, 8, 8), 2, 50);
  c.max_positions = 4096;
  auto model = core::make_random_model(c, 1);
  core::RunRequest r;
  r.ids.assign(3000, 7);
  r.capture = core::kCaptureAll;
  core::set_memory_limit(64ll << 20);  // 64 MB; the maps alone are 3000² × 8 × 2 × 4 = 576 MB
  try {
    core::run(*model, r);
    FAIL("the run was not refused");
  } catch (const core::MemoryLimitError& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("3000 tokens") && Catch::Contains("64 MB") && Catch::Contains("shorter input") &&
                      Catch::Contains("capture fewer stages") && Catch::Contains("--memory-limit"));
  }
  // LRP's backward pass is refused too.
  CHECK_THROWS_AS(analysis::lrp_relevance(*model, r.ids), core::MemoryLimitError);
  // The same run with a short input goes through; with no limit the long one runs as well.
  r.ids.assign(20, 7);
  CHECK_NOTHROW(core::run(*model, r));
  core::set_memory_limit(-1);
  r.ids.assign(600, 7);
  CHECK_NOTHROW(core::run(*model, r));
}

TEST_CASE("sizes parse with suffixes and bad ones are named", "[memory]") {
  CHECK(core::parse_byte_size("4096") == 4096);
  CHECK(core::parse_byte_size("512M") == 512ll << 20);
  CHECK(core::parse_byte_size("12G") == 12ll << 30);
  CHECK(core::parse_byte_size("1.5g") == 3ll << 29);
  CHECK(core::parse_byte_size("2GB") == 2ll << 30);
  CHECK_THROWS_WITH(core::parse_byte_size("12X"), Catch::Contains("'12X'"));
  CHECK_THROWS_WITH(core::parse_byte_size("-3G"), Catch::Contains("'-3G'"));
  CHECK(core::format_bytes(3ll << 29) == "1.5 GB");
  // The default: half of what the system can still give.
  LimitGuard guard;
  core::set_memory_limit(0);
  if (!std::getenv("HEADLAB_MEMORY_LIMIT") && core::available_memory() > 0)
    CHECK(core::memory_limit() == Approx(core::available_memory() / 2).epsilon(0.2));
}

TEST_CASE("headlab run refuses an input over --memory-limit with exit 1 and one message", "[memory][cli]") {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "word ";
  test::TempDir dir("memory_cli");
  std::string out;
  const int rc = test::run_command(std::string(HEADLAB_BINARY) + " run --model " + HEADLAB_SOURCE_DIR +
                                       "/assets/models/default --capture all --memory-limit 256M --text '" + text +
                                       "' --out " + dir.str("x.safetensors"),
                                   out);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("this run needs about") && Catch::Contains("256 MB"));
  CHECK_FALSE(std::filesystem::exists(dir.str("x.safetensors")));
}
