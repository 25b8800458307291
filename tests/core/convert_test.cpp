// Conversion to grouped-query attention (Ainslie et al. 2023): each group's key and value heads
// mean-pooled. Checked against the definition written out head by head, the identity (as many groups
// as kv heads), exactness when a group's heads are already equal, and the command line.
// Conversion to collaborative attention (Cordonnier et al. 2020, §4) by a CP decomposition fitted
// with ALS: checked on exactly low-rank tensors built term by term, and the exact conversion at
// D̃_k = h·d_k (query biases folded into the content bias).
#include "test_common.h"

#include "core/config.h"
#include "core/model/convert.h"
#include "core/memory_budget.h"
#include "core/model/model.h"
#include "core/token_counts.h"
#include "core/model/run.h"

#include <nlohmann/json.hpp>

#include <fstream>

using namespace headlab;

namespace {

core::ModelConfig shipped(const std::string& name) {
  std::ifstream in(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/" + name + ".json");
  return core::model_config_from_json(nlohmann::json::parse(in));
}

// Random query/key biases (a fresh model's are zero), so the content-bias folding is exercised.
void randomize_biases(core::Model& model, uint64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& item : model.module->named_parameters())
    if (item.key().find(".attn.") != std::string::npos && item.key().size() > 5 &&
        item.key().compare(item.key().size() - 5, 5, ".bias") == 0)
      item.value().normal_(0, 0.5);
}

torch::Tensor logits_of(core::Model& model) {
  core::RunRequest r;
  r.ids = {3, 17, 5, 99, 42, 7, 8};
  r.capture = core::kCaptureNone;
  return core::run(model, r)->logits;
}

}  // namespace

TEST_CASE("GQA conversion mean-pools each group's key and value heads", "[convert]") {
  auto mha = core::make_random_model(shipped("mha"), 3);  // 4 heads of 16
  auto gqa = core::convert_to_gqa(*mha, 2);
  CHECK(gqa->config.encoder->attention.kv_heads == 2);
  CHECK(gqa->config.encoder->attention.heads == 4);
  const auto before = mha->module->named_parameters();
  const auto after = gqa->module->named_parameters();
  for (const char* name : {"encoder.0.attn.k.weight", "encoder.1.attn.v.weight", "encoder.0.attn.k.bias"}) {
    INFO(name);
    const auto w = before[name];
    const auto p = after[name];
    REQUIRE(p.size(0) == 2 * 16);
    // kv head g, row j: (W[(2g)·16 + j] + W[(2g + 1)·16 + j]) / 2.
    for (int g = 0; g < 2; ++g)
      for (int j = 0; j < 16; ++j)
        CHECK(test::max_abs_diff(p[g * 16 + j], (w[(2 * g) * 16 + j] + w[(2 * g + 1) * 16 + j]) / 2) <= 1e-7);
  }
  // Everything else is copied.
  CHECK(torch::equal(before["encoder.0.attn.q.weight"], after["encoder.0.attn.q.weight"]));
  CHECK(torch::equal(before["tokens.weight"], after["tokens.weight"]));
  CHECK(test::max_abs_diff(logits_of(*mha), logits_of(*gqa)) > 1e-4);  // pooling changes the model
}

TEST_CASE("GQA conversion is exact where nothing is pooled or the pooled heads are equal", "[convert]") {
  auto mha = core::make_random_model(shipped("mha"), 4);
  CHECK(test::max_abs_diff(logits_of(*mha), logits_of(*core::convert_to_gqa(*mha, 4))) <= 1e-6);  // groups = kv heads

  // Give heads 2i and 2i+1 the same keys and values: pooling them loses nothing.
  {
    torch::NoGradGuard no_grad;
    for (auto& item : mha->module->named_parameters()) {
      const std::string& name = item.key();
      if (name.find(".attn.k.") == std::string::npos && name.find(".attn.v.") == std::string::npos) continue;
      auto& w = item.value();
      for (int g = 0; g < 2; ++g) w.narrow(0, (2 * g + 1) * 16, 16).copy_(w.narrow(0, 2 * g * 16, 16));
    }
  }
  CHECK(test::max_abs_diff(logits_of(*mha), logits_of(*core::convert_to_gqa(*mha, 2))) <= 1e-5);
  auto mqa = core::convert_to_gqa(*mha, 1);
  CHECK(mqa->config.encoder->attention.kv_heads == 1);
  CHECK(logits_of(*mqa).sizes() == logits_of(*mha).sizes());

  CHECK_THROWS_WITH(core::convert_to_gqa(*mha, 3), Catch::Contains("must divide the 4"));
  auto talking = core::make_random_model(shipped("talking-heads"), 1);
  CHECK_THROWS_WITH(core::convert_to_gqa(*talking, 1), Catch::Contains("talking heads"));
}

TEST_CASE("GQA conversion pools a key norm over the whole projection with the keys", "[convert]") {
  // OLMo 2's k_norm: one RMSNorm over every key head's coordinates [kv_heads · d_k], weights per coordinate.
  auto config = shipped("mha");  // 4 heads of 16
  config.encoder->attention.qk_norm = true;
  config.encoder->attention.qk_norm_whole = true;
  auto mha = core::make_random_model(config, 5);
  {
    torch::NoGradGuard no_grad;
    torch::manual_seed(5);
    for (auto& item : mha->module->named_parameters())
      if (item.key().find("_norm") != std::string::npos && item.key().find(".attn.") != std::string::npos)
        item.value().uniform_(0.5, 1.5);
  }
  const auto before = mha->module->named_parameters();
  auto gqa = core::convert_to_gqa(*mha, 2);
  const auto after = gqa->module->named_parameters();
  const auto w = before["encoder.0.attn.k_norm"];  // [4·16]
  const auto p = after["encoder.0.attn.k_norm"];   // [2·16]
  REQUIRE(p.size(0) == 2 * 16);
  for (int g = 0; g < 2; ++g)
    for (int j = 0; j < 16; ++j)
      CHECK(test::max_abs_diff(p[g * 16 + j], (w[(2 * g) * 16 + j] + w[(2 * g + 1) * 16 + j]) / 2) <= 1e-7);
  CHECK(torch::equal(before["encoder.0.attn.q_norm"], after["encoder.0.attn.q_norm"]));  // queries keep their heads

  // Heads 2i and 2i+1 with the same keys, values and norm weights: the pooled keys repeat none of
  // them, the RMS over half the coordinates is the same, and the model is unchanged.
  {
    torch::NoGradGuard no_grad;
    for (auto& item : mha->module->named_parameters()) {
      const std::string& name = item.key();
      if (name.find(".attn.k.") == std::string::npos && name.find(".attn.v.") == std::string::npos &&
          name.find(".attn.k_norm") == std::string::npos)
        continue;
      auto& t = item.value();
      for (int g = 0; g < 2; ++g) t.narrow(0, (2 * g + 1) * 16, 16).copy_(t.narrow(0, 2 * g * 16, 16));
    }
  }
  CHECK(test::max_abs_diff(logits_of(*mha), logits_of(*core::convert_to_gqa(*mha, 2))) <= 1e-5);
}

TEST_CASE("headlab convert writes a GQA folder and reports the cache and the quality change", "[convert][cli]") {
  test::TempDir dir("convert_cli");
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/qwen2";
  std::string out;
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " convert --model " + model + " --to mqa --out " +
                                dir.str("mqa"),
                            out) == 0);
  INFO(out);
  const auto original = core::load_model(model);
  const auto converted = core::load_model(dir.str("mqa"));
  CHECK(converted->config.decoder->attention.kv_heads == 1);
  CHECK(out.find("KV cache: " + std::to_string(core::kv_cache_bytes_per_token(original->config)) + " → " +
                 std::to_string(core::kv_cache_bytes_per_token(converted->config))) != std::string::npos);
  CHECK(core::kv_cache_bytes_per_token(converted->config) * original->config.decoder->attention.kv_heads ==
        core::kv_cache_bytes_per_token(original->config));

  // With a tokenizer and text: the loss before and after.
  {
    std::ofstream text(dir.str("text.txt"));
    for (int i = 0; i < 60; ++i)
      text << "The cat sat on the mat because it was tired and the dog was not. "
              "A man walked into the room and sat down by the fire.\n";
  }
  const std::string shipped_model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " convert --model " + shipped_model + " --to gqa --groups 2 --out " +
                                dir.str("gqa") + " --data " + dir.str("text.txt"),
                            out) == 0);
  CHECK(out.find("loss ") != std::string::npos);
  CHECK(out.find("top-1 ") != std::string::npos);
  CHECK(core::load_model(dir.str("gqa"))->config.encoder->attention.kv_heads == 2);
  CHECK(test::run_command(std::string(HEADLAB_BINARY) + " convert --model " + shipped_model + " --to gqa --groups 3 --out " +
                              dir.str("bad"),
                          out) == 2);
  CHECK(out.find("must divide") != std::string::npos);
}

TEST_CASE("convert and init carry the tokenizer in any format with its tokenizer_config.json", "[convert][cli]") {
  // A Hugging Face folder whose tokenizer is a vocab.txt (BERT's older layout) with a
  // tokenizer_config.json naming its special tokens: the converted folder reads the same tokenizer.
  test::TempDir dir("convert_tokenizer");
  const std::string source = dir.str("source");
  std::filesystem::create_directories(source);
  const std::string fixture = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/qwen2";
  for (const auto& entry : std::filesystem::directory_iterator(fixture))  // config.json and the shards
    std::filesystem::copy_file(entry.path(), source + "/" + entry.path().filename().string());
  {
    std::ofstream vocab(source + "/vocab.txt");
    for (const char* t : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<eot>", "the", "cat", "sat"}) vocab << t << "\n";
    std::ofstream(source + "/tokenizer_config.json") << R"({"eos_token": "<eot>"})";
  }
  const auto original = core::load_model(source);
  REQUIRE(original->tokenizer);
  REQUIRE(original->tokenizer->eos_id() == 5);
  std::string out;
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " convert --model " + source + " --to mqa --out " +
                                dir.str("mqa"),
                            out) == 0);
  INFO(out);
  const auto converted = core::load_model(dir.str("mqa"));
  REQUIRE(converted->tokenizer);
  CHECK(converted->tokenizer->encode("the cat sat", true).ids == original->tokenizer->encode("the cat sat", true).ids);
  CHECK(converted->tokenizer->eos_id() == 5);  // from tokenizer_config.json, not a conventional name
  // init --tokenizer takes the same: a vocab.txt is written as vocab.txt, never as tokenizer.json.
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " init --config " + HEADLAB_SOURCE_DIR +
                                "/assets/configs/mha.json --tokenizer " + source + "/vocab.txt --out " + dir.str("init"),
                            out) == 0);
  const auto made = core::load_model(dir.str("init"));
  REQUIRE(made->tokenizer);
  CHECK(made->tokenizer->eos_id() == 5);
  CHECK_FALSE(std::filesystem::exists(dir.str("init/tokenizer.json")));
}

TEST_CASE("convert carries the files keyed by the tokenizer's ids, and a model replaced takes its own along", "[convert][cli]") {
  test::TempDir dir("convert_companions");
  const std::string source = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  const std::string bin = HEADLAB_BINARY;
  std::string out;
  // The rare-word ranks come along, so the converted model's roles are measured on the same ranks.
  REQUIRE(test::run_command(bin + " convert --model " + source + " --to mqa --out " + dir.str("mqa"), out) == 0);
  REQUIRE(std::filesystem::exists(dir.str("mqa/token_counts.json")));
  CHECK(core::load_token_counts(dir.str("mqa/token_counts.json")).total ==
        core::load_token_counts(source + "/token_counts.json").total);
  // init --force over it: the new model (no tokenizer given) keeps none of the old one's files.
  std::ofstream(dir.str("mqa/generation_config.json")) << R"({"eos_token_id": 3})";
  REQUIRE(test::run_command(bin + " init --config " + HEADLAB_SOURCE_DIR + "/assets/configs/gqa.json --out " +
                                dir.str("mqa") + " --force",
                            out) == 0);
  for (const char* gone : {"tokenizer.json", "token_counts.json", "generation_config.json", "tokenizer_config.json"})
    CHECK_FALSE(std::filesystem::exists(dir.str("mqa") + "/" + gone));
  CHECK_FALSE(core::load_model(dir.str("mqa"))->tokenizer);
  // Converting in place with --force keeps the folder's own.
  REQUIRE(test::run_command(bin + " convert --model " + source + " --to gqa --groups 4 --out " + dir.str("again"), out) == 0);
  REQUIRE(test::run_command(bin + " convert --model " + dir.str("again") + " --to mqa --out " + dir.str("again") +
                                " --force",
                            out) == 0);
  CHECK(std::filesystem::exists(dir.str("again/tokenizer.json")));
  CHECK(std::filesystem::exists(dir.str("again/token_counts.json")));
}

TEST_CASE("CP-ALS recovers an exactly low-rank tensor", "[convert]") {
  torch::manual_seed(7);
  const int64_t K = 4, I = 7, J = 6, R = 3;
  const auto a = torch::randn({I, R}, torch::kFloat64), b = torch::randn({J, R}, torch::kFloat64),
             c = torch::randn({K, R}, torch::kFloat64);
  // T[k][i][j] = Σ_r a[i][r] b[j][r] c[k][r], written out term by term.
  auto t = torch::zeros({K, I, J}, torch::kFloat64);
  auto ta = t.accessor<double, 3>();
  auto aa = a.accessor<double, 2>(), ba = b.accessor<double, 2>(), ca = c.accessor<double, 2>();
  for (int64_t k = 0; k < K; ++k)
    for (int64_t i = 0; i < I; ++i)
      for (int64_t j = 0; j < J; ++j)
        for (int64_t r = 0; r < R; ++r) ta[k][i][j] += aa[i][r] * ba[j][r] * ca[k][r];
  CHECK(test::max_abs_diff(core::cp_reconstruct(a, b, c), t) < 1e-12);

  std::vector<double> errors;
  core::CpOptions o;
  o.max_iterations = 2000;
  o.tolerance = 0;
  o.on_iteration = [&](int, double e) {
    errors.push_back(e);
    return e > 1e-10;
  };
  const auto fit = core::cp_als(t, R, o);
  CHECK(fit.relative_error < 1e-9);
  CHECK(test::max_abs_diff(core::cp_reconstruct(fit.a, fit.b, fit.c), t) < 1e-8);
  // ALS never raises the error: each step solves its least-squares problem exactly.
  for (size_t i = 1; i < errors.size(); ++i) CHECK(errors[i] <= errors[i - 1] + 1e-12);

  // Below the rank the fit is approximate, and a larger rank fits at least as well.
  const double r1 = core::cp_als(t, 1).relative_error, r2 = core::cp_als(t, 2).relative_error;
  CHECK(r1 > 0.01);
  CHECK(r2 <= r1 + 1e-9);
  CHECK(r2 > 1e-6);
  CHECK_THROWS_WITH(core::cp_als(torch::zeros({2, 2}), 1), Catch::Contains("3-way"));
}

TEST_CASE("collaborative conversion at D̃k = h·dk is exact, smaller D̃k is a fit", "[convert]") {
  for (const int kv : {4, 2}) {  // MHA, and GQA's shared key heads
    INFO("kv heads " << kv);
    auto config = shipped("mha");  // 4 heads of 16, learned positions, biases
    config.encoder->attention.kv_heads = kv;
    auto mha = core::make_random_model(config, 5);
    randomize_biases(*mha, 9);
    const auto exact = core::convert_to_collaborative(*mha, 64);
    const auto& a = exact.model->config.encoder->attention;
    REQUIRE(a.collaborative);
    CHECK(a.collaborative->shared_key_size == 64);
    CHECK(a.logit_scale() == Approx(0.25));  // 1/sqrt(16), as the model had
    REQUIRE(exact.layers.size() == 2);
    for (const auto& l : exact.layers) CHECK(l.relative_error < 1e-9);
    CHECK(test::max_abs_diff(logits_of(*mha), logits_of(*exact.model)) <= 1e-4);
    // The maps too: every head's attention the same.
    core::RunRequest r;
    r.ids = {3, 17, 5, 99, 42, 7, 8};
    r.capture = core::kCaptureWeights;
    const auto before = core::run(*mha, r), after = core::run(*exact.model, r);
    for (int l = 0; l < 2; ++l)
      CHECK(test::max_abs_diff(before->encoder.layers.at(l).self.weights, after->encoder.layers.at(l).self.weights) <= 1e-5);

    // Half the key size: an approximation whose error the report gives.
    const auto half = core::convert_to_collaborative(*mha, 32);
    for (const auto& l : half.layers) {
      CHECK(l.relative_error > 1e-3);
      CHECK(l.relative_error < 1.0);
    }
    // The maps move (a random model's logits hardly depend on its attention).
    const auto approx = core::run(*half.model, r);
    CHECK(test::max_abs_diff(before->encoder.layers.at(0).self.weights, approx->encoder.layers.at(0).self.weights) > 1e-4);
  }
  auto rope = shipped("mha");
  rope.positions = core::PositionKind::Rope;
  CHECK_THROWS_WITH(core::convert_to_collaborative(*core::make_random_model(rope, 1), 64), Catch::Contains("rotary"));
  auto talking = core::make_random_model(shipped("talking-heads"), 1);
  if (talking->config.positions != core::PositionKind::Rope && talking->config.positions != core::PositionKind::RopeLearned)
    CHECK_THROWS_WITH(core::convert_to_collaborative(*talking, 64), Catch::Contains("talking heads"));
  // Sweeps that cannot fit are refused before any work, with the size (3 × h·D² float64 a layer).
  auto small = core::make_random_model(shipped("mha"), 1);
  const int64_t needed = 3 * int64_t(small->config.encoder->attention.heads) * small->config.hidden_size *
                         small->config.hidden_size * 8;
  core::set_memory_limit(needed - 1);
  CHECK_THROWS_AS(core::convert_to_collaborative(*small, 64), core::MemoryLimitError);
  CHECK_THROWS_WITH(core::convert_to_collaborative(*small, 64), Catch::Contains("CP-ALS sweeps"));
  core::set_memory_limit(needed);
  CHECK_NOTHROW(core::convert_to_collaborative(*small, 64));
  core::set_memory_limit(0);  // the default again
}

TEST_CASE("headlab convert --to collaborative writes one folder per key size with its reconstruction error",
          "[convert][cli]") {
  test::TempDir dir("convert_collab_cli");
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/bert";  // 4 heads × 8 = 32
  std::string out;
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " convert --model " + model +
                                " --to collaborative --key-dim 8,32 --out " + dir.str("c"),
                            out) == 0);
  INFO(out);
  CHECK(out.find("D̃k = 8 (25% of h·d_k)") != std::string::npos);
  CHECK(out.find("D̃k = 32 (100% of h·d_k)") != std::string::npos);
  CHECK(out.find(" E1 ") != std::string::npos);
  const auto original = core::load_model(model);
  const auto small = core::load_model(dir.str("c/key-dim-8"));
  const auto full = core::load_model(dir.str("c/key-dim-32"));
  REQUIRE(small->config.encoder->attention.collaborative);
  CHECK(small->config.encoder->attention.collaborative->shared_key_size == 8);
  // The exact size reproduces the model through the saved folder; a quarter of it does not.
  CHECK(test::max_abs_diff(logits_of(*original), logits_of(*full)) <= 1e-4);
  CHECK(test::max_abs_diff(logits_of(*original), logits_of(*small)) > 1e-4);

  const std::string shipped_model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  CHECK(test::run_command(std::string(HEADLAB_BINARY) + " convert --model " + shipped_model +
                              " --to collaborative --key-dim 64 --out " + dir.str("rope"),
                          out) == 2);
  CHECK(out.find("rotary") != std::string::npos);
  CHECK(test::run_command(std::string(HEADLAB_BINARY) + " convert --model " + model + " --to collaborative --out " +
                              dir.str("none"),
                          out) == 2);
  CHECK(out.find("--key-dim") != std::string::npos);
  // Past h·d_k a shared key only pads: refused, naming the bound, and nothing is written.
  CHECK(test::run_command(std::string(HEADLAB_BINARY) + " convert --model " + model +
                              " --to collaborative --key-dim 8,40 --out " + dir.str("big"),
                          out) == 2);
  CHECK(out.find("--key-dim 40 is more than h·d_k = 32") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.str("big")));
}
