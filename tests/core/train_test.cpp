// Training: every example config learns, resume equals an uninterrupted run, data and masking.
#include "test_common.h"

#include "core/config.h"
#include "core/model/safetensors_torch.h"
#include "core/train/data.h"
#include "core/train/grown_vocabulary.h"
#include "core/train/trainer.h"
#include "small_models.h"
#include "synthetic_text.h"

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

using namespace headlab;
using namespace headlab::core::train;

namespace {

constexpr int64_t kVocab = test::kSyntheticVocab;
using test::synthetic_documents;
using test::synthetic_specials;

Dataset synthetic_dataset(Objective objective, int64_t seq_len) {
  const auto specials = synthetic_specials();
  if (objective != Objective::Seq2Seq) return make_lm_dataset(synthetic_documents(4, 3000, 7), seq_len, objective, specials, 0.05);
  // Copy task with a twist: the target is the source shifted by one symbol.
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs;
  auto docs = synthetic_documents(1, 20000, 11);
  for (size_t start = 0; start + 12 <= docs[0].size(); start += 12) {
    std::vector<int64_t> src(docs[0].begin() + start, docs[0].begin() + start + 8 + start % 5), tgt;
    for (int64_t t : src) tgt.push_back(4 + (t - 4 + 1) % 44);
    pairs.emplace_back(src, tgt);
  }
  return make_seq2seq_dataset(pairs, seq_len, 0.05);
}

core::ModelConfig example_config(const std::string& name) {
  auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/" + name + ".json");
  config.vocab_size = static_cast<int>(kVocab);
  return config;
}


std::vector<nlohmann::json> read_log(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// Two runs' training losses agree at every step 1..steps.
void check_same_losses(const std::map<int64_t, double>& expected, const std::map<int64_t, double>& actual, int64_t steps) {
  REQUIRE(expected.size() == size_t(steps));
  REQUIRE(actual.size() == size_t(steps));
  for (int64_t s = 1; s <= steps; ++s) {
    INFO("step " << s);
    CHECK(actual.at(s) == Approx(expected.at(s)).margin(1e-6));
  }
}

}  // namespace

TEST_CASE("training lowers the held-out loss for every example config", "[train]") {
  const std::vector<std::string> names = {"mha", "mqa", "gqa", "key-size", "talking-heads", "collaborative", "additive",
                                          "sliding-window", "dilated", "global", "encoder-decoder", "relative-position", "latent", "disentangled"};
  for (const auto& name : names) {
    DYNAMIC_SECTION(name) {
      test::TempDir dir("train_" + name);
      auto config = example_config(name);
      const auto objective = objective_from_string(config.objective);
      auto data = synthetic_dataset(objective, 32);
      auto o = test::quick_train_options(dir.str(), objective, 100);
      auto result = train_model(config, data, synthetic_specials(), o);
      CHECK(result.finished);
      CHECK(result.step == 100);
      auto log = read_log(dir.str("train_log.jsonl"));
      REQUIRE(log.size() == 2);  // step 0 and the end
      const double before = log.front()["eval_loss"], after = log.back()["eval_loss"];
      INFO(name << ": held-out loss " << before << " -> " << after);
      CHECK(after < before - 0.15);
      CHECK(std::filesystem::exists(dir.str("model.safetensors")));
      CHECK(std::filesystem::exists(dir.str("checkpoint.pt")));
    }
  }
}

namespace {

// The engine's newer options on the shipped GQA decoder (2 layers, 8 query heads of 8 over 2 kv heads,
// 64 wide), three models that together hold them all.
std::vector<std::pair<std::string, core::ModelConfig>> newer_option_configs() {
  std::vector<std::pair<std::string, core::ModelConfig>> out;
  auto gpt_oss = example_config("gqa");
  gpt_oss.decoder->attention.sinks = true;
  gpt_oss.decoder->attention.qkv_bias = true;
  gpt_oss.ffn.kind = core::FfnKind::ClampedSwiGLU;
  gpt_oss.ffn.limit = 0.1f;  // the random start's up and gate projections reach past it
  gpt_oss.ffn.inner_size = 32;
  gpt_oss.ffn.moe = core::MoeConfig{};
  gpt_oss.ffn.moe->experts = 4;
  gpt_oss.ffn.moe->top_k = 2;
  gpt_oss.ffn.moe->router_bias = true;
  gpt_oss.rope_scaling.kind = core::RopeScalingKind::Yarn;
  gpt_oss.rope_scaling.factor = 4;
  gpt_oss.rope_scaling.original_max_positions = 16;
  gpt_oss.rope_scaling.truncate = false;
  gpt_oss.rope_scaling.attention_factor = 1.1;
  gpt_oss.rope_dim = 4;  // rotate-half over the first 4 of 8 dims
  out.emplace_back("sinks, clamped-GLU experts, YaRN on half of each head", gpt_oss);

  auto deepseek = example_config("gqa");
  deepseek.ffn.inner_size = 32;
  deepseek.ffn.moe = test::deepseek_v3_router(32, 64);
  deepseek.rope_scaling.kind = core::RopeScalingKind::Llama3;
  deepseek.rope_scaling.factor = 8;
  deepseek.rope_scaling.original_max_positions = 16;
  deepseek.decoder->nope_layers = {1};
  out.emplace_back("DeepSeek-V3's grouped sigmoid router, llama3 RoPE, a NoPE layer", deepseek);

  auto olmo2 = example_config("gqa");
  olmo2.sublayer_input_norm = false;
  olmo2.sublayer_output_norm = true;
  olmo2.decoder->attention.qk_norm = true;
  olmo2.decoder->attention.qk_norm_whole = true;
  olmo2.decoder->attention.qkv_clip = 0.2f;  // the random start's projections reach past it
  out.emplace_back("OLMo 2's norms, whole-projection q/k norms, qkv clip", olmo2);
  return out;
}

}  // namespace

TEST_CASE("training lowers the held-out loss with sinks, experts, scaled and partial RoPE, OLMo's norms and clip",
          "[train]") {
  for (const auto& [name, config] : newer_option_configs()) {
    DYNAMIC_SECTION(name) {
      test::TempDir dir("train-newer");
      auto data = synthetic_dataset(Objective::Causal, 32);
      auto result = train_model(config, data, synthetic_specials(), test::quick_train_options(dir.str(), Objective::Causal, 60));
      CHECK(result.finished);
      auto log = read_log(dir.str("train_log.jsonl"));
      REQUIRE(log.size() == 2);  // step 0 and the end
      const double before = log.front()["eval_loss"], after = log.back()["eval_loss"];
      INFO(name << ": held-out loss " << before << " -> " << after);
      CHECK(after < before - 0.15);
    }
  }
}

TEST_CASE("resume continues exactly where an uninterrupted run would be", "[train]") {
  for (const std::string name : {"mha", "talking-heads", "encoder-decoder"}) {
    DYNAMIC_SECTION(name) {
      auto config = example_config(name);
      const auto objective = objective_from_string(config.objective);
      auto data = synthetic_dataset(objective, 32);
      std::map<int64_t, double> full, resumed;

      test::TempDir a("resume_full");
      auto o = test::quick_train_options(a.str(), objective, 24);
      o.eval_every = 8;
      o.on_step = [&](int64_t step, double loss) { return full[step] = loss, true; };
      train_model(config, data, synthetic_specials(), o);

      test::TempDir b("resume_parts");
      o.out = b.str();
      o.on_step = [&](int64_t step, double loss) {
        resumed[step] = loss;
        return step < 11;  // "Ctrl-C" after step 11, mid-way between evaluations
      };
      auto first = train_model(config, data, synthetic_specials(), o);
      CHECK(first.interrupted);
      CHECK(first.step == 11);
      CHECK(first.evaluated);
      CHECK(first.last_eval_step == 8);
      // Resumed and stopped again before it evaluates: it reports the log's last evaluation, not a
      // loss of 0 it never measured.
      o.resume = true;
      o.on_step = [&](int64_t step, double loss) {
        resumed[step] = loss;
        return step < 13;
      };
      auto partial = train_model(config, data, synthetic_specials(), o);
      CHECK(partial.interrupted);
      CHECK(partial.step == 13);
      CHECK(partial.evaluated);
      CHECK(partial.last_eval_step == 8);
      CHECK(partial.last_eval.loss > 0);
      CHECK(partial.last_eval.loss == Approx(first.last_eval.loss).margin(1e-9));
      CHECK(partial.last_eval.accuracy == Approx(first.last_eval.accuracy).margin(1e-12));
      o.on_step = [&](int64_t step, double loss) { return resumed[step] = loss, true; };
      auto second = train_model(config, data, synthetic_specials(), o);
      CHECK(second.finished);
      check_same_losses(full, resumed, 24);
      // The evaluations logged by both runs agree too.
      auto la = read_log(a.str("train_log.jsonl")), lb = read_log(b.str("train_log.jsonl"));
      REQUIRE(la.size() == lb.size());
      for (size_t i = 0; i < la.size(); ++i) {
        CHECK(la[i]["step"] == lb[i]["step"]);
        CHECK(double(la[i]["eval_loss"]) == Approx(double(lb[i]["eval_loss"])).margin(1e-6));
        CHECK(double(la[i]["train_loss"].is_null() ? 0.0 : double(la[i]["train_loss"])) ==
              Approx(lb[i]["train_loss"].is_null() ? 0.0 : double(lb[i]["train_loss"])).margin(1e-6));
      }
    }
  }
}

TEST_CASE("a folder mid-run carries its training counts from the first checkpoint", "[train]") {
  // The rare-word measure ranks by the folder's token_counts.json, else by the dataset itself: a
  // folder analysed before the run ends must already hold the counts the finished model carries.
  auto config = example_config("mha");
  auto data = synthetic_dataset(Objective::Mlm, 32);
  core::TokenCounts counts;
  counts.counts.assign(static_cast<size_t>(config.vocab_size), 0);
  for (int64_t id = 0; id < config.vocab_size; ++id) counts.counts[size_t(id)] = 3 * id + 1;
  counts.total = 7;
  counts.files = {"corpus.txt"};
  test::TempDir dir("mid_run_counts");
  auto o = test::quick_train_options(dir.str(), Objective::Mlm, 24);
  o.eval_every = 8;
  o.token_counts = &counts;
  const std::string path = dir.str("token_counts.json");
  bool before_checkpoint = true, after_checkpoint = false;
  o.on_step = [&](int64_t step, double) {
    if (step < 8) before_checkpoint = before_checkpoint && !std::filesystem::exists(path);
    if (step == 9) {  // the checkpoint of step 8 is written; the run stops here, as a crash would
      after_checkpoint = std::filesystem::exists(path) && core::load_token_counts(path).counts == counts.counts;
      return false;
    }
    return true;
  };
  const auto result = train_model(config, data, synthetic_specials(), o);
  CHECK(result.interrupted);
  CHECK(before_checkpoint);
  CHECK(after_checkpoint);
  const auto loaded = core::load_token_counts(path);
  CHECK(loaded.total == 7);
  CHECK(loaded.files == counts.files);
}

TEST_CASE("a run stopped mid-schedule (stop_at) and resumed equals one uninterrupted run", "[train]") {
  auto config = example_config("mha");
  auto data = synthetic_dataset(Objective::Mlm, 32);
  std::map<int64_t, double> full, parts;

  test::TempDir a("stop_full");
  auto o = test::quick_train_options(a.str(), Objective::Mlm, 20);
  o.eval_every = 5;
  o.on_step = [&](int64_t step, double loss) { return full[step] = loss, true; };
  train_model(config, data, synthetic_specials(), o);

  test::TempDir b("stop_parts");
  o.out = b.str();
  o.stop_at = 7;  // between evaluations; the learning rate still follows the 20-step schedule
  o.on_step = [&](int64_t step, double loss) { return parts[step] = loss, true; };
  auto first = train_model(config, data, synthetic_specials(), o);
  CHECK(first.stopped);
  CHECK_FALSE(first.finished);
  CHECK_FALSE(first.interrupted);
  CHECK(first.step == 7);
  CHECK(first.last_eval_step == 7);  // the stopped folder is evaluated where it stands
  CHECK(std::filesystem::exists(b.str("model.safetensors")));
  o.stop_at = 0;
  o.resume = true;
  auto second = train_model(config, data, synthetic_specials(), o);
  CHECK(second.finished);
  check_same_losses(full, parts, 20);
}

TEST_CASE("the same seed trains the same model, resume refuses other settings", "[train]") {
  auto config = example_config("mha");
  auto data = synthetic_dataset(Objective::Mlm, 32);
  test::TempDir a("seed_a"), b("seed_b");
  auto ra = train_model(config, data, synthetic_specials(), test::quick_train_options(a.str(), Objective::Mlm, 10));
  auto rb = train_model(config, data, synthetic_specials(), test::quick_train_options(b.str(), Objective::Mlm, 10));
  CHECK(ra.last_eval.loss == rb.last_eval.loss);
  auto o = test::quick_train_options(a.str(), Objective::Mlm, 20);
  o.resume = true;
  o.seq_len = 16;
  CHECK_THROWS_WITH(train_model(config, make_lm_dataset(synthetic_documents(4, 3000, 7), 16, Objective::Mlm,
                                                        synthetic_specials(), 0.05),
                                synthetic_specials(), o),
                    Catch::Contains("the checkpoint was made with"));
  auto other_masking = test::quick_train_options(a.str(), Objective::Mlm, 20);
  other_masking.resume = true;
  other_masking.masking.random = 0.0;
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), other_masking),
                    Catch::Contains("the checkpoint was made with masking = {\"mask\":0.8,\"random\":0.1,\"rate\":0.15}"));
  auto other_rarity = test::quick_train_options(a.str(), Objective::Mlm, 20);
  other_rarity.resume = true;
  other_rarity.masking.rarity = 0.5;
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), other_rarity),
                    Catch::Contains("this run has {\"mask\":0.8,\"random\":0.1,\"rarity\":0.5,\"rate\":0.15}"));
  auto other_share = test::quick_train_options(a.str(), Objective::Mlm, 20);
  other_share.resume = true;
  other_share.masking.all_mask_share = 0.25;
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), other_share),
                    Catch::Contains("this run has {\"all_mask_share\":0.25,\"mask\":0.8,"));
  auto bad = test::quick_train_options(a.str(), Objective::Mlm, 10);
  bad.out = a.str("none");
  bad.resume = true;
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), bad), Catch::Contains("no checkpoint"));
}

TEST_CASE("MLM masking: 15% of content tokens, 80/10/10, never a special token", "[train]") {
  auto specials = synthetic_specials();
  auto data = make_lm_dataset(synthetic_documents(2, 40000, 5), 64, Objective::Mlm, specials, 0.0);
  REQUIRE(data.held_out.empty());
  std::vector<const Example*> ex;
  for (const auto& e : data.train) ex.push_back(&e);
  CHECK(data.train.front().source.front() == 2);
  CHECK(data.train.front().source.back() == 3);
  auto original = torch::zeros({int64_t(ex.size()), int64_t(ex.front()->source.size())}, torch::kLong);
  for (size_t b = 0; b < ex.size(); ++b)
    original[b] = torch::tensor(ex[b]->source, torch::kLong);
  auto content = original.ge(4);
  // Counts the chosen share and how the chosen tokens were corrupted, against `expected`.
  auto check_masking = [&](const Masking& masking, const Masking& expected) {
    auto batch = make_batch(ex, Objective::Mlm, specials, 42, masking);
    auto labels = batch.labels;
    auto chosen = labels.ne(-100);
    const double share = chosen.sum().item<double>() / content.sum().item<double>();
    CHECK(share == Approx(expected.rate).margin(0.01));
    CHECK(chosen.logical_and(content.logical_not()).sum().item<int64_t>() == 0);  // specials never chosen
    CHECK(labels.masked_select(chosen).equal(original.masked_select(chosen)));
    auto inputs = batch.ids.masked_select(chosen);
    const double n = double(inputs.size(0));
    const double masked = inputs.eq(1).sum().item<double>() / n;
    const double kept = inputs.eq(original.masked_select(chosen)).sum().item<double>() / n;
    CHECK(masked == Approx(expected.mask).margin(0.02));
    // A random draw is uniform over the non-special ids, so it equals the original with chance `same`.
    const double same = 1.0 / double(specials.vocab_size - int64_t(specials.specials.size()));
    CHECK(kept == Approx(1 - expected.mask - expected.random * (1 - same)).margin(0.02));
    CHECK(1 - masked - kept == Approx(expected.random * (1 - same)).margin(0.02));
    CHECK(batch.ids.masked_select(chosen.logical_not()).equal(original.masked_select(chosen.logical_not())));
    // The same seed gives the same masks.
    CHECK(make_batch(ex, Objective::Mlm, specials, 42, masking).ids.equal(batch.ids));
    CHECK_FALSE(make_batch(ex, Objective::Mlm, specials, 43, masking).ids.equal(batch.ids));
  };
  SECTION("BERT's defaults") { check_masking({}, Masking{0.15, 0.8, 0.1}); }
  SECTION("other rates and splits") {
    check_masking(Masking{0.3, 0.5, 0.0}, Masking{0.3, 0.5, 0.0});
    check_masking(Masking{0.15, 0.0, 1.0}, Masking{0.15, 0.0, 1.0});
  }
  SECTION("a share of sequences has every target replaced by [MASK]") {
    Masking mixed{0.4, 0.5, 0.0};
    mixed.all_mask_share = 0.5;
    check_masking(mixed, Masking{0.4, 0.5 * 1.0 + 0.5 * 0.5, 0.0});  // half the sequences all [MASK], half 50/50
    auto batch = make_batch(ex, Objective::Mlm, specials, 42, mixed);
    auto chosen = batch.labels.ne(-100);
    auto targets = chosen.sum(1);                               // [B]
    auto masked = batch.ids.eq(1).logical_and(chosen).sum(1);  // [B]
    REQUIRE(targets.min().item<int64_t>() >= 8);  // a 50/50 sequence is all [MASK] by chance <= 1/256
    auto all = masked.eq(targets);
    CHECK(all.to(torch::kDouble).mean().item<double>() == Approx(0.5).margin(0.05));
    auto rest = all.logical_not();
    CHECK(masked.masked_select(rest).sum().item<double>() / targets.masked_select(rest).sum().item<double>() ==
          Approx(0.5).margin(0.02));
    mixed.all_mask_share = 1.0;  // every sequence: the same as mask = 1
    auto every = make_batch(ex, Objective::Mlm, specials, 42, mixed);
    CHECK(every.ids.eq(1).logical_and(every.labels.ne(-100)).sum().item<int64_t>() ==
          every.labels.ne(-100).sum().item<int64_t>());
  }
  SECTION("bad settings are refused") {
    Masking share{};
    share.all_mask_share = 1.5;
    CHECK_THROWS_WITH(share.validate(), Catch::Contains("all_mask_share must be in [0, 1]"));
    CHECK_THROWS_WITH(Masking({0.15, 0.8, 0.3}).validate(), Catch::Contains("exceed 1"));
    CHECK_THROWS_WITH(Masking({1.5, 0.8, 0.1}).validate(), Catch::Contains("rate must be in [0, 1]"));
    CHECK_THROWS_WITH(Masking({0.0, 0.8, 0.1}).validate(), Catch::Contains("rate must be above 0"));
    CHECK_THROWS_WITH(Masking({0.15, -0.1, 0.1}).validate(), Catch::Contains("mask must be in [0, 1]"));
  }
}

TEST_CASE("MLM rarity weighting: a token's chance to be a target follows its count^-alpha", "[train]") {
  auto specials = synthetic_specials();
  // A skewed stream: id 4 is half of all tokens, 5 a quarter, ids 6..47 share the rest.
  std::vector<int64_t> doc;
  uint64_t state = 3;
  for (int i = 0; i < 120000; ++i) {
    state = mix_seed(state, i);
    const uint64_t r = state % 8;
    doc.push_back(r < 4 ? 4 : r < 6 ? 5 : 6 + int64_t(state >> 8) % 42);
  }
  auto data = make_lm_dataset({doc}, 64, Objective::Mlm, specials, 0.0);
  const double alpha = 0.5;
  // Independent count: c^-alpha normalised to mean 1 over the training tokens.
  std::map<int64_t, double> count;
  double tokens = 0;
  for (const auto& e : data.train)
    for (int64_t id : e.source)
      if (id >= 4) {
        count[id] += 1;
        tokens += 1;
      }
  double mean = 0;
  for (const auto& [id, c] : count) mean += c * std::pow(c, -alpha) / tokens;
  const auto w = rarity_weights(data, specials, alpha);
  REQUIRE(w.size() == size_t(kVocab));
  for (const auto& [id, c] : count) CHECK(w[size_t(id)] == Approx(std::pow(c, -alpha) / mean).epsilon(1e-9));
  CHECK(w[4] < w[5]);
  CHECK(w[5] < w[20]);
  CHECK(rarity_weights(data, specials, 0.0).empty());

  Masking masking{0.15, 0.8, 0.1, alpha};
  masking.weights = w;
  std::vector<const Example*> ex;
  for (const auto& e : data.train) ex.push_back(&e);
  auto batch = make_batch(ex, Objective::Mlm, specials, 7, masking);
  auto original = torch::zeros({int64_t(ex.size()), int64_t(ex.front()->source.size())}, torch::kLong);
  for (size_t b = 0; b < ex.size(); ++b) original[b] = torch::tensor(ex[b]->source, torch::kLong);
  auto chosen = batch.labels.ne(-100);
  auto share_of = [&](const torch::Tensor& which) {
    return chosen.logical_and(which).sum().item<double>() / which.sum().item<double>();
  };
  // The frequent id is chosen less often than BERT's 15%, the rare ids more, each as predicted.
  CHECK(share_of(original.eq(4)) == Approx(std::min(1.0, 0.15 * w[4])).margin(0.01));
  CHECK(share_of(original.eq(5)) == Approx(std::min(1.0, 0.15 * w[5])).margin(0.015));
  CHECK(share_of(original.ge(6)) == Approx(std::min(1.0, 0.15 * w[20])).margin(0.05));
  CHECK(share_of(original.eq(4)) < 0.12);
  CHECK(share_of(original.ge(6)) > 0.2);
  // Without the cap the expected share of targets stays the rate.
  CHECK(share_of(original.ge(4)) == Approx(0.15).margin(0.01));
  CHECK(chosen.logical_and(original.lt(4)).sum().item<int64_t>() == 0);

  CHECK_THROWS_WITH(Masking({0.15, 0.8, 0.1, 3.0}).validate(), Catch::Contains("rarity must be in [0, 2]"));
  CHECK_THROWS_WITH(Masking({0.15, 0.8, 0.1, -0.5}).validate(), Catch::Contains("rarity must be in [0, 2]"));
}

TEST_CASE("causal targets are the next tokens, seq2seq pads and shifts", "[train]") {
  auto specials = synthetic_specials();
  auto data = make_lm_dataset(synthetic_documents(1, 100, 5), 10, Objective::Causal, specials, 0.0);
  std::vector<const Example*> ex = {&data.train[0], &data.train[1]};
  auto batch = make_batch(ex, Objective::Causal, specials, 0);
  CHECK(batch.ids.size(1) == 10);
  CHECK(batch.labels.slice(1, 0, 9).equal(batch.ids.slice(1, 1, 10)));
  CHECK(batch.labels.select(1, 9).eq(-100).all().item<bool>());
  CHECK(!batch.padding.defined());

  Example a{{5, 6, 7}, {8, 9}}, b{{5}, {8, 9, 10}};
  auto s2s = make_batch({&a, &b}, Objective::Seq2Seq, specials, 0);
  CHECK(s2s.ids.equal(torch::tensor({5, 6, 7, 5, 0, 0}, torch::kLong).view({2, 3})));
  CHECK(s2s.padding.equal(torch::tensor({0, 0, 0, 0, 1, 1}, torch::kLong).view({2, 3}).to(torch::kBool)));
  CHECK(s2s.decoder_ids.equal(torch::tensor({2, 8, 9, 0, 2, 8, 9, 10}, torch::kLong).view({2, 4})));
  CHECK(s2s.labels.equal(torch::tensor({8, 9, 3, -100, 8, 9, 10, 3}, torch::kLong).view({2, 4})));
  CHECK(s2s.tokens == 4);
}

TEST_CASE("batch order: every example once per epoch, reproducible", "[train]") {
  BatchOrder order(10, 3, 9), again(10, 3, 9);
  std::vector<int> seen(10, 0);
  for (int64_t step = 0; step < 10; ++step)  // 30 draws = 3 epochs
    for (size_t i : order.batch(step)) ++seen[i];
  for (int c : seen) CHECK(c == 3);
  CHECK(again.batch(7) == order.batch(7));
  CHECK(order.position(4) == std::pair<int64_t, int64_t>{1, 2});
}

TEST_CASE("learning-rate schedule: warm-up then decay to the floor", "[train]") {
  TrainOptions o;
  o.warmup = 0.1;
  CHECK(lr_factor(0.0, o) == 0.0);
  CHECK(lr_factor(0.05, o) == Approx(0.5));
  CHECK(lr_factor(0.1, o) == Approx(1.0));
  CHECK(lr_factor(0.55, o) == Approx(0.5));
  CHECK(lr_factor(1.0, o) == Approx(0.0).margin(1e-12));
  o.decay = "linear";
  o.min_lr_ratio = 0.1;
  CHECK(lr_factor(0.55, o) == Approx(0.55));
  CHECK(lr_factor(1.0, o) == Approx(0.1));
}

TEST_CASE("init_from starts from a model folder's weights, other shapes are refused", "[train]") {
  auto config = example_config("mha");
  auto data = synthetic_dataset(Objective::Mlm, 32);
  test::TempDir a("init_a"), b("init_b"), c("init_c");
  auto first = train_model(config, data, synthetic_specials(), test::quick_train_options(a.str(), Objective::Mlm, 100));

  // Phase 2 from phase 1's folder: its step-0 evaluation is phase 1's last one (same held-out
  // batches, same weights), far below a random start's.
  auto o = test::quick_train_options(b.str(), Objective::Mlm, 10);
  o.init_from = a.str();
  train_model(config, data, synthetic_specials(), o);
  auto la = read_log(a.str("train_log.jsonl")), lb = read_log(b.str("train_log.jsonl"));
  REQUIRE(lb.front()["step"] == 0);
  CHECK(double(lb.front()["eval_loss"]) == Approx(first.last_eval.loss).margin(1e-5));
  CHECK(double(lb.front()["eval_loss"]) < double(la.front()["eval_loss"]) - 0.15);

  // A resume must name the same starting folder.
  auto other = o;
  other.resume = true;
  other.init_from = c.str();
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), other), Catch::Contains("init_from"));

  // Another architecture: the error names the folder and the tensor.
  auto wider = config;
  wider.ffn.inner_size *= 2;
  auto w = test::quick_train_options(c.str(), Objective::Mlm, 10);
  w.init_from = a.str();
  CHECK_THROWS_WITH(train_model(wider, data, synthetic_specials(), w),
                    Catch::Contains(a.str()) && Catch::Contains("has shape") && Catch::Contains("ffn"));
}

TEST_CASE("frozen heads keep their query/key rows while every other weight trains", "[train]") {
  auto data = synthetic_dataset(Objective::Mlm, 32);
  for (const std::string name : {"mha", "additive"}) {
    INFO(name);
    auto config = example_config(name);
    test::TempDir a("freeze_a_" + name), b("freeze_b_" + name);
    train_model(config, data, synthetic_specials(), test::quick_train_options(a.str(), Objective::Mlm, 20));

    auto o = test::quick_train_options(b.str(), Objective::Mlm, 20);
    o.init_from = a.str();
    o.frozen_heads = {{1, 2}, {0, 0}};
    train_model(config, data, synthetic_specials(), o);
    auto before = core::SafetensorsFile::open(a.str("model.safetensors"));
    auto after = core::SafetensorsFile::open(b.str("model.safetensors"));
    const int64_t d = config.encoder->attention.key_size;
    auto rows = [&](const core::SafetensorsFile& f, const std::string& tensor, int head, int64_t n) {
      return load_tensor(f, tensor).narrow(0, head * n, n);
    };
    for (const std::string p : {"q", "k"}) {
      for (const std::string part : {"weight", "bias"}) {
        const std::string l1 = "encoder.1.attn." + p + "." + part, l0 = "encoder.0.attn." + p + "." + part;
        INFO(l1);
        CHECK(torch::equal(rows(before, l1, 2, d), rows(after, l1, 2, d)));   // frozen
        CHECK(torch::equal(rows(before, l0, 0, d), rows(after, l0, 0, d)));   // frozen
        CHECK(!torch::equal(rows(before, l1, 1, d), rows(after, l1, 1, d)));  // same tensor, trains
        CHECK(!torch::equal(rows(before, l0, 1, d), rows(after, l0, 1, d)));
      }
    }
    CHECK(!torch::equal(load_tensor(before, "encoder.1.attn.v.weight"), load_tensor(after, "encoder.1.attn.v.weight")));
    if (name == "additive") {
      CHECK(torch::equal(rows(before, "encoder.1.attn.score_v", 2, 1), rows(after, "encoder.1.attn.score_v", 2, 1)));
      CHECK(!torch::equal(rows(before, "encoder.1.attn.score_v", 3, 1), rows(after, "encoder.1.attn.score_v", 3, 1)));
    }

    // A resume must freeze the same heads.
    auto other = o;
    other.resume = true;
    other.steps = 30;
    other.frozen_heads = {{1, 2}};
    CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), other), Catch::Contains("frozen_heads"));
  }
}

TEST_CASE("frozen parameters by name keep their values, the rest trains", "[train]") {
  auto config = example_config("mha");
  auto data = synthetic_dataset(Objective::Mlm, 32);
  test::TempDir a("freeze_p_a"), b("freeze_p_b");
  train_model(config, data, synthetic_specials(), test::quick_train_options(a.str(), Objective::Mlm, 20));
  auto o = test::quick_train_options(b.str(), Objective::Mlm, 20);
  o.init_from = a.str();
  o.frozen_patterns = {"tokens.*", "encoder.0.*"};
  auto result = train_model(config, data, synthetic_specials(), o);
  CHECK(result.step == 20);
  auto before = core::SafetensorsFile::open(a.str("model.safetensors"));
  auto after = core::SafetensorsFile::open(b.str("model.safetensors"));
  int frozen = 0, trained = 0;
  for (const auto& t : before.tensors()) {
    INFO(t.name);
    const bool same = torch::equal(load_tensor(before, t.name), load_tensor(after, t.name));
    if (t.name == "tokens.weight" || t.name.rfind("encoder.0.", 0) == 0) {
      CHECK(same);
      ++frozen;
    } else if (t.name.rfind("encoder.1.", 0) == 0) {
      CHECK(!same);
      ++trained;
    }
  }
  CHECK(frozen > 10);
  CHECK(trained > 10);

  auto typo = test::quick_train_options(b.str("typo"), Objective::Mlm, 2);
  typo.frozen_patterns = {"encoder.0.atn.*"};
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), typo),
                    Catch::Contains("encoder.0.atn.*") && Catch::Contains("names no parameter"));
}

TEST_CASE("frozen heads: bad heads and shared projections are refused", "[train]") {
  CHECK(parse_head_ref("3.5") == HeadRef{3, 5});
  CHECK(to_string(HeadRef{12, 0}) == "12.0");
  for (const std::string bad : {"3", "3.", ".5", "a.b", "3.5.1", "-1.2", ""})
    CHECK_THROWS_WITH(parse_head_ref(bad), Catch::Contains("'" + bad + "'") && Catch::Contains("LAYER.HEAD"));

  auto data = synthetic_dataset(Objective::Mlm, 32);
  test::TempDir dir("freeze_bad");
  auto o = test::quick_train_options(dir.str(), Objective::Mlm, 2);
  o.frozen_heads = {{2, 0}};  // the mha config has 2 layers
  CHECK_THROWS_WITH(train_model(example_config("mha"), data, synthetic_specials(), o),
                    Catch::Contains("no head 2.0") && Catch::Contains("2 layers"));
  o.frozen_heads = {{0, 4}};  // and 4 heads
  CHECK_THROWS_WITH(train_model(example_config("mha"), data, synthetic_specials(), o), Catch::Contains("no head 0.4"));
  o.frozen_heads = {{0, 1}};
  auto causal = o;
  causal.objective = Objective::Causal;  // the gqa config is a decoder
  CHECK_THROWS_WITH(train_model(example_config("gqa"), synthetic_dataset(Objective::Causal, 32), synthetic_specials(), causal),
                    Catch::Contains("shares key heads"));
  CHECK_THROWS_WITH(train_model(example_config("collaborative"), data, synthetic_specials(), o),
                    Catch::Contains("collaborative"));
  CHECK_THROWS_WITH(train_model(example_config("latent"), synthetic_dataset(Objective::Causal, 32), synthetic_specials(), causal),
                    Catch::Contains("multi-head latent attention"));
}

TEST_CASE("zeroed parameters start at zero and, frozen as well, stay there while their biases train", "[train]") {
  auto config = example_config("mha");
  auto data = synthetic_dataset(Objective::Mlm, 32);
  test::TempDir kept("zero_kept"), loose("zero_loose");
  auto o = test::quick_train_options(kept.str(), Objective::Mlm, 20);
  o.dtype = "F32";
  o.zero_patterns = {"encoder.0.attn.q.weight"};
  o.frozen_patterns = o.zero_patterns;
  train_model(config, data, synthetic_specials(), o);
  auto f = core::SafetensorsFile::open(kept.str("model.safetensors"));
  CHECK(load_tensor(f, "encoder.0.attn.q.weight").abs().max().item<float>() == 0.0f);
  CHECK(load_tensor(f, "encoder.0.attn.q.bias").abs().max().item<float>() > 0.0f);  // the query: its bias alone
  CHECK(load_tensor(f, "encoder.1.attn.q.weight").abs().max().item<float>() > 0.0f);  // other layers as drawn

  // Not frozen: zero is only the start, and the weights train away from it.
  auto o2 = test::quick_train_options(loose.str(), Objective::Mlm, 20);
  o2.dtype = "F32";
  o2.zero_patterns = {"encoder.0.attn.q.weight"};
  train_model(config, data, synthetic_specials(), o2);
  auto g = core::SafetensorsFile::open(loose.str("model.safetensors"));
  CHECK(load_tensor(g, "encoder.0.attn.q.weight").abs().max().item<float>() > 0.0f);

  auto typo = test::quick_train_options(loose.str("typo"), Objective::Mlm, 2);
  typo.zero_patterns = {"encoder.0.atn.q.weight"};
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), typo),
                    Catch::Contains("--zero") && Catch::Contains("names no parameter"));
}

TEST_CASE("decay_patterns: weight decay reaches the matching matrices and no others", "[train]") {
  auto config = example_config("mha");
  auto data = synthetic_dataset(Objective::Mlm, 32);
  test::TempDir dir("decay_only");
  // Three runs from the same start and batches: no decay, decay on layer 0's query weights only,
  // decay everywhere. The norms of a weight after 20 steps tell whether the decay reached it.
  auto norm_after = [&](const std::string& sub, double weight_decay, std::vector<std::string> patterns) {
    auto o = test::quick_train_options(dir.str(sub), Objective::Mlm, 20);
    o.dtype = "F32";
    o.weight_decay = weight_decay;
    o.decay_patterns = std::move(patterns);
    train_model(config, data, synthetic_specials(), o);
    auto f = core::SafetensorsFile::open(dir.str(sub + "/model.safetensors"));
    std::map<std::string, double> norms;
    for (const char* name : {"encoder.0.attn.q.weight", "encoder.0.attn.k.weight", "encoder.1.attn.q.weight"})
      norms[name] = load_tensor(f, name).norm().item<double>();
    return norms;
  };
  const auto plain = norm_after("plain", 0.0, {});
  const auto only = norm_after("only", 30.0, {"encoder.0.attn.q.weight"});
  const auto all = norm_after("all", 30.0, {});
  CHECK(only.at("encoder.0.attn.q.weight") < 0.8 * plain.at("encoder.0.attn.q.weight"));
  for (const char* name : {"encoder.0.attn.k.weight", "encoder.1.attn.q.weight"}) {
    INFO(name);
    CHECK(only.at(name) == Approx(plain.at(name)).epsilon(0.05));  // trained alike, undecayed
    CHECK(all.at(name) < 0.8 * plain.at(name));                    // the decay, where it reaches
  }

  auto typo = test::quick_train_options(dir.str("typo"), Objective::Mlm, 2);
  typo.decay_patterns = {"encoder.0.attn.q.bias"};  // a vector: biases never decay
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), typo),
                    Catch::Contains("--decay-only") && Catch::Contains("encoder.0.attn.q.bias"));
  typo.decay_patterns = {"encoder.0.attn.q.weight", "encoder.0.atn.k.weight"};  // one glob misspelled
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), typo),
                    Catch::Contains("--decay-only") && Catch::Contains("encoder.0.atn.k.weight") &&
                        Catch::Contains("names no parameter"));
}

TEST_CASE("reinit draws parameters afresh after init, frozen heads keep the loaded rows", "[train]") {
  auto config = example_config("mha");
  auto data = synthetic_dataset(Objective::Mlm, 32);
  test::TempDir a("reinit_a"), fresh("reinit_fresh"), b("reinit_b");
  train_model(config, data, synthetic_specials(), test::quick_train_options(a.str(), Objective::Mlm, 20));
  // lr 0: one step changes nothing, so the folders hold the starting weights.
  auto still = [&](const std::string& out) {
    auto o = test::quick_train_options(out, Objective::Mlm, 1);
    o.lr = 0;
    o.dtype = "F32";
    return o;
  };
  train_model(config, data, synthetic_specials(), still(fresh.str()));  // the seed's random start
  auto o = still(b.str());
  o.init_from = a.str();
  o.reinit_patterns = {"encoder.1.*"};
  o.frozen_heads = {{1, 3}};
  train_model(config, data, synthetic_specials(), o);

  auto loaded = core::SafetensorsFile::open(a.str("model.safetensors"));
  auto random = core::SafetensorsFile::open(fresh.str("model.safetensors"));
  auto result = core::SafetensorsFile::open(b.str("model.safetensors"));
  const int64_t d = config.encoder->attention.key_size;
  for (const auto& t : loaded.tensors()) {
    INFO(t.name);
    auto r = load_tensor(result, t.name);
    if (t.name.rfind("encoder.1.", 0) != 0) {
      CHECK(torch::equal(r, load_tensor(loaded, t.name)));  // not re-drawn
    } else if (t.name.rfind("encoder.1.attn.q.", 0) == 0 || t.name.rfind("encoder.1.attn.k.", 0) == 0) {
      CHECK(torch::equal(r.narrow(0, 3 * d, d), load_tensor(loaded, t.name).narrow(0, 3 * d, d)));  // head 1.3 as loaded
      CHECK(torch::equal(r.narrow(0, 0, 3 * d), load_tensor(random, t.name).narrow(0, 0, 3 * d)));  // heads 1.0–1.2 afresh
      if (t.name.find("weight") != std::string::npos)
        CHECK(!torch::equal(r.narrow(0, 0, 3 * d), load_tensor(loaded, t.name).narrow(0, 0, 3 * d)));
    } else {
      CHECK(torch::equal(r, load_tensor(random, t.name)));
    }
  }

  // A deeper model from the 2-layer folder: the new layer is drawn afresh, the rest loaded.
  auto deeper = config;
  deeper.encoder->layers = 3;
  auto grow = still(b.str("deeper"));
  grow.init_from = a.str();
  grow.reinit_patterns = {"encoder.2.*"};
  train_model(deeper, data, synthetic_specials(), grow);
  auto grown = core::SafetensorsFile::open(b.str("deeper/model.safetensors"));
  CHECK(torch::equal(load_tensor(grown, "encoder.1.ffn.up.weight"), load_tensor(loaded, "encoder.1.ffn.up.weight")));
  CHECK(grown.contains("encoder.2.ffn.up.weight"));
  CHECK(!loaded.contains("encoder.2.ffn.up.weight"));
  grow.reinit_patterns = {"encoder.2.attn.*"};  // the new layer's FFN is not in the folder
  CHECK_THROWS_WITH(train_model(deeper, data, synthetic_specials(), grow), Catch::Contains("encoder.2.") &&
                                                                               Catch::Contains("missing"));

  auto no_init = still(b.str("x"));
  no_init.reinit_patterns = {"*"};
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), no_init), Catch::Contains("--reinit needs --init"));
  auto typo = still(b.str("y"));
  typo.init_from = a.str();
  typo.reinit_patterns = {"encoder.9.*"};
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), typo),
                    Catch::Contains("--reinit") && Catch::Contains("encoder.9.*"));
}

namespace {

// A word-level tokenizer.json whose ids 0..n-1 are the given tokens, in order.
void write_word_level(const std::string& path, const std::vector<std::string>& tokens) {
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
  const nlohmann::json t = {{"version", "1.0"},
                            {"added_tokens", nlohmann::json::array()},
                            {"normalizer", nullptr},
                            {"pre_tokenizer", {{"type", "Whitespace"}}},
                            {"post_processor", nullptr},
                            {"decoder", nullptr},
                            {"model", {{"type", "WordLevel"}, {"unk_token", "w1"}, {"vocab", vocab}}}};
  std::ofstream(path) << t.dump();
}

std::vector<std::string> word_tokens(int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) out.push_back("w" + std::to_string(i));
  return out;
}

}  // namespace

TEST_CASE("init_from a model whose tokenizer the run's extends: known rows loaded, new rows fresh and training",
          "[train]") {
  auto config = example_config("mha");
  config.lm_head.tied = false;  // every vocabulary-sized tensor: embeddings, output weights, output bias
  config.lm_head.bias = true;
  auto data = synthetic_dataset(Objective::Mlm, 32);
  test::TempDir a("grow_a"), b("grow_b"), c("grow_c"), files("grow_tok");
  const int64_t grown = kVocab + 8;
  write_word_level(files.str("old.json"), word_tokens(kVocab));
  write_word_level(files.str("new.json"), word_tokens(grown));
  auto first_options = test::quick_train_options(a.str(), Objective::Mlm, 20);
  first_options.tokenizer_json = files.str("old.json");
  first_options.dtype = "F32";
  train_model(config, data, synthetic_specials(), first_options);

  auto big = config;
  big.vocab_size = static_cast<int>(grown);
  auto specials = synthetic_specials();
  specials.vocab_size = grown;
  // The new tokens appear in the data, so their rows get a gradient as inputs and as outputs.
  auto docs = synthetic_documents(4, 3000, 7);
  for (auto& doc : docs)
    for (size_t i = 0; i < doc.size(); i += 5) doc[i] = kVocab + int64_t(i / 5) % 8;
  auto grown_data = make_lm_dataset(docs, 32, Objective::Mlm, specials, 0.05);

  auto run = [&](const std::string& out, bool freeze, double lr = 3e-3) {
    auto o = test::quick_train_options(out, Objective::Mlm, lr > 0 ? 20 : 1);
    o.lr = lr;
    o.init_from = a.str();
    o.tokenizer_json = files.str("new.json");
    o.freeze_known_tokens = freeze;
    o.dtype = "F32";
    train_model(big, grown_data, specials, o);
    return core::SafetensorsFile::open(out + "/model.safetensors");
  };
  auto loaded = core::SafetensorsFile::open(a.str("model.safetensors"));
  auto frozen = run(b.str(), true);
  auto free = run(c.str(), false);
  auto start = run(c.str("start"), true, 0.0);  // lr 0: the starting weights
  for (const std::string name : {"tokens.weight", "head_weight", "head_bias"}) {
    INFO(name);
    const auto before = load_tensor(loaded, name);
    REQUIRE(before.size(0) == kVocab);
    const auto kept = load_tensor(frozen, name), moved = load_tensor(free, name);
    REQUIRE(kept.size(0) == grown);
    CHECK(torch::equal(kept.narrow(0, 0, kVocab), before));          // known rows as loaded
    CHECK(!torch::equal(moved.narrow(0, 0, kVocab), before));        // without the flag they train
    // The start: known rows as loaded, new rows drawn like them; then the new rows train.
    const auto fresh = load_tensor(start, name);
    CHECK(torch::equal(fresh.narrow(0, 0, kVocab), before));
    CHECK(!torch::equal(kept.narrow(0, kVocab, 8), fresh.narrow(0, kVocab, 8)));
    CHECK(!torch::equal(moved.narrow(0, kVocab, 8), fresh.narrow(0, kVocab, 8)));
  }
  CHECK(!torch::equal(load_tensor(frozen, "encoder.1.ffn.up.weight"), load_tensor(loaded, "encoder.1.ffn.up.weight")));

  // --new-token-rows frequency: the new rows start from the known rows nearest in training count.
  std::vector<int64_t> counts(static_cast<size_t>(grown));
  for (int64_t id = 0; id < grown; ++id) counts[size_t(id)] = (id * 37) % 101;
  core::TokenCounts training_counts;
  training_counts.counts = counts;
  {
    auto o = test::quick_train_options(c.str("by_frequency"), Objective::Mlm, 1);
    o.lr = 0;
    o.init_from = a.str();
    o.tokenizer_json = files.str("new.json");
    o.new_token_rows = NewTokenRows::Frequency;
    o.token_counts = &training_counts;
    o.dtype = "F32";
    train_model(big, grown_data, specials, o);
    const auto by_frequency = core::SafetensorsFile::open(c.str("by_frequency/model.safetensors"));
    for (const std::string name : {"tokens.weight", "head_bias"}) {
      INFO(name);
      const auto before = load_tensor(loaded, name);
      const auto rows = load_tensor(by_frequency, name);
      CHECK(torch::equal(rows.narrow(0, 0, kVocab), before));
      CHECK(torch::allclose(rows.narrow(0, kVocab, 8), rows_by_frequency(before, counts, specials.specials, 8)));
      CHECK(!torch::allclose(rows.narrow(0, kVocab, 8), load_tensor(start, name).narrow(0, kVocab, 8)));
    }
    training_counts.counts.pop_back();
    CHECK_THROWS_WITH(train_model(big, grown_data, specials, o), Catch::Contains("count of each of the"));
    training_counts.counts = counts;
    o.tokenizer_json = files.str("old.json");  // no grown vocabulary
    CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), o),
                      Catch::Contains("--new-token-rows frequency needs --init"));
  }

  // The run's tokenizer must keep every known token at its id.
  auto swapped = word_tokens(grown);
  std::swap(swapped[5], swapped[6]);
  write_word_level(files.str("swapped.json"), swapped);
  auto o = test::quick_train_options(b.str("x"), Objective::Mlm, 2);
  o.init_from = a.str();
  o.tokenizer_json = files.str("swapped.json");
  CHECK_THROWS_WITH(train_model(big, grown_data, specials, o),
                    Catch::Contains("does not extend") && Catch::Contains("id 5 is 'w5'") && Catch::Contains("'w6'"));
  write_word_level(files.str("smaller.json"), word_tokens(kVocab - 2));
  o.tokenizer_json = files.str("smaller.json");
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), o), Catch::Contains("does not extend"));
  // The flag needs a grown vocabulary.
  o.tokenizer_json = files.str("old.json");
  o.freeze_known_tokens = true;
  CHECK_THROWS_WITH(train_model(config, data, synthetic_specials(), o), Catch::Contains("--freeze-known-tokens needs"));
}

TEST_CASE("new vocabulary rows are drawn with the known rows' mean and covariance", "[train]") {
  // Known rows with a clear mean and correlated columns: x = m + z A, so cov = Aᵀ A.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  const auto a = torch::tensor({{1.0, 0.5, 0.0}, {0.0, 0.3, -0.2}, {0.0, 0.0, 0.1}}, torch::kFloat64);
  const auto m = torch::tensor({0.4, -1.0, 2.0}, torch::kFloat64);
  const auto known = (m + at::normal(0, 1, {4000, 3}, gen).to(torch::kFloat64).mm(a)).to(torch::kFloat32);
  const auto drawn = draw_rows_like(known, 40000, 11).to(torch::kFloat64);  // [40000, 3]
  REQUIRE(drawn.sizes() == torch::IntArrayRef({40000, 3}));
  auto covariance = [](const torch::Tensor& x) {
    const auto c = x - x.mean(0);
    return c.t().mm(c) / double(x.size(0) - 1);
  };
  const auto known64 = known.to(torch::kFloat64);
  CHECK(test::max_abs_diff(drawn.mean(0), known64.mean(0)) < 0.02);
  CHECK(test::max_abs_diff(covariance(drawn), covariance(known64)) < 0.03);
  // Seeded: the same seed draws the same rows, another seed others.
  CHECK(torch::equal(draw_rows_like(known, 5, 11), draw_rows_like(known, 5, 11)));
  CHECK(!torch::equal(draw_rows_like(known, 5, 11), draw_rows_like(known, 5, 12)));
  // A bias [V]: new entries around the known ones' mean and spread.
  const auto bias = torch::linspace(-3, 1, 1001);
  const auto new_bias = draw_rows_like(bias, 20000, 3);
  REQUIRE(new_bias.dim() == 1);
  CHECK(new_bias.mean().item<double>() == Approx(-1.0).margin(0.03));
  CHECK(new_bias.std().item<double>() == Approx(bias.std().item<double>()).epsilon(0.03));
  // Rows spanning fewer directions than their width still draw (within their span).
  const auto flat = torch::zeros({10, 4});
  flat.select(1, 0).copy_(torch::arange(10));
  const auto drawn_flat = draw_rows_like(flat, 100, 1);
  CHECK(drawn_flat.select(1, 1).abs().max().item<double>() < 1e-2);
  CHECK(drawn_flat.select(1, 0).std().item<double>() > 1.0);
}

TEST_CASE("new vocabulary rows can start as the mean of the known rows nearest in frequency", "[train]") {
  // 60 known tokens (ids 0-1 special) with distinct counts, 5 new ones; an independent brute force:
  // every candidate sorted by its distance in log(1 + count), the nearest 6 averaged.
  const int64_t K = 60, n = 5, neighbours = 6;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  const auto known = at::normal(0, 1, {K, 4}, gen).to(torch::kFloat32);  // [K, 4]
  std::vector<int64_t> counts(static_cast<size_t>(K + n));
  for (int64_t id = 0; id < K; ++id) counts[size_t(id)] = (id * 7919) % 1000 + 1;  // distinct
  counts[0] = counts[1] = 0;
  const std::vector<int64_t> fresh = {0, 3, 250, 5000, 997};
  for (int64_t i = 0; i < n; ++i) counts[size_t(K + i)] = fresh[size_t(i)];
  const std::vector<int64_t> specials = {0, 1};
  const auto rows = rows_by_frequency(known, counts, specials, n, neighbours);  // [n, 4]
  REQUIRE(rows.sizes() == torch::IntArrayRef({n, 4}));
  for (int64_t i = 0; i < n; ++i) {
    INFO("new token with count " << fresh[size_t(i)]);
    std::vector<std::pair<double, int64_t>> by_distance;
    const double target = std::log(1.0 + double(fresh[size_t(i)]));
    for (int64_t id = 2; id < K; ++id)
      by_distance.emplace_back(std::abs(std::log(1.0 + double(counts[size_t(id)])) - target), id);
    std::sort(by_distance.begin(), by_distance.end());
    auto expected = torch::zeros({4}, torch::kFloat64);
    for (int64_t k = 0; k < neighbours; ++k) expected += known[by_distance[size_t(k)].second].to(torch::kFloat64);
    expected /= double(neighbours);
    CHECK(torch::allclose(rows[i].to(torch::kFloat64), expected, 1e-6, 1e-6));
  }
  // A count beyond every known one takes the most frequent known rows; the special rows never count.
  CHECK(!torch::allclose(rows[0], known.narrow(0, 0, 2).mean(0)));
  // A bias [V] works alike.
  const auto bias = rows_by_frequency(known.select(1, 0), counts, specials, n, neighbours);
  CHECK(torch::allclose(bias, rows.select(1, 0)));
  CHECK_THROWS_WITH(rows_by_frequency(known, std::vector<int64_t>(10), specials, n, neighbours),
                    Catch::Contains("token counts"));
  CHECK_THROWS_WITH(rows_by_frequency(known, counts, specials, n, K), Catch::Contains("neighbours"));
  CHECK(parse_new_token_rows("frequency") == NewTokenRows::Frequency);
  CHECK_THROWS_WITH(parse_new_token_rows("mean"), Catch::Contains("typical or frequency"));
}

