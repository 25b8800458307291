// The front end `headlab` (no LibTorch) and the engine `headlab-engine`: which arguments each
// serves, that both list the same commands and options, and what happens without the engine.
#include "test_common.h"

#include "app/cli/front_end.h"
#include "core/atomic_file.h"
#include "core/model/model.h"
#include "core/model/safetensors_torch.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <regex>

namespace fs = std::filesystem;
using headlab::test::run_command;
using headlab::test::TempDir;

namespace {

bool serves(std::vector<std::string> args) { return headlab::app::front_end_serves(args); }

// `program` (its path in the Usage line replaced by "headlab") with `args`; the engine is started
// with the OpenMP policy set, so it does not re-execute itself.
std::string help_of(const std::string& program, const std::string& args) {
  std::string out;
  REQUIRE(run_command("OMP_WAIT_POLICY=PASSIVE " + program + " " + args, out) == 0);
  return std::regex_replace(out, std::regex(program), "headlab");
}

}  // namespace

TEST_CASE("the front end serves help, version and the torch-free commands, the engine the rest", "[cli][front_end]") {
  CHECK(serves({"--help"}));
  CHECK(serves({"-h"}));
  CHECK(serves({"--version"}));
  CHECK(serves({"--memory-limit", "4G", "--help"}));
  CHECK(serves({"info"}));
  CHECK(serves({"info", "--model", "m", "--json"}));
  CHECK(serves({"tokenize", "--tokenizer", "t.json"}));
  CHECK(serves({"train-tokenizer", "--help"}));
  CHECK(serves({"--memory-limit", "run", "info"}));  // "run" is the option's value

  CHECK_FALSE(serves({}));                               // the window
  CHECK_FALSE(serves({"--model", "m"}));                 // the window on a model
  CHECK_FALSE(serves({"--model", "m", "--help"}));       // the window's options
  CHECK_FALSE(serves({"--memory-limit", "4G"}));         // the window
  CHECK_FALSE(serves({"info", "--system"}));             // measures GEMM
  CHECK_FALSE(serves({"info", "--model", "m", "--check"}));  // reads every weight
  CHECK_FALSE(serves({"run", "--help"}));
  CHECK_FALSE(serves({"predict", "--text", "info"}));
  CHECK_FALSE(serves({"gui"}));
}

TEST_CASE("the front end lists what the engine lists", "[cli][front_end]") {
  const std::string front = HEADLAB_BINARY, engine = HEADLAB_ENGINE;
  for (const char* args : {"--help", "info --help", "tokenize --help", "train-tokenizer --help", "--version"}) {
    INFO(args);
    const std::string a = help_of(front, args), b = help_of(engine, args);
    CHECK(a == b);
    CHECK(!a.empty());
  }
  // Every command of the table is in the help, and a command's own help comes from the engine.
  const std::string help = help_of(front, "--help");
  for (const auto& c : headlab::app::command_table())
    if (std::string(c.name) != "gui") CHECK(help.find(std::string("  ") + c.name + " ") != std::string::npos);
  CHECK(help_of(front, "run --help").find("--out") != std::string::npos);
}

TEST_CASE("without the engine beside it, the front end says so and still serves its own commands", "[cli][front_end]") {
  TempDir dir("front_end_alone");
  const std::string alone = dir.str("headlab");
  fs::copy_file(HEADLAB_BINARY, alone);
  fs::permissions(alone, fs::perms::owner_all);
  std::string out;
  CHECK(run_command(alone + " run --ids 1 --out " + dir.str("d.st"), out) == 127);
  CHECK(out.find("headlab-engine") != std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  REQUIRE(run_command(alone + " --help", out) == 0);
  CHECK(out.find("analyze") != std::string::npos);
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  REQUIRE(run_command(alone + " info --model " + model, out) == 0);
  CHECK(out.find("parameters") != std::string::npos);
}

TEST_CASE("info describes a folder without reading its weights, --check reads them all", "[cli][front_end]") {
  TempDir dir("info_check");
  std::string out;
  const std::string config = std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json";
  REQUIRE(run_command(std::string(HEADLAB_BINARY) + " init --config " + config + " --out " + dir.str("m"), out) == 0);
  const auto model = headlab::core::load_model(dir.str("m"));
  // One weight made NaN: the description does not read values, the check does and names the tensor.
  auto weights = headlab::core::named_weights(model->module);
  {
    torch::NoGradGuard no_grad;
    weights.front().second.view(-1)[0].fill_(std::nan(""));
  }
  headlab::core::save_safetensors(dir.str("m/model.safetensors"), weights);
  REQUIRE(run_command(std::string(HEADLAB_BINARY) + " info --json --model " + dir.str("m"), out) == 0);
  const auto j = nlohmann::json::parse(out);
  CHECK(j["parameters"].get<int64_t>() == model->config.parameter_count());
  CHECK(j["weights_dtype"] == "F32");
  CHECK(run_command(std::string(HEADLAB_BINARY) + " info --check --model " + dir.str("m"), out) == 1);
  CHECK(out.find("'" + weights.front().first + "' holds 1 NaN or infinite value") != std::string::npos);

  // A sound folder passes the check, and says so.
  REQUIRE(run_command(std::string(HEADLAB_BINARY) + " init --force --config " + config + " --out " + dir.str("m"), out) == 0);
  REQUIRE(run_command(std::string(HEADLAB_BINARY) + " info --check --model " + dir.str("m"), out) == 0);
  CHECK(out.find("checked: every weight read") != std::string::npos);
}
