// `headlab compare` and `headlab prune` end to end through the binary, on two tiny models trained
// alike (MHA and talking heads): every section of the comparison is written and agrees with the
// models; pruning sweeps λ, a larger λ keeps fewer heads, sessions carry the gates the window
// opens, and a head report's roles are counted among the survivors.
#include "test_common.h"

#include "analysis/head_report.h"
#include "app/document/session.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace headlab;
using nlohmann::json;

namespace {

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return json::parse(in);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Tokenizer, then a 2-layer MHA model and its talking-heads twin trained with the same command.
struct TinyVariants {
  test::TempDir dir{"prune_compare"};
  std::string corpus = dir.str("corpus.txt"), mha = dir.str("mha"), talking = dir.str("talking");
  TinyVariants() {
    std::ofstream out(corpus);
    const char* lines[] = {"the cat sat on the mat .", "the dog sat on the log .", "a cat and a dog met on the mat .",
                           "the bird sang in the tree .", "my cat likes the warm mat ."};
    for (int i = 0; i < 200; ++i) out << lines[i % 5] << "\n";
    out.close();
    std::string log;
    const std::string bin = HEADLAB_BINARY;
    REQUIRE(test::run_command(bin + " train-tokenizer --data " + corpus + " --vocab-size 300 --out " +
                                  dir.str("tokenizer.json"), log) == 0);
    for (const auto& [config, folder] : {std::pair{"mha", mha}, std::pair{"talking-heads", talking}}) {
      INFO(log);
      REQUIRE(test::run_command(bin + " train --config " + HEADLAB_SOURCE_DIR + "/assets/configs/" + config +
                                    ".json --data " + corpus + " --tokenizer " + dir.str("tokenizer.json") +
                                    " --out " + folder + " --seq-len 16 --batch-tokens 256 --steps 30 --threads 1 --lr 3e-3",
                                log) == 0);
    }
  }
};

}  // namespace

TEST_CASE("headlab compare writes every section for models trained alike", "[compare][cli]") {
  TinyVariants v;
  const std::string out = v.dir.str("comparison");
  std::string log;
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " compare " + v.mha + " " + v.talking + " --data " + v.corpus +
                                " --seq-len 24 --rank-sequences 3 --timing-runs 3 --threads 1 --out " + out,
                            log) == 0);
  INFO(log);
  const std::string md = read_text(out + "/comparison.md");
  for (const char* section : {"## Quality and cost", "## Heads", "## The low-rank bottleneck"}) {
    INFO(section);
    CHECK(md.find(section) != std::string::npos);
  }
  CHECK(md.find("| mha | MHA(4h) |") != std::string::npos);
  CHECK(md.find("| talking | talking-heads(6/4/8) |") != std::string::npos);
  const auto j = read_json(out + "/comparison.json");
  REQUIRE(j["models"].size() == 2);
  for (const auto& m : j["models"]) {
    INFO(m["name"]);
    CHECK(m["parameters"].get<int64_t>() > 10000);
    CHECK(m["loss"].get<double>() > 0);
    CHECK(m["forward_ms"].get<double>() > 0);
    CHECK(m["kv_bytes_per_token"].get<int64_t>() > 0);
    CHECK(m["logit_sequence_length"].get<int>() == 24);
    // The bottleneck's bound: a logit matrix QKᵀ has rank ≤ d_k (talking heads: mixed over key heads).
    CHECK(m["logit_rank_max"].get<int>() >= 1);
    CHECK(m["logit_rank_max"].get<int>() <= m["logit_rank_bound"].get<int>());
    REQUIRE(m["logit_decay"].size() == 24);
    CHECK(m["logit_decay"][0].get<double>() == Approx(0.0).margin(1e-9));  // log10(σ_1 / σ_1)
    CHECK(std::filesystem::exists(m["report"].get<std::string>()));
  }
  // MHA with d_k = 16 < T = 24: its logits have rank ≤ 16 (the bottleneck). Talking heads (6 key
  // heads of 12) mix the key heads' logits: bound min(24, 72) = 24. MHA's KV cache: 2 layers × (4·16 + 4·16) floats.
  CHECK(j["models"][0]["logit_rank_bound"].get<int>() == 16);
  CHECK(j["models"][1]["logit_rank_bound"].get<int>() == 24);
  // Past d_k = 16 MHA's singular values are numerically zero: the cliff of the bottleneck.
  CHECK(j["models"][0]["logit_decay"][15].get<double>() > -4.0);
  CHECK(j["models"][0]["logit_decay"][16].get<double>() < -4.0);
  CHECK(j["models"][0]["kv_bytes_per_token"].get<int64_t>() == 2 * (4 * 16 + 4 * 16) * 4);
  for (const char* f : {"quality_vs_parameters.svg", "quality_vs_parameters.png", "logit_singular_values.svg", "logit_singular_values.png"})
    CHECK(std::filesystem::file_size(out + "/figures/" + f) > 1000);
  // An existing comparison is kept unless --force.
  CHECK(test::run_command(std::string(HEADLAB_BINARY) + " compare " + v.mha + " --data " + v.corpus + " --out " + out,
                          log) == 2);
  CHECK(log.find("--force") != std::string::npos);
}

TEST_CASE("headlab compare keeps each model's head report when two model folders share a name", "[compare][cli]") {
  // a/m and b/m (and a model given twice) each get a report folder of their own.
  test::TempDir dir{"compare_names"};
  const std::string bin = HEADLAB_BINARY, corpus = dir.str("corpus.txt");
  {
    std::ofstream out(corpus);
    for (int i = 0; i < 60; ++i) out << "the cat sat on the mat and the dog sat on the log .\n";
  }
  std::string log;
  REQUIRE(test::run_command(bin + " train-tokenizer --data " + corpus + " --vocab-size 300 --out " +
                                dir.str("tokenizer.json"), log) == 0);
  for (const char* config : {"mha", "mqa"}) {
    INFO(log);
    REQUIRE(test::run_command(bin + " init --config " + HEADLAB_SOURCE_DIR + "/assets/configs/" + config +
                                  ".json --tokenizer " + dir.str("tokenizer.json") + " --out " + dir.str(config) + "/m",
                              log) == 0);
  }
  const std::string out = dir.str("comparison");
  REQUIRE(test::run_command(bin + " compare " + dir.str("mha/m") + " " + dir.str("mqa/m/") + " " + dir.str("mha/m") +
                                " --data " + corpus + " --seq-len 24 --limit 3 --rank-sequences 1 --timing-runs 1 " +
                                "--threads 1 --out " + out,
                            log) == 0);
  INFO(log);
  const auto j = read_json(out + "/comparison.json");
  REQUIRE(j["models"].size() == 3);
  const char* expected[] = {"/reports/m-1/head_report.json", "/reports/m-2/head_report.json",
                            "/reports/m-3/head_report.json"};
  for (size_t i = 0; i < 3; ++i) {
    const std::string report = j["models"][i]["report"].get<std::string>();
    CHECK(report == out + expected[i]);
    REQUIRE(std::filesystem::exists(report));
    // Each report is its own model's.
    CHECK(read_json(report)["model"].get<std::string>().find(i == 1 ? "mqa/m" : "mha/m") != std::string::npos);
  }
}

TEST_CASE("headlab prune sweeps λ, writes the curve, sessions with the gates and the survivors' roles", "[prune][cli]") {
  TinyVariants v;
  std::string log;
  // Roles come from a head report of the same model; with these thresholds every head has two, of
  // two kinds (positional at its best offset, and copying).
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " analyze --model " + v.mha + " --data " + v.corpus +
                                " --metrics positional,confidence,copying --positional-threshold 0"
                                " --copying-threshold -1 --out " + v.dir.str("report"),
                            log) == 0);
  const std::string out = v.dir.str("pruned");
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " prune --model " + v.mha + " --data " + v.corpus +
                                " --lambda 0,5 --steps 60 --lr 0.2 --seq-len 16 --batch-tokens 128 --threads 1"
                                " --export-session --roles " + v.dir.str("report") + "/head_report.json --out " + out,
                            log) == 0);
  INFO(log);
  const auto j = read_json(out + "/prune.json");
  REQUIRE(j["runs"].size() == 2);
  CHECK(j["heads"].get<int>() == 8);
  const int kept_free = j["runs"][0]["heads_kept"].get<int>(), kept_strong = j["runs"][1]["heads_kept"].get<int>();
  CHECK(kept_strong < kept_free);
  CHECK(kept_strong <= 1);
  CHECK(j["survival"]["heads"].size() == 8);
  const auto report = analysis::read_head_report(v.dir.str("report") + "/head_report.json");
  int with_roles = 0;
  for (const auto& h : report.heads) with_roles += !h.roles.empty();
  CHECK(j["survival"]["classes"].contains("none") == (with_roles < 8));
  // A head with roles of two kinds counts under both: every head is positional and copying.
  REQUIRE(with_roles == 8);
  CHECK(j["survival"]["classes"]["positional"]["heads"] == 8);
  CHECK(j["survival"]["classes"]["copying"]["heads"] == 8);
  CHECK(j["survival"]["classes"]["copying"]["kept"] == j["survival"]["classes"]["positional"]["kept"]);
  CHECK(j["survival"]["heads"][0]["classes"] == nlohmann::json::array({"positional", "copying"}));
  CHECK(j["lambdas"] == nlohmann::json::array({0, 5}));
  CHECK(read_text(out + "/prune.md").find("| 5 | " + std::to_string(kept_strong) + " |") != std::string::npos);
  CHECK(std::filesystem::file_size(out + "/prune.svg") > 1000);
  CHECK(std::filesystem::file_size(out + "/prune.png") > 1000);

  // The session of λ = 5 opens the model with its gates.
  const auto loaded = app::load_session_file(j["runs"][1]["session"].get<std::string>());
  CHECK(loaded.warnings.empty());
  CHECK(std::filesystem::equivalent(loaded.state.model_folder, v.mha));
  for (const auto& layer : j["runs"][1]["layers"]) {
    const auto& controls = loaded.state.controls.get(headlab::core::Stack::Encoder, layer["layer"].get<int>());
    REQUIRE(controls.gates.size() == 4);
    for (int h = 0; h < 4; ++h) CHECK(controls.gates[h] == Approx(layer["gates"][h].get<double>()).margin(1e-6));
  }
  CHECK(test::run_command(std::string(HEADLAB_BINARY) + " prune --model " + v.mha + " --data " + v.corpus + " --out " + out,
                          log) == 2);

  // A report of another model is refused, naming both, before any training: its roles belong to
  // other heads.
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " analyze --model " + v.talking + " --data " + v.corpus +
                                " --metrics confidence --limit 5 --out " + v.dir.str("talking_report"),
                            log) == 0);
  CHECK(test::run_command(std::string(HEADLAB_BINARY) + " prune --model " + v.mha + " --data " + v.corpus +
                              " --roles " + v.dir.str("talking_report") + "/head_report.json --out " +
                              v.dir.str("pruned_other"),
                          log) == 1);
  CHECK(log.find("--roles: " + v.dir.str("talking_report") + "/head_report.json was measured on " + v.talking) !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(v.dir.str("pruned_other") + "/prune.json"));
}

TEST_CASE("a stopped prune writes the λ values it finished, marked partial", "[prune][cli]") {
  TinyVariants v;
  const std::string out = v.dir.str("stopped"), log = v.dir.str("prune.log");
  // SIGTERM (a Slurm time limit) once the first λ's line is printed; eight λ values of 400 steps
  // would take far longer than the signal does to arrive.
  std::string output;
  const int code = test::run_command(
      "sh -c '" + std::string(HEADLAB_BINARY) + " prune --model " + v.mha + " --data " + v.corpus +
          " --lambda 0,0.1,0.2,0.3,0.4,0.5,0.6,0.7 --steps 400 --seq-len 16 --batch-tokens 128 --threads 1 --out " + out +
          " >" + log + " 2>&1 & pid=$!; i=0; while ! grep -q \"heads kept\" " + log +
          " && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done; kill -TERM $pid; wait $pid'",
      output);
  const std::string printed = read_text(log);
  INFO(printed);
  CHECK(code == 143);
  CHECK(printed.find("λ 0        heads kept") != std::string::npos);  // the finished λ's line was not lost
  CHECK(printed.find("stopped by SIGTERM after") != std::string::npos);
  const auto j = read_json(out + "/prune.json");
  CHECK(j["partial"] == true);
  CHECK(j["runs"].size() >= 1);
  CHECK(j["runs"].size() < 8);
  CHECK(j["runs"][0]["lambda"] == 0.0);
  CHECK(j["lambdas"].size() == 8);
  // The readable result says so too, naming the λ values not run.
  const std::string md = read_text(out + "/prune.md");
  CHECK(md.find("**Partial: stopped (SIGTERM) after " + std::to_string(j["runs"].size()) + " of 8 λ values; not run: ") !=
        std::string::npos);
  CHECK(md.find(", 0.7.**") != std::string::npos);
}
