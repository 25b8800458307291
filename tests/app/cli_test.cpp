// The `headlab` binary as a user runs it: init every shipped config, run it, read the dump back.
#include "test_common.h"

#include "core/atomic_file.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/safetensors_torch.h"

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using headlab::test::run_command;
using headlab::test::TempDir;

namespace {

std::string headlab_cmd(const std::string& args) { return std::string(HEADLAB_BINARY) + " " + args; }

std::string config_path(const std::string& name) {
  return std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/" + name + ".json";
}

int count_lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace

TEST_CASE("every shipped example config inits and runs, and the dump matches the engine", "[cli]") {
  const std::vector<std::string> names = {"mha",     "mqa",      "gqa",           "key-size", "talking-heads", "collaborative",
                                          "additive", "sliding-window", "dilated", "global",   "encoder-decoder",
                                          "relative-position", "attention-only", "latent", "disentangled"};
  size_t found = 0;
  for (const auto& entry : fs::directory_iterator(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs")) found += entry.path().extension() == ".json";
  CHECK(found == names.size());
  for (const auto& name : names) {
    DYNAMIC_SECTION(name) {
      TempDir dir("cli-" + name);
      std::string out;
      REQUIRE(run_command(headlab_cmd("init --config " + config_path(name) + " --out " + dir.str("model") + " --seed 3"), out) == 0);
      const bool enc_dec = name == "encoder-decoder" || name == "relative-position";
      const std::string dump = dir.str("dump.safetensors");
      REQUIRE(run_command(headlab_cmd("run --model " + dir.str("model") + " --ids 1,5,9,14,2,7,3,8,11,4" +
                                      (enc_dec ? " --decoder-ids 2,6,10,3" : "") + " --out " + dump),
                          out) == 0);
      auto file = headlab::core::SafetensorsFile::open(dump);
      auto model = headlab::core::load_model(dir.str("model"));
      headlab::core::RunRequest request;
      request.ids = {1, 5, 9, 14, 2, 7, 3, 8, 11, 4};
      if (enc_dec) request.decoder_ids = {2, 6, 10, 3};
      auto trace = headlab::core::run(*model, request);
      CHECK(headlab::test::max_abs_diff(headlab::core::load_tensor(file, "logits"), trace->logits) < 1e-5);
      const auto& stack = enc_dec ? trace->decoder : trace->main_stack();
      const std::string prefix = enc_dec ? "decoder_" : "";
      for (size_t l = 0; l < stack.layers.size(); ++l) {
        auto maps = headlab::core::load_tensor(file, prefix + "attentions." + std::to_string(l));
        const int64_t T = enc_dec ? 4 : 10;
        CHECK(maps.size(1) == T);
        CHECK(maps.size(2) == T);
        CHECK(headlab::test::max_abs_diff(maps, headlab::core::value_weights(stack.layers[l].self)) < 1e-6);
        // Rows of W sum to 1; U = W·P_w of talking-heads need not.
        if (name != "talking-heads") CHECK(headlab::test::max_abs_diff(maps.sum(-1), torch::ones({maps.size(0), T})) < 1e-5);
      }
      if (enc_dec) {
        CHECK(file.contains("encoder_attentions.1"));
        CHECK(headlab::core::load_tensor(file, "cross_attentions.0").size(2) == 10);
      }
    }
  }
}

TEST_CASE("headlab run --gate closes a head and --capture all adds every stage", "[cli]") {
  TempDir dir("cli-gate");
  std::string out;
  REQUIRE(run_command(headlab_cmd("init --config " + config_path("talking-heads") + " --out " + dir.str("m")), out) == 0);
  REQUIRE(run_command(headlab_cmd("run --model " + dir.str("m") + " --ids 3,4,5,6 --capture all --out " + dir.str("a.st")), out) == 0);
  REQUIRE(run_command(headlab_cmd("run --model " + dir.str("m") + " --ids 3,4,5,6 --gate 1.2=0 --out " + dir.str("b.st")), out) == 0);
  auto a = headlab::core::SafetensorsFile::open(dir.str("a.st"));
  auto b = headlab::core::SafetensorsFile::open(dir.str("b.st"));
  for (const char* name : {"attention_logits.0", "attention_mixed_logits.0", "attention_weights.0", "head_outputs.1",
                           "hidden_states.2"})
    CHECK(a.contains(name));
  CHECK(headlab::core::load_tensor(a, "attention_logits.0").size(0) == 6);        // h_k
  CHECK(headlab::core::load_tensor(a, "attention_weights.0").size(0) == 4);       // h
  CHECK(headlab::core::load_tensor(a, "attentions.0").size(0) == 8);              // h_v: U multiplies the values
  // Gating layer 1 leaves layer 1's maps alone but changes the logits.
  CHECK(headlab::test::max_abs_diff(headlab::core::load_tensor(a, "attentions.1"), headlab::core::load_tensor(b, "attentions.1")) < 1e-6);
  CHECK(headlab::test::max_abs_diff(headlab::core::load_tensor(a, "logits"), headlab::core::load_tensor(b, "logits")) > 1e-4);
}

TEST_CASE("bad input gives one clear line and exit code 1 or 2", "[cli]") {
  TempDir dir("cli-errors");
  std::string out;
  CHECK(run_command(headlab_cmd("run --model " + dir.str() + " --ids 1 --out x.st --bogus"), out) == 2);
  CHECK(count_lines(out) == 1);
  CHECK(out.find("--bogus") != std::string::npos);

  CHECK(run_command(headlab_cmd("run --model " + dir.str("missing") + " --ids 1 --out x.st"), out) == 1);
  CHECK(count_lines(out) == 1);
  CHECK(out.find("missing") != std::string::npos);

  REQUIRE(run_command(headlab_cmd("init --config " + config_path("mha") + " --out " + dir.str("m")), out) == 0);
  CHECK(run_command(headlab_cmd("run --model " + dir.str("m") + " --ids 1,x --out " + dir.str("d.st")), out) == 2);
  CHECK(out.find("'x'") != std::string::npos);
  CHECK(run_command(headlab_cmd("run --model " + dir.str("m") + " --ids 1,2 --gate 9.0=0 --out " + dir.str("d.st")), out) == 2);
  CHECK(out.find("2 layers") != std::string::npos);
  CHECK(run_command(headlab_cmd("run --model " + dir.str("m") + " --ids 1,99999 --out " + dir.str("d.st")), out) == 1);
  CHECK(out.find("99999") != std::string::npos);

  // A truncated weight file names the file; nothing crashes.
  const auto weights = fs::path(dir.str("m")) / "model.safetensors";
  fs::resize_file(weights, fs::file_size(weights) / 2);
  CHECK(run_command(headlab_cmd("info --model " + dir.str("m")), out) == 1);
  CHECK(out.find("model.safetensors") != std::string::npos);
  CHECK(count_lines(out) == 1);

  // A config with an unknown key names the key.
  std::ofstream(dir.str("bad.json")) << R"({"kind": "encoder", "vocab_size": 10, "hidden_size": 8, "hiden": 3})";
  CHECK(run_command(headlab_cmd("init --config " + dir.str("bad.json") + " --out " + dir.str("n")), out) == 1);
  CHECK(out.find("hiden") != std::string::npos);
}

TEST_CASE("init reads its tokenizer before it writes anything", "[cli]") {
  TempDir dir("cli-init-tokenizer");
  std::string out;
  const std::string tokenizer_dir = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  const std::string init = headlab_cmd("init --config " + config_path("mha") + " --out " + dir.str("m"));
  // A missing tokenizer, or one with more tokens than the config's vocabulary (the default's 10,000
  // against mha.json's 1,000), is refused with nothing written: the same command then works.
  CHECK(run_command(init + " --tokenizer " + dir.str("none.json"), out) == 1);
  CHECK(out.find("none.json") != std::string::npos);
  CHECK(run_command(init + " --tokenizer " + tokenizer_dir, out) == 1);
  CHECK(out.find("do not fit the config's vocab_size 1000") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.str("m/model.safetensors")));
  REQUIRE(run_command(init, out) == 0);
  // A folder stands for the tokenizer.json inside it.
  std::string config = headlab::core::read_file_bytes(config_path("mha"));
  const std::string big = dir.str("big.json");
  const std::string small_vocab = "\"vocab_size\": 1000,";
  std::ofstream(big) << config.replace(config.find(small_vocab), small_vocab.size(), "\"vocab_size\": 10000,");
  REQUIRE(run_command(headlab_cmd("init --config " + big + " --out " + dir.str("t") + " --tokenizer " + tokenizer_dir), out) == 0);
  CHECK(fs::exists(dir.str("t/tokenizer.json")));
}

TEST_CASE("commands refuse to replace an existing output without --force", "[cli]") {
  TempDir dir("cli-force");
  std::string out;
  const std::string init = headlab_cmd("init --config " + config_path("mha") + " --out " + dir.str("m"));
  REQUIRE(run_command(init + " --seed 1", out) == 0);
  const std::string weights = headlab::core::read_file_bytes(dir.str("m/model.safetensors"));
  CHECK(run_command(init + " --seed 2", out) == 2);
  CHECK(count_lines(out) == 1);
  CHECK(out.find(dir.str("m/config.json") + " exists; pass --force to replace it") != std::string::npos);
  CHECK(headlab::core::read_file_bytes(dir.str("m/model.safetensors")) == weights);
  REQUIRE(run_command(init + " --seed 2 --force", out) == 0);
  CHECK(headlab::core::read_file_bytes(dir.str("m/model.safetensors")) != weights);

  const std::string run = headlab_cmd("run --model " + dir.str("m") + " --ids 1,2,3 --out " + dir.str("d.st"));
  REQUIRE(run_command(run, out) == 0);
  CHECK(run_command(run, out) == 2);
  CHECK(out.find("d.st exists; pass --force") != std::string::npos);
  CHECK(run_command(run + " --force", out) == 0);
  CHECK(headlab::test::temp_files_of(dir.str("d.st")).empty());
}

TEST_CASE("every command answers --help", "[cli]") {
  std::string out;
  for (const char* cmd : {"", "info", "init", "run", "tokenize"}) {
    INFO(cmd);
    CHECK(run_command(headlab_cmd(std::string(cmd) + " --help"), out) == 0);
    CHECK(out.find("Usage") != std::string::npos);
  }
}

TEST_CASE("headlab info --system names the BLAS and measures GEMM", "[cli]") {
  std::string out;
  REQUIRE(run_command(headlab_cmd("info --system"), out) == 0);
  CHECK(out.find("BLAS") != std::string::npos);
  CHECK(out.find("GFLOP/s") != std::string::npos);
  CHECK(out.find("OpenBLAS") != std::string::npos);  // the set-up installs it; reference BLAS is ~50× slower
}

TEST_CASE("headlab re-executes itself with a passive OpenMP wait policy unless the user chose one", "[cli]") {
  std::string out;
  REQUIRE(run_command("env -u OMP_WAIT_POLICY " + headlab_cmd("info --system"), out) == 0);
  CHECK(out.find("OpenMP wait   PASSIVE") != std::string::npos);
  REQUIRE(run_command("env OMP_WAIT_POLICY=ACTIVE " + headlab_cmd("info --system"), out) == 0);
  CHECK(out.find("OpenMP wait   ACTIVE") != std::string::npos);
}
