// What the command line refuses, and when: bad numbers, gates and outputs are refused in one line
// (exit 2) before a model loads or long work starts, and a refused or failed start leaves no folder.
#include "test_common.h"

#include "analysis/induction_probe.h"
#include "app/cli/cli_checks.h"
#include "app/cli/progress.h"
#include "app/document/session.h"
#include "core/atomic_file.h"
#include "core/control_values.h"
#include "core/controls.h"
#include "core/memory_budget.h"
#include "core/model/model.h"
#include "core/safetensors.h"
#include "core/token_counts.h"
#include "core/weights_memory.h"
#include "core/tokenizer/tokenizer.h"
#include "core/train/trainer.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

namespace fs = std::filesystem;
using headlab::test::run_command;
using headlab::test::TempDir;

namespace {

std::string cli(const std::string& args) { return std::string(HEADLAB_BINARY) + " " + args; }
std::string source(const std::string& path) { return std::string(HEADLAB_SOURCE_DIR) + "/" + path; }
const std::string kInduction = source("assets/models/induction");
const std::string kMha = source("assets/configs/mha.json");
const std::string kTokenizer = source("assets/models/default/tokenizer.json");

int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// The refusal of `args`: exit 2 in one line that contains `says`.
void check_refused(const std::string& args, const std::string& says) {
  std::string out;
  INFO(args);
  CHECK(run_command(cli(args), out) == 2);
  CHECK(lines(out) == 1);
  CHECK_THAT(out, Catch::Contains(says));
}

void write_text(const std::string& path, const std::string& text) { headlab::core::write_file_atomic(path, text); }

// A text of `words` words, a sentence a line, for a tiny training run.
std::string some_text(int words) {
  std::string text;
  const char* vocabulary[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "home"};
  for (int i = 0; i < words; ++i) text += std::string(vocabulary[(i * 7) % 10]) + ((i + 1) % 9 == 0 ? ".\n" : " ");
  return text;
}

}  // namespace

TEST_CASE("number checks refuse NaN, infinities and values outside the range", "[cli][checks]") {
  using namespace headlab::app;
  auto refuses = [](const CLI::Validator& check, std::string text) { return !check(text).empty(); };
  for (const char* bad : {"nan", "NaN", "-nan", "inf", "-inf", "1.5", "-0.1", "x", ""})
    CHECK(refuses(number_in(0, 1), bad));
  for (const char* good : {"0", "1", "0.5", "1e-3"}) CHECK_FALSE(refuses(number_in(0, 1), good));
  CHECK(refuses(number_above(0, 1), "0"));
  CHECK_FALSE(refuses(number_above(0, 1), "1"));
  CHECK(refuses(positive(), "0"));
  CHECK(refuses(positive(), "inf"));
  CHECK(refuses(non_negative(), "nan"));
  CHECK_FALSE(refuses(non_negative(), "0"));
  // --help names the range as a reader writes it, not as a 300-digit number.
  CHECK(non_negative().get_description() == ">= 0");
  CHECK(number_above(0, 1).get_description() == "in (0, 1]");
  CHECK(number_in(1, 1 << 20).get_description() == "in [1, 1048576]");
}

TEST_CASE("bad sampling and learning-rate values are refused in one line before anything runs", "[cli][checks]") {
  TempDir dir("cli-numbers");
  const std::string generate = "generate --model " + kInduction + " --prompt 'The old man' --max-new 3";
  std::string out;
  check_refused(generate + " --top-p 0 --temperature 1", "--top-p: 0 is not in (0, 1]");
  check_refused(generate + " --temperature nan", "--temperature: nan is not in [0, 100]");
  check_refused(generate + " --temperature inf", "--temperature");
  // Greedy decoding (temperature 0, the default) draws nothing: sampling options would be ignored.
  check_refused(generate + " --top-k 5", "--top-k shapes sampling, and --temperature 0 (the default) decodes greedily");
  check_refused(generate + " --seed 3", "--seed shapes sampling");
  check_refused(generate + " --top-p 0.5 --temperature 0", "--top-p shapes sampling");
  REQUIRE(run_command(cli(generate + " --top-k 5 --seed 3 --temperature 0.8"), out) == 0);
  // A negative seed would wrap to 2^64 − 1 and be taken for a seed nobody gave.
  check_refused(generate + " --seed -1 --temperature 0.8", "--seed: -1 is not >= 0");
  check_refused("init --config " + kMha + " --seed -1 --out " + dir.str("m"), "--seed: -1");
  REQUIRE(run_command(cli("generate --help"), out) == 0);
  CHECK(!std::regex_search(out, std::regex("[0-9]{20}")));
  CHECK_THAT(out, Catch::Contains(">= 0"));
  for (const char* lr : {"-1", "nan", "0"}) {
    check_refused("train --config " + kMha + " --data x.txt --tokenizer " + kTokenizer + " --steps 2 --lr " + lr +
                      " --out " + dir.str("model"),
                  "--lr");
    CHECK(!fs::exists(dir.str("model")));
  }
}

TEST_CASE("init and train refuse a model larger than the memory limit before allocating it", "[cli][checks]") {
  TempDir dir("cli-memory");
  auto config = nlohmann::json::parse(headlab::core::read_file_bytes(kMha));
  config["hidden_size"] = 60000;
  config["vocab_size"] = 200000;
  write_text(dir.str("huge.json"), config.dump());
  std::string out;
  CHECK(run_command(cli("--memory-limit 1G init --config " + dir.str("huge.json") + " --out " + dir.str("m")), out) == 1);
  CHECK(lines(out) == 1);
  CHECK_THAT(out, Catch::Contains("init: a model of this config has") && Catch::Contains("--memory-limit"));
  CHECK(!fs::exists(dir.str("m")));
  // Training counts the gradients and AdamW's moments too: a model whose weights alone fit is refused.
  headlab::core::set_memory_limit(headlab::core::parse_byte_size("1G"));
  auto trained = headlab::core::load_model_config(kMha);
  trained.hidden_size = 2048;
  trained.vocab_size = 50000;  // ~0.1 G parameters: 0.4 GB of weights, 1.6 GB to train
  headlab::core::train::TrainOptions o;
  o.out = dir.str("t");
  o.steps = 1;
  CHECK_NOTHROW(headlab::core::check_weights_memory(trained, 1, "init"));
  CHECK_THROWS_AS(headlab::core::train::check_training(trained, o), headlab::core::MemoryLimitError);
  headlab::core::set_memory_limit(0);
  // A batch too large for the limit — its activations, not the weights — is refused before it runs:
  // 8 sequences of 512 tokens through the default model, and 1,024 sequences of 256 tokens in training.
  write_text(dir.str("a.txt"), some_text(9000));
  CHECK(run_command(cli("--memory-limit 100M evaluate --model " + source("assets/models/default") + " --data " +
                        dir.str("a.txt") + " --seq-len 512"),
                    out) == 1);
  CHECK(lines(out) == 1);
  CHECK_THAT(out, Catch::Contains("evaluate: a batch of 8 sequences of 512 tokens needs about") &&
                      Catch::Contains("Give a smaller --batch-tokens or --seq-len"));
  CHECK(run_command(cli("--memory-limit 200M train --config " + kMha + " --tokenizer " + kTokenizer + " --data " +
                        dir.str("a.txt") + " --steps 1 --seq-len 256 --batch-tokens 262144 --out " + dir.str("t")),
                    out) == 1);
  CHECK_THAT(out, Catch::Contains("train: a batch of 1024 sequences of 256 tokens needs about") &&
                      Catch::Contains("with its backward pass"));
  CHECK(!fs::exists(dir.str("t")));
  // The same runs in smaller batches fit.
  REQUIRE(run_command(cli("--memory-limit 200M evaluate --model " + kInduction + " --data " + dir.str("a.txt") +
                          " --seq-len 64"),
                      out) == 0);
}

TEST_CASE("a gate, mix or session value that is NaN or outside its range is refused", "[cli][checks]") {
  CHECK_THROWS_WITH(headlab::core::parse_gate_spec("0.1=nan"), Catch::Contains("gate '0.1=nan'"));
  CHECK_THROWS(headlab::core::parse_gate_spec("0.1=2"));
  CHECK(headlab::core::parse_gate_spec("0.1=0.25").value == 0.25f);
  headlab::core::HeadControls c;
  c.post_mix = {1, 0, 0, std::numeric_limits<float>::infinity()};
  CHECK_THROWS_WITH(headlab::core::check_controls(c, "layer 0"), Catch::Contains("post_mix entry 3"));
  // A session's controls: a gate above 1, and a number too large for a float, are refused by name.
  auto controls = nlohmann::json::parse(R"({"encoder": [{"layer": 0, "gates": [1, 2]}]})");
  CHECK_THROWS_WITH(headlab::app::controls_from_json(controls), Catch::Contains("controls.encoder layer 0 head 1"));
  // A gate that is no number: the layer and the key named, not the JSON library's type error.
  controls = nlohmann::json::parse(R"({"encoder": [{"layer": 2, "gates": [1, "x"]}]})");
  CHECK_THROWS_WITH(headlab::app::controls_from_json(controls),
                    Catch::Contains("controls.encoder layer 2: gates must be a list of numbers, got [1,\"x\"]"));

  TempDir dir("cli-gates");
  check_refused("run --model " + kInduction + " --ids 1,2,3 --gate 0.1=nan --out " + dir.str("m.st"), "gate '0.1=nan'");
  CHECK(!fs::exists(dir.str("m.st")));
}

TEST_CASE("a training objective that does not fit the config's kind is refused, naming the key", "[cli][checks][train]") {
  auto encoder = headlab::core::load_model_config(kMha);
  headlab::core::train::TrainOptions o;
  o.out = "unused";
  o.steps = 1;
  o.objective = headlab::core::train::Objective::Causal;
  CHECK_THROWS_WITH(headlab::core::train::check_training(encoder, o),
                    Catch::Contains("\"kind\" is \"encoder\"") && Catch::Contains("\"kind\": \"decoder\""));
  o.objective = headlab::core::train::Objective::Mlm;
  CHECK_NOTHROW(headlab::core::train::check_training(encoder, o));

  TempDir dir("cli-objective");
  write_text(dir.str("a.txt"), some_text(400));
  check_refused("train --config " + kMha + " --objective causal --data " + dir.str("a.txt") + " --tokenizer " + kTokenizer +
                    " --steps 2 --out " + dir.str("model"),
                "needs a decoder config");
  CHECK(!fs::exists(dir.str("model")));
}

TEST_CASE("a train run refused or failing before its first checkpoint leaves no folder", "[cli][checks][train]") {
  TempDir dir("cli-train-folder");
  write_text(dir.str("a.txt"), some_text(400));
  write_text(dir.str("empty.txt"), "");
  const std::string train = "train --config " + kMha + " --tokenizer " + kTokenizer + " --steps 2 --seq-len 16 --out " +
                            dir.str("model") + " --data ";
  std::string out;
  CHECK(run_command(cli(train + dir.str("empty.txt")), out) == 1);
  CHECK_THAT(out, Catch::Contains("empty.txt: no 16-token sequence"));
  CHECK(!fs::exists(dir.str("model")));
  check_refused(train + dir.str("a.txt") + " --mlm-rate 0", "--mlm-rate");
  CHECK(!fs::exists(dir.str("model")));
  check_refused(train + dir.str("a.txt") + " --resume", "no checkpoint to resume from");
  CHECK(!fs::exists(dir.str("model")));
  // The folder keeps its tokenizer as tokenizer.json: a vocab.txt is refused, not copied under that name.
  write_text(dir.str("vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n");
  check_refused("train --config " + kMha + " --tokenizer " + dir.str("vocab.txt") + " --steps 2 --seq-len 16 --out " +
                    dir.str("model") + " --data " + dir.str("a.txt"),
                "--tokenizer: " + dir.str("vocab.txt") + " is not a tokenizer.json");
  CHECK(!fs::exists(dir.str("model")));
  // Fails inside the trainer, after the folder was made and the tokenizer copied: the folder goes.
  CHECK(run_command(cli(train + dir.str("a.txt") + " --decay-only 'no.such.*'"), out) == 2);
  CHECK_THAT(out, Catch::Contains("--decay-only: 'no.such.*' names no parameter"));
  CHECK(!fs::exists(dir.str("model")));
  // A folder that was there stays.
  fs::create_directories(dir.str("model"));
  CHECK(run_command(cli(train + dir.str("a.txt") + " --decay-only 'no.such.*'"), out) == 2);
  CHECK(fs::is_directory(dir.str("model")));
}

TEST_CASE("generate's dump names the model and the prompt's ids", "[cli][checks][generate]") {
  TempDir dir("cli-generate-dump");
  std::string out;
  REQUIRE(run_command(cli("generate --model " + kInduction + " --ids 100,200,300,400 --max-new 2 --out " +
                              dir.str("g.st")),
                      out) == 0);
  const auto file = headlab::core::SafetensorsFile::open(dir.str("g.st"));
  CHECK(file.metadata().at("prompt_ids") == "100,200,300,400");
  CHECK(file.metadata().at("model") == kInduction);
  CHECK(file.metadata().at("producer") == "headlab generate");
}

TEST_CASE("outputs are checked before a command loads its model", "[cli][checks]") {
  using namespace headlab::app;
  TempDir dir("cli-outputs");
  write_text(dir.str("file"), "x");
  CHECK_THROWS_WITH(check_output_folder("--out", dir.str("file"), {"report.json"}, false), Catch::Contains("is a file"));
  CHECK_THROWS_WITH(check_output_file("--out", dir.str("file"), false), Catch::Contains("exists; pass --force"));
  CHECK_NOTHROW(check_output_file("--out", dir.str("file"), true));
  CHECK_THROWS_WITH(check_output_file("--out", dir.str(), true), Catch::Contains("is a folder"));
  CHECK_THROWS_WITH(check_output_file("--out", dir.str("missing/g.st"), false), Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(check_output_folder("--out", dir.str("file/sub"), {}, false), Catch::Contains("is not a folder"));
  // A folder output is made with its parents.
  CHECK_NOTHROW(check_output_folder("--out", dir.str("new/deeper"), {"report.json"}, false));

  // Each command refuses a file where its folder goes, before the model loads (a missing model
  // would be the first complaint otherwise).
  const std::string missing = dir.str("no-model");
  for (const char* command :
       {"analyze --probe induction", "patch --clean-ids 1,2 --corrupt-ids 1,3 --metric kl", "circuits", "convert --to mqa"})
    check_refused(std::string(command) + " --model " + missing + " --out " + dir.str("file"), "is a file");
  check_refused("generate --model " + missing + " --ids 1,2 --out " + dir.str("missing/g.st"), "does not exist");
}

TEST_CASE("path patching's heads are checked before the patching runs", "[cli][checks][patch]") {
  TempDir dir("cli-patch-path");
  std::string out;
  CHECK(run_command(cli("patch --model " + source("tests/data/hf/llama") +
                            " --clean-ids 1,2,3,4 --corrupt-ids 1,2,5,4 --answer-id 7 --wrong-id 9 --path 1.1 --to 0.0 "
                            "--out " + dir.str("p")),
                    out) == 2);
  CHECK_THAT(out, Catch::Contains("receiver L0 H0 is not in a layer after the sender's"));
  CHECK_THAT(out, !Catch::Contains("exact patching"));
  CHECK(!fs::exists(dir.str("p")));
  check_refused("patch --model " + source("tests/data/hf/llama") + " --clean-ids 1,2 --corrupt-ids 1,3 --metric kl --to 1.0 --out " +
                    dir.str("p"),
                "--to names path patching's receivers");
}

TEST_CASE("measures of the weights and the induction probe run on a folder without a tokenizer", "[cli][checks][analyze]") {
  const std::string llama = source("tests/data/hf/llama");
  auto model = headlab::core::load_model(llama);
  REQUIRE(!model->tokenizer);
  const auto probe = headlab::analysis::make_induction_probe(*model, 5, 2, 0);
  REQUIRE(probe.sequences.size() == 2);
  CHECK(probe.sequences[0].size() == 10);
  CHECK(probe.start == 0);
  for (int64_t id : probe.sequences[0]) CHECK((id >= 0 && id < model->config.vocab_size));
  CHECK_THROWS_WITH(headlab::analysis::make_induction_probe(*model, 1, 2, 0), Catch::Contains("too short"));

  TempDir dir("cli-analyze-no-tokenizer");
  std::string out;
  REQUIRE(run_command(cli("analyze --model " + llama + " --probe induction --out " + dir.str("r")), out) == 0);
  CHECK(fs::exists(dir.str("r/head_report.json")));
  REQUIRE(run_command(cli("analyze --model " + llama + " --metrics spectra,copying --out " + dir.str("s")), out) == 0);
  CHECK(fs::exists(dir.str("s/head_report.json")));
  // A dataset still needs the tokenizer, and says why.
  write_text(dir.str("a.txt"), "the cat sat\n");
  CHECK(run_command(cli("analyze --model " + llama + " --data " + dir.str("a.txt") + " --out " + dir.str("d")), out) == 1);
  CHECK_THAT(out, Catch::Contains("analysing a dataset needs a model folder with a tokenizer"));
}

TEST_CASE("a folder whose tokenizer is in a format HeadLab does not read says which file, and how to convert it",
          "[cli][checks]") {
  TempDir dir("cli-sentencepiece-only");
  const std::string folder = dir.str("m");
  fs::create_directories(folder);
  for (const char* name : {"config.json", "model.safetensors"})
    fs::copy_file(source("tests/data/hf/llama/") + name, folder + "/" + name);
  std::string out;
  // Without a tokenizer file of any kind: the plain sentence.
  CHECK(run_command(cli("predict --model " + folder + " --text hello"), out) == 2);
  CHECK_THAT(out, Catch::Contains(folder + " has no tokenizer") && !Catch::Contains("does not read"));
  // SentencePiece's binary model beside the weights (as many Hugging Face repositories keep it).
  write_text(folder + "/tokenizer.model", std::string("\x0a\x05hello", 7));
  const std::string says = folder + " has no tokenizer HeadLab reads: its tokenizer.model is a format HeadLab does not read";
  check_refused("predict --model " + folder + " --text hello", says);
  check_refused("run --model " + folder + " --text hello --out " + dir.str("r.st"), says);
  check_refused("generate --model " + folder + " --prompt hello --max-new 2", says);
  CHECK(run_command(cli("info --model " + folder), out) == 0);
  CHECK_THAT(out, Catch::Contains("tokenizer: none (" + says));
}

TEST_CASE("run, predict and generate give a text the same ids: a HeadLab causal model reads them bare", "[cli][checks]") {
  // BERT's WordPiece tokenizer frames a sentence as [CLS] … [SEP]; a causal model trained by HeadLab
  // never saw those around its text (the trainer packs bare ids), a masked LM always did.
  TempDir dir("cli-causal-framing");
  std::string out;
  const std::string bert = source("tests/data/tokenizers/bert-base-uncased/tokenizer.json");
  const auto tok = headlab::core::Tokenizer::load(bert);
  for (const auto& [name, file] : {std::pair{"causal", "attention-only.json"}, std::pair{"mlm", "mha.json"}}) {
    auto config = nlohmann::json::parse(headlab::core::read_file_bytes(source(std::string("assets/configs/") + file)));
    config["vocab_size"] = tok->vocab_size();
    write_text(dir.str(std::string(name) + ".json"), config.dump());
    REQUIRE(run_command(cli("init --config " + dir.str(std::string(name) + ".json") + " --tokenizer " + bert + " --out " +
                                dir.str(name)),
                        out) == 0);
  }
  auto joined = [](const std::vector<int64_t>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
    return s;
  };
  const std::string bare = joined(tok->encode("the cat sat", false).ids);
  REQUIRE(joined(tok->encode("the cat sat", true).ids) != bare);
  REQUIRE(run_command(cli("run --model " + dir.str("causal") + " --text 'the cat sat' --out " + dir.str("r.st")), out) == 0);
  CHECK(headlab::core::SafetensorsFile::open(dir.str("r.st")).metadata().at("ids") == bare);
  REQUIRE(run_command(cli("generate --model " + dir.str("causal") + " --prompt 'the cat sat' --max-new 1 --out " +
                              dir.str("g.st")),
                      out) == 0);
  CHECK(headlab::core::SafetensorsFile::open(dir.str("g.st")).metadata().at("prompt_ids") == bare);
  // The masked LM reads it framed, as it was trained.
  REQUIRE(run_command(cli("run --model " + dir.str("mlm") + " --text 'the cat sat' --out " + dir.str("m.st")), out) == 0);
  CHECK(headlab::core::SafetensorsFile::open(dir.str("m.st")).metadata().at("ids") ==
        joined(tok->encode("the cat sat", true).ids));
}

TEST_CASE("progress written to a log or a pipe is plain lines", "[cli][checks]") {
  // Terminal or not is decided per stream; commands reach the plain form when stderr is a pipe.
  TempDir dir("cli-progress");
  std::string out;
  REQUIRE(run_command(cli("circuits --model " + source("tests/data/hf/llama") + " --out " + dir.str("c")), out) == 0);
  CHECK_THAT(out, Catch::Contains("composition: ") && Catch::Contains("layers (100%)"));
  CHECK(out.find('\r') == std::string::npos);
  REQUIRE(run_command(cli("patch --model " + source("tests/data/hf/llama") +
                              " --clean-ids 1,2,3,4 --corrupt-ids 1,2,5,4 --metric kl --out " + dir.str("p")),
                      out) == 0);
  CHECK_THAT(out, Catch::Contains("exact patching: "));
  CHECK(out.find('\r') == std::string::npos);
  // Before the first unit is done there is no time left to tell: "ETA –", never "ETA 0s" at 0%;
  // and the last layer's line reaches 100%.
  REQUIRE(run_command(cli("convert --model " + source("tests/data/hf/bert") + " --to collaborative --key-dim 8 --out " +
                          dir.str("collab")),
                      out) == 0);
  CHECK(std::regex_search(out, std::regex("0/[0-9]+ layers \\(0%\\), [0-9]+s, ETA –")));
  CHECK(!std::regex_search(out, std::regex("\\(0%\\), [0-9]+s, ETA 0s")));
  CHECK(out.find("layers (100%)") != std::string::npos);
}

TEST_CASE("conflicting or empty arguments are refused by name", "[cli][checks]") {
  TempDir dir("cli-conflicts");
  std::string out;
  REQUIRE(run_command(cli("init --config " + kMha + " --out " + dir.str("enc")), out) == 0);
  check_refused("run --model " + kInduction + " --text '' --out " + dir.str("x.st"), "--text is empty");
  check_refused("predict --model " + dir.str("enc") + " --text ''", "--text is empty");
  check_refused("generate --model " + kInduction + " --prompt '' --max-new 1", "--prompt is empty");
  check_refused("convert --model " + kInduction + " --to mqa --groups 2 --out " + dir.str("c"), "--groups is for --to gqa");
  check_refused("convert --model " + kInduction + " --to gqa --groups 2 --key-dim 8 --out " + dir.str("c"),
                "--key-dim is for --to collaborative");
  // An option of another kind of tokenizer is refused by name, not ignored.
  write_text(dir.str("words.txt"), "the cat sat on the mat\n");
  check_refused("train-tokenizer --data " + dir.str("words.txt") + " --vocab-size 300 --kind bpe --cased --out " +
                    dir.str("t.json"),
                "are for --kind wordpiece or wordlevel");
  check_refused("train-tokenizer --data " + dir.str("words.txt") + " --vocab-size 300 --kind wordlevel --limit-alphabet 5 --out " +
                    dir.str("t.json"),
                "--limit-alphabet needs --kind wordpiece");
  // Quality is measured on sequences the model takes; every input is checked before the first model runs.
  check_refused("prune --model " + kInduction + " --data " + dir.str("words.txt") + " --seq-len 1000 --out " + dir.str("p"),
                "--seq-len 1000 is more than the 256 positions");
  check_refused("compare " + kInduction + " --data " + dir.str("words.txt") + " --analyze " + dir.str("missing.conllu") +
                    " --out " + dir.str("cmp"),
                "missing.conllu: no such file or folder");
  // Two equal values would write the same folder or session twice, the first lost.
  check_refused("convert --model " + kInduction + " --to collaborative --key-dim 16,16 --out " + dir.str("c"),
                "--key-dim gives 16 twice");
  check_refused("prune --model " + kInduction + " --data " + dir.str("enc/config.json") + " --lambda 0.1,0.1 --out " +
                    dir.str("p"),
                "--lambda gives λ 0.1 twice");
  check_refused("run --model " + kInduction + " --ids 1,2 --decoder-ids 3 --out " + dir.str("x.st"),
                "--decoder-ids is for encoder-decoder models");
  check_refused("predict --model " + kInduction + " --text 'The old' --target x", "--target is an encoder-decoder's");
  check_refused("info --system --model " + kInduction, "--system describes this machine; --model");
  check_refused("analyze --model " + kInduction + " --probe induction --probe-length 1 --out " + dir.str("r"), "too short");
  check_refused("evaluate --model " + kInduction + " --data " + kMha + " --seq-len 300",
                "--seq-len 300 is more than the 256 positions");
  // An option of a mode not asked for, an empty one, and one head gated twice.
  check_refused("run --model " + kInduction + " --ids 1,2 --dla-position 1 --out " + dir.str("x.st"), "--dla");
  check_refused("run --model " + kInduction + " --ids 1,2 --dla '' --out " + dir.str("x.st"), "--dla is empty");
  check_refused("run --model " + kInduction + " --ids 1,2 --gate 0.0=0 --gate 0.0=1 --out " + dir.str("x.st"),
                "--gate '0.0=0' and --gate '0.0=1' set the same head");
  CHECK(!fs::exists(dir.str("x.st")));
  REQUIRE(run_command(cli("analyze --help"), out) == 0);
  CHECK_THAT(out, Catch::Contains("0 = all") && Catch::Contains("0 = as many as fit"));
  // evaluate says what it could not measure, not what it could not train.
  write_text(dir.str("empty.txt"), "");
  CHECK(run_command(cli("evaluate --model " + kInduction + " --data " + dir.str("empty.txt")), out) == 1);
  CHECK_THAT(out, Catch::Contains("empty.txt: no 128-token sequence") && !Catch::Contains("train"));
}

TEST_CASE("token counts name a file read twice once, and info flags a tokenizer larger than the model", "[cli][checks]") {
  TempDir dir("cli-counts");
  write_text(dir.str("a.txt"), "the cat sat\n");
  const auto tokenizer = headlab::core::Tokenizer::load(kTokenizer);
  const auto counts = headlab::core::count_tokens_in_files(*tokenizer, {dir.str("a.txt"), dir.str("a.txt")});
  CHECK(counts.files == std::vector<std::string>{"a.txt"});
  CHECK(counts.total == 2 * headlab::core::count_tokens_in_files(*tokenizer, {dir.str("a.txt")}).total);
  // An older token_counts.json naming a file twice reads with each name once.
  auto j = nlohmann::json::parse(headlab::core::read_file_bytes(source("assets/models/default/token_counts.json")));
  j["files"] = {"a.txt", "b.txt", "a.txt"};
  write_text(dir.str("counts.json"), j.dump());
  CHECK(headlab::core::load_token_counts(dir.str("counts.json")).files == std::vector<std::string>{"a.txt", "b.txt"});

  // mha.json's 1,000 tokens under the default model's 10,000-token tokenizer.
  std::string out;
  REQUIRE(run_command(cli("init --config " + kMha + " --out " + dir.str("m")), out) == 0);
  fs::copy_file(kTokenizer, dir.str("m/tokenizer.json"));
  REQUIRE(run_command(cli("info --model " + dir.str("m")), out) == 0);
  CHECK_THAT(out, Catch::Contains("10000 tokens — more than the model's 1000"));
  // A word the tokenizer spells with one id beyond the model's vocabulary.
  std::string word;
  for (int64_t id = 5000; id < tokenizer->vocab_size() && word.empty(); ++id) {
    const std::string token = tokenizer->id_to_token(id);
    if (token.size() > 3 && std::all_of(token.begin(), token.end(), [](char ch) { return ch >= 'a' && ch <= 'z'; }) &&
        tokenizer->encode(token, false).ids == std::vector<int64_t>{id})
      word = token;
  }
  REQUIRE(!word.empty());
  CHECK(run_command(cli("run --model " + dir.str("m") + " --text " + word + " --out " + dir.str("x.st")), out) == 1);
  CHECK_THAT(out, Catch::Contains("('" + word + "') the id ") && Catch::Contains("outside the model's vocabulary of 1000") &&
                     Catch::Contains("tokenizer (10000 tokens) does not match"));
}

TEST_CASE("patch names an empty clean or corrupted text", "[cli][checks][patch]") {
  TempDir dir("cli-patch-empty");
  const std::string patch = "patch --model " + kInduction + " --answer-id 1 --wrong-id 2 --out " + dir.str("p");
  check_refused(patch + " --clean '' --corrupt 'the cat'", "--clean is missing or empty");
  check_refused(patch + " --clean 'the cat' --corrupt ''", "--corrupt is missing or empty");
}

TEST_CASE("patch refuses by name the tokens its metric does not read, and those it misses", "[cli][checks][patch]") {
  TempDir dir("cli-patch-metric");
  const std::string patch = "patch --model " + kInduction + " --clean-ids 5,6,7 --corrupt-ids 5,8,7 --out " + dir.str("p");
  check_refused(patch, "needs the clean answer and the corrupted one: give --answer and --wrong");
  check_refused(patch + " --answer-id 1", "give --answer and --wrong");
  check_refused(patch + " --metric prob", "--metric prob needs the clean answer: give --answer");
  check_refused(patch + " --metric prob --answer-id 1 --wrong-id 2", "--metric prob reads the answer alone");
  check_refused(patch + " --metric kl --answer-id 1", "--metric kl compares whole distributions");
  check_refused(patch + " --metric kl --path-site v", "--path-site is the receivers' site in path patching");
  std::string out;
  CHECK(run_command(cli(patch + " --answer 5 --answer-id 5 --wrong-id 2"), out) != 0);
  CHECK_THAT(out, Catch::Contains("--answer") && Catch::Contains("excludes"));
  CHECK(!fs::exists(dir.str("p")));
}
