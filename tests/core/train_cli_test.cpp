// End to end through the binary: train-tokenizer → train → predict; and the shipped models.
#include "test_common.h"

#include "core/atomic_file.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/token_counts.h"
#include "core/tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

using namespace headlab;

namespace {

std::string write_corpus(const test::TempDir& dir) {
  const std::string path = dir.str("corpus.txt");
  std::ofstream out(path);
  const char* lines[] = {"the cat sat on the mat .", "the dog sat on the log .", "a cat and a dog met on the mat .",
                         "the bird sang in the tree .", "my cat likes the warm mat ."};
  for (int i = 0; i < 300; ++i) out << lines[i % 5] << "\n";
  return path;
}

}  // namespace

TEST_CASE("headlab train-tokenizer, train and predict work together", "[train][cli]") {
  test::TempDir dir("train_cli");
  const std::string corpus = write_corpus(dir);
  const std::string bin = HEADLAB_BINARY;
  std::string out;
  REQUIRE(test::run_command(bin + " train-tokenizer --data " + corpus + " --vocab-size 300 --out " +
                                dir.str("tokenizer.json"),
                            out) == 0);
  CHECK(out.find("wordpiece") != std::string::npos);
  // The tokenizer_config.json beside the tokenizer decides its special tokens: it goes into the folder.
  const std::string tokenizer_config = R"({"mask_token": "[MASK]", "pad_token": null, "model_max_length": 64})";
  core::write_file_atomic(dir.str("tokenizer_config.json"), tokenizer_config);
  const std::string model = dir.str("model");
  const std::string train = bin + " train --config " + HEADLAB_SOURCE_DIR + "/assets/configs/mha.json --data " + corpus +
                            " --tokenizer " + dir.str("tokenizer.json") + " --out " + model +
                            " --seq-len 16 --batch-tokens 256 --eval-every 20 --held-out 0.1 --threads 1 --lr 3e-3";
  REQUIRE(test::run_command(train + " --steps 40", out) == 0);
  INFO(out);
  CHECK(out.find("trained at step 40; held-out (step 40)") != std::string::npos);
  auto loaded = core::load_model(model);
  REQUIRE(loaded->tokenizer);
  CHECK(loaded->config.vocab_size == loaded->tokenizer->vocab_size());
  REQUIRE(std::filesystem::exists(model + "/tokenizer_config.json"));
  CHECK(core::read_file_bytes(model + "/tokenizer_config.json") == tokenizer_config);
  CHECK(!loaded->tokenizer->pad_id());
  CHECK(std::filesystem::exists(model + "/train_log.jsonl"));
  // The folder carries its training text's token counts (the rare-word measure's frequency corpus):
  // 300 lines of 7–10 tokens; "the" is the most frequent word.
  const auto counts = core::load_token_counts(model + "/token_counts.json");
  CHECK(counts.total == core::count_tokens_in_files(*loaded->tokenizer, {corpus}).total);
  CHECK(counts.total > 2000);
  const auto the = *loaded->tokenizer->token_to_id("the");
  CHECK(*std::max_element(counts.counts.begin(), counts.counts.end()) == counts.counts[the]);
  // Resume to a longer schedule is refused only for data-shaping options; the same command resumes.
  REQUIRE(test::run_command(train + " --steps 40 --resume", out) == 0);
  CHECK(out.find("trained at step 40; held-out (step 40)") != std::string::npos);
  // The folder holds a model: training into it again needs --resume or --force.
  CHECK(test::run_command(train + " --steps 40", out) == 2);
  CHECK_THAT(out, Catch::Contains(model) && Catch::Contains("--force"));
  CHECK(test::run_command(bin + " train-tokenizer --data " + corpus + " --vocab-size 300 --out " + dir.str("tokenizer.json"),
                          out) == 2);
  CHECK_THAT(out, Catch::Contains("tokenizer.json exists; pass --force"));
  // A file with no text is named, and no tokenizer is written.
  core::write_file_atomic(dir.str("blank.txt"), " \n\n\t\n");
  CHECK(test::run_command(bin + " train-tokenizer --data " + corpus + " " + dir.str("blank.txt") +
                              " --vocab-size 300 --out " + dir.str("blank.json"),
                          out) == 1);
  CHECK_THAT(out, Catch::Contains(dir.str("blank.txt") + ": no text to learn a vocabulary from"));
  CHECK(!std::filesystem::exists(dir.str("blank.json")));
  // A training log damaged in the middle stops a resume with the file and line named; the log is left as it was.
  const std::string log = model + "/train_log.jsonl";
  const std::string good_log = core::read_file_bytes(log);
  core::write_file_atomic(log, "{\"step\": 0}\nnot json\n" + good_log);
  CHECK(test::run_command(train + " --steps 40 --resume", out) == 1);
  CHECK_THAT(out, Catch::Contains(log + ": line 2 is not JSON"));
  CHECK(core::read_file_bytes(log) == "{\"step\": 0}\nnot json\n" + good_log);
  // A last line cut short by a crash is dropped on resume.
  core::write_file_atomic(log, good_log + "{\"step\": 4");
  REQUIRE(test::run_command(train + " --steps 40 --resume", out) == 0);
  CHECK(core::read_file_bytes(log) == good_log);
  CHECK_THAT(out, !Catch::Contains("another schedule"));
  // A resume with another learning rate continues, and says what changed.
  std::string other_lr = train;
  other_lr.replace(other_lr.find("--lr 3e-3"), 9, "--lr 5e-3");
  REQUIRE(test::run_command(other_lr + " --steps 40 --resume", out) == 0);
  CHECK_THAT(out, Catch::Contains("resuming with another schedule than the checkpoint's run: lr 0.003 → 0.005"));

  // `evaluate --held-out` measures the examples training held out, masked as the trainer masked them:
  // with the trainer's seed (0) and batch size it gives the log's last held-out loss and top-1.
  {
    nlohmann::json last;
    for (size_t begin = 0; begin < good_log.size();) {
      const size_t end = good_log.find('\n', begin);
      const std::string line = good_log.substr(begin, end - begin);
      if (!line.empty()) last = nlohmann::json::parse(line);
      begin = end == std::string::npos ? good_log.size() : end + 1;
    }
    REQUIRE(last["step"] == 40);
    REQUIRE(test::run_command(bin + " evaluate --model " + model + " --data " + corpus +
                                  " --held-out 0.1 --seq-len 16 --batch-tokens 256 --seed 0 --threads 1 --json",
                              out) == 0);
    INFO(out);
    const auto result = nlohmann::json::parse(out.substr(out.find('[')));
    REQUIRE(result.size() == 1);
    CHECK(result[0]["unknown"] == 0);
    CHECK(result[0]["loss"].get<double>() == Approx(last["eval_loss"].get<double>()).epsilon(1e-5));
    CHECK(result[0]["top1"].get<double>() == Approx(last["eval_accuracy"].get<double>()).epsilon(1e-9));
    // Text with characters the tokenizer never saw: its words are [UNK], counted among the tokens
    // (7 words of 8 tokens a line, two of them unknown).
    const std::string odd = dir.str("odd.txt");
    {
      std::ofstream o(odd);
      for (int i = 0; i < 40; ++i) o << "the cat \xe6\x9d\xb1 sat on \xe4\xba\xac mat .\n";
    }
    REQUIRE(test::run_command(bin + " evaluate --model " + model + " --data " + odd + " --seq-len 16 --json", out) == 0);
    const auto unk = nlohmann::json::parse(out.substr(out.find('[')));
    CHECK(unk[0]["unknown"].get<int64_t>() > 0);
    CHECK(unk[0]["unknown_share"].get<double>() == Approx(0.25).margin(0.03));
    CHECK(test::run_command(bin + " evaluate --model " + model + " --data /nonexistent.txt", out) != 0);
    // A file shorter than one sequence beside one that measures: said to measure nothing, the rest
    // measured; alone, the reason why.
    const std::string tiny = dir.str("tiny.txt");
    std::ofstream(tiny) << "the cat\n";
    REQUIRE(test::run_command(bin + " evaluate --model " + model + " --data " + tiny + " " + odd + " --seq-len 16", out) == 0);
    CHECK_THAT(out, Catch::Contains("no target measured") && Catch::Contains("loss"));
    CHECK(test::run_command(bin + " evaluate --model " + model + " --data " + tiny + " --seq-len 16", out) != 0);
    CHECK_THAT(out, Catch::Contains("no 16-token sequence"));
  }

  REQUIRE(test::run_command(bin + " predict --model " + model + " --text \"the [MASK] sat on the mat .\" --top-k 3", out) == 0);
  CHECK(out.find("[MASK] #1") != std::string::npos);
  CHECK(out.find("%") != std::string::npos);
  CHECK(test::run_command(bin + " predict --model " + model + " --text \"no mask here\"", out) == 2);
  CHECK(test::run_command(bin + " train --config x.json --data " + corpus + " --out " + model, out) != 0);
  CHECK(test::run_command(bin + " train --config " + std::string(HEADLAB_SOURCE_DIR) +
                              "/assets/configs/mha.json --data " + corpus + " --out " + dir.str("m2") + " --steps 2",
                          out) == 2);
  CHECK(out.find("--tokenizer") != std::string::npos);
}

TEST_CASE("the shipped models load and predict", "[train][assets]") {
  const std::filesystem::path models = std::filesystem::path(HEADLAB_SOURCE_DIR) / "assets" / "models";
  int found = 0;
  if (std::filesystem::exists(models))
    for (const auto& entry : std::filesystem::directory_iterator(models)) {
      if (!std::filesystem::exists(entry.path() / "config.json")) continue;
      ++found;
      INFO(entry.path());
      auto model = core::load_model(entry.path().string());
      REQUIRE(model->tokenizer);
      CHECK(model->config.vocab_size == model->tokenizer->vocab_size());
      if (model->config.kind != core::StackKind::Encoder) continue;
      core::RunRequest request;
      request.ids = model->tokenizer->encode("The [MASK] sat on the mat.", true).ids;
      request.capture = core::kCaptureNone;
      auto trace = core::run(*model, request);
      const auto mask = *model->tokenizer->mask_id();
      int64_t pos = -1;
      for (size_t i = 0; i < request.ids.size(); ++i)
        if (request.ids[i] == mask) pos = static_cast<int64_t>(i);
      REQUIRE(pos >= 0);
      auto probs = torch::softmax(trace->logits[pos], -1);
      // A trained model is confident about something (≥ 1%); a random one spreads over 8k tokens
      // (its best fill gets ~0.05%).
      CHECK(probs.max().item<double>() > 0.01);
      // "the [MASK] sat": the best fills are words, not punctuation or special tokens.
      const auto best = model->tokenizer->id_to_token(probs.argmax().item<int64_t>());
      CHECK_FALSE(model->tokenizer->is_special(probs.argmax().item<int64_t>()));
      INFO("best fill: " << best);
    }
  CHECK(found > 0);  // the shipped default and its twin
}
