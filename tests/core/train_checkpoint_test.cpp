// Checkpoints survive a crash mid-write: the previous checkpoint still loads.
#include "test_common.h"

#include "writer_kill.h"

#include "core/config.h"
#include "core/model/transformer.h"
#include "core/train/checkpoint.h"

#include <filesystem>
#include <fstream>

using namespace headlab;

namespace {

struct Fixture {
  core::Transformer model{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer;
  explicit Fixture(int hidden) {
    auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json");
    config.vocab_size = 4000;
    config.hidden_size = hidden;
    config.ffn.inner_size = 4 * hidden;
    config.encoder->attention.key_size = config.encoder->attention.value_size = hidden / 4;
    model = core::Transformer(config);
    core::initialize_weights(model, 1);
    optimizer = std::make_unique<torch::optim::AdamW>(model->parameters(), torch::optim::AdamWOptions(1e-3));
    // One step, so the optimizer has state to save.
    auto loss = model->tokens->weight.pow(2).sum();
    loss.backward();
    optimizer->step();
  }
};

}  // namespace

TEST_CASE("a checkpoint round-trips model, optimizer state and record", "[train]") {
  test::TempDir dir("ckpt_roundtrip");
  Fixture a(64), b(64);
  core::initialize_weights(b.model, 2);
  const std::string path = dir.str("checkpoint.pt");
  core::train::save_checkpoint(path, a.model, *a.optimizer, {{"step", 7}});
  CHECK(test::temp_files_of(path).empty());
  auto meta = core::train::load_checkpoint(path, b.model, *b.optimizer);
  CHECK(meta["step"] == 7);
  CHECK(test::max_abs_diff(a.model->tokens->weight, b.model->tokens->weight) == 0.0);
  CHECK(core::train::read_checkpoint_meta(path)["step"] == 7);
  CHECK_THROWS_WITH(core::train::read_checkpoint_meta(dir.str("missing.pt")), Catch::Contains("missing.pt"));
}

TEST_CASE("a writer killed mid-checkpoint leaves the previous checkpoint loadable", "[train]") {
  test::TempDir dir("ckpt_kill");
  const std::string path = dir.str("checkpoint.pt");
  Fixture f(256);  // ~40 MB with the optimizer moments: written in many chunks
  core::train::save_checkpoint(path, f.model, *f.optimizer, {{"step", 1}});
  const auto whole = std::filesystem::file_size(path);
  for (const auto stage : {core::AtomicStage::Writing, core::AtomicStage::Written}) {
    DYNAMIC_SECTION((stage == core::AtomicStage::Writing ? "mid-write" : "written, before the rename")) {
      test::kill_writer_at(stage, [&] { core::train::save_checkpoint(path, f.model, *f.optimizer, {{"step", 2}}); });
      const auto temps = test::temp_files_of(path);
      REQUIRE(temps.size() == 1);  // the dead writer's temporary file
      if (stage == core::AtomicStage::Writing) CHECK(std::filesystem::file_size(temps.front()) < whole);
      // checkpoint.pt is the previous checkpoint, complete.
      Fixture reader(256);
      auto meta = core::train::load_checkpoint(path, reader.model, *reader.optimizer);
      CHECK(meta["step"].get<int>() == 1);
      CHECK(test::max_abs_diff(reader.model->tokens->weight, f.model->tokens->weight) == 0.0);
      // A later save removes the dead writer's temp file.
      core::train::save_checkpoint(path, f.model, *f.optimizer, {{"step", 100}});
      CHECK(test::temp_files_of(path).empty());
      CHECK(core::train::read_checkpoint_meta(path)["step"] == 100);
      core::train::save_checkpoint(path, f.model, *f.optimizer, {{"step", 1}});
    }
  }
}

TEST_CASE("a truncated checkpoint gives a clear error", "[train]") {
  test::TempDir dir("ckpt_trunc");
  const std::string path = dir.str("checkpoint.pt");
  Fixture f(64);
  core::train::save_checkpoint(path, f.model, *f.optimizer, {{"step", 1}});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  CHECK_THROWS_WITH(core::train::load_checkpoint(path, f.model, *f.optimizer), Catch::Contains("checkpoint.pt"));
}
