// The engine options GPT-NeoX, GPT-J and BLOOM need, each usable by any native model and each checked
// against its formula: ALiBi's slopes and biases (Press et al. 2022), RoPE's interleaved pair layout
// (GPT-J) as a permutation of rotate-half, and attention and FFN side by side in one residual step.
// Plus their config round trip, validation, training and the KV cache.
#include "test_common.h"
#include "small_models.h"

#include "core/model/attention.h"
#include "core/model/generate.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/train/data.h"
#include "core/train/trainer.h"
#include "synthetic_text.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <vector>

namespace core = headlab::core;
using Catch::Contains;
using headlab::test::max_abs_diff;

namespace {

void randomise(core::Model& model, uint64_t seed) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (auto& item : model.module->named_parameters()) {
    auto& p = item.value();
    const bool norm = item.key().find("norm") != std::string::npos;
    p.copy_(norm ? 1.0 + 0.3 * torch::randn(p.sizes()) : 0.4 * torch::randn(p.sizes()));
  }
}

std::shared_ptr<core::Model> random_model(const core::ModelConfig& config, uint64_t seed) {
  auto model = std::make_shared<core::Model>();
  model->config = config;
  model->module = core::Transformer(config);
  randomise(*model, seed);
  model->module->eval();
  return model;
}

std::shared_ptr<const core::Trace> run_ids(core::Model& model, const std::vector<int64_t>& ids) {
  core::RunRequest request;
  request.ids = ids;
  request.capture = core::kCaptureWeights;
  return core::run(model, request);
}

const std::vector<int64_t> kIds = {3, 17, 1, 30, 12, 5, 9, 22, 38, 0};

}  // namespace

TEST_CASE("alibi_slopes: the geometric sequences of Press et al. and BLOOM's extra slopes", "[attention][alibi]") {
  auto slopes = [](int64_t heads) {
    auto t = core::alibi_slopes(heads).to(torch::kFloat64);
    return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  };
  // 8 heads: 1/2, 1/4, …, 1/256; 16 heads: 1/2^0.5, 1/2, …, 1/256 (Press et al. 2022, § 3).
  for (int h = 0; h < 8; ++h) CHECK(slopes(8)[h] == std::pow(2.0, -(h + 1)));
  for (int h = 0; h < 16; ++h) CHECK(slopes(16)[h] == Approx(std::pow(2.0, -0.5 * (h + 1))).epsilon(1e-6));
  // 6 heads: the 4 slopes of 4 heads (1/4 … 1/256), then every other slope of 8 heads (1/2, 1/8).
  CHECK(slopes(6) == std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125});
  CHECK(slopes(1) == std::vector<double>{1.0 / 256});
}

TEST_CASE("ALiBi: with content-blind queries and keys the maps are softmax(−m_h · |i − j|)", "[attention][alibi]") {
  for (const auto kind : {core::StackKind::Encoder, core::StackKind::Decoder}) {
    DYNAMIC_SECTION((kind == core::StackKind::Encoder ? "encoder" : "decoder")) {
      auto config = headlab::test::small_model(kind, headlab::test::attention(3, 3, 4, 4), 1, 40);
      config.positions = core::PositionKind::None;
      auto& a = kind == core::StackKind::Encoder ? config.encoder->attention : config.decoder->attention;
      a.alibi = true;
      auto model = random_model(config, 4);
      {
        torch::NoGradGuard no_grad;  // q and k read nothing: every logit is the bias alone
        auto params = model->module->named_parameters();
        const std::string stack = kind == core::StackKind::Encoder ? "encoder" : "decoder";
        for (const char* name : {".0.attn.q.weight", ".0.attn.q.bias", ".0.attn.k.weight", ".0.attn.k.bias"})
          params[stack + name].zero_();
      }
      const auto trace = run_ids(*model, kIds);
      const auto maps = trace->main_stack().layers[0].self.weights;  // [h, T, T]
      const int64_t T = int64_t(kIds.size());
      const auto m = core::alibi_slopes(3).to(torch::kFloat64);
      double worst = 0;
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t i = 0; i < T; ++i) {
          double sum = 0;
          std::vector<double> row(T, 0.0);
          for (int64_t j = 0; j < T; ++j)
            if (kind == core::StackKind::Encoder || j <= i) sum += row[j] = std::exp(-m[h].item<double>() * std::abs(i - j));
          for (int64_t j = 0; j < T; ++j)
            worst = std::max(worst, std::abs(maps[h][i][j].item<double>() - row[j] / sum));
        }
      CHECK(worst < 1e-6);
      // Without ALiBi the same weights attend uniformly: the bias is what shaped the rows.
      a.alibi = false;
      auto plain = random_model(config, 4);
      CHECK(max_abs_diff(run_ids(*plain, kIds)->logits, trace->logits) > 1e-4);
    }
  }
}

TEST_CASE("rope_interleaved equals rotate-half with each head's query and key dims reordered", "[attention][rope]") {
  // Pairs (x_{2i}, x_{2i+1}) rotate by angle i in the interleaved layout and (x_i, x_{i+rot/2}) in
  // rotate-half; moving q/k output row 2i to i and 2i+1 to i + rot/2 (within each head's rotated dims)
  // turns one model into the other, so both must give the same maps and logits.
  auto config = headlab::test::small_model(core::StackKind::Decoder, headlab::test::attention(2, 2, 8, 8), 2, 40);
  config.positions = core::PositionKind::Rope;
  config.rope_dim = 6;  // partial: dims 6 and 7 of each head pass unrotated
  auto half = random_model(config, 9);
  auto interleaved_config = config;
  interleaved_config.rope_interleaved = true;
  auto interleaved = random_model(interleaved_config, 9);
  {
    torch::NoGradGuard no_grad;
    std::vector<int64_t> order;  // interleaved row r comes from rotate-half row order[r]
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t r = 0; r < 8; ++r) {
        const int64_t source = r >= 6 ? r : (r % 2 == 0 ? r / 2 : 3 + r / 2);
        order.push_back(h * 8 + source);
      }
    }
    const auto index = torch::tensor(order, torch::kLong);
    auto from = half->module->named_parameters();
    for (auto& item : interleaved->module->named_parameters()) {
      const std::string& name = item.key();
      const bool qk = name.find("attn.q.") != std::string::npos || name.find("attn.k.") != std::string::npos;
      item.value().copy_(qk ? from[name].index_select(0, index) : from[name]);
    }
  }
  const auto a = run_ids(*half, kIds), b = run_ids(*interleaved, kIds);
  for (int l = 0; l < 2; ++l)
    CHECK(max_abs_diff(a->decoder.layers[l].self.weights, b->decoder.layers[l].self.weights) < 1e-6);
  CHECK(max_abs_diff(a->logits, b->logits) < 1e-5);
  // The same weights without the reordering give other maps.
  auto unordered = random_model(interleaved_config, 9);
  CHECK(max_abs_diff(run_ids(*unordered, kIds)->decoder.layers[1].self.weights, a->decoder.layers[1].self.weights) >
        1e-3);
}

TEST_CASE("parallel_residual: h + attn(N_a(h)) + ffn(N_f(h)) from the block's input", "[attention][parallel]") {
  auto config = headlab::test::small_model(core::StackKind::Decoder, headlab::test::attention(4, 4, 4, 4), 2, 40);
  config.parallel_residual = true;
  auto model = random_model(config, 12);
  auto block = model->module->block(core::Stack::Decoder, 0);
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({1, 7, 16});
  core::BlockCall call;
  call.causal = true;
  const auto got = block->forward(x, call, nullptr, nullptr);
  core::AttentionCall a;
  a.query_input = a.key_input = block->attn_norm(x);
  a.causal = true;
  const auto expected = x + block->attn->forward(a, nullptr) + block->ffn(block->ffn_norm(x));
  CHECK(max_abs_diff(got, expected) < 1e-6);
  // Sequentially (the FFN reading the sum after attention) the same weights give another output.
  auto sequential_config = config;
  sequential_config.parallel_residual = false;
  auto sequential = random_model(sequential_config, 12);
  CHECK(max_abs_diff(run_ids(*sequential, kIds)->logits, run_ids(*model, kIds)->logits) > 1e-3);
}

TEST_CASE("ALiBi, interleaved RoPE and parallel blocks: a KV-cache step equals recomputation", "[attention][generate]") {
  auto config = headlab::test::small_model(core::StackKind::Decoder, headlab::test::attention(4, 2, 4, 4), 2, 40);
  config.parallel_residual = true;
  config.positions = core::PositionKind::Rope;
  config.rope_interleaved = true;
  config.rope_dim = 2;
  auto alibi_config = headlab::test::small_model(core::StackKind::Decoder, headlab::test::attention(3, 3, 4, 4), 2, 40);
  alibi_config.positions = core::PositionKind::None;
  alibi_config.decoder->attention.alibi = true;
  for (const auto& c : {config, alibi_config}) {
    auto model = random_model(c, 21);
    core::GenerateRequest request;
    request.prompt = {3, 14, 15, 9};
    request.max_new = 8;
    const core::Generation result = core::generate(*model, request);
    // Each step's logits equal a full run over the tokens so far.
    std::vector<int64_t> tokens = request.prompt;
    for (const auto& step : result.steps) {
      const auto full = run_ids(*model, tokens);
      CHECK(max_abs_diff(step.logits, full->logits[int64_t(tokens.size()) - 1]) < 1e-5);
      tokens.push_back(step.token);
    }
  }
}

TEST_CASE("alibi, rope_interleaved and parallel_residual: config round trip, validation, training", "[config][alibi]") {
  auto config = headlab::test::small_model(core::StackKind::Decoder, headlab::test::attention(4, 4, 4, 4), 2, 40);
  config.positions = core::PositionKind::Rope;
  config.rope_interleaved = true;
  config.parallel_residual = true;
  config.decoder->attention.alibi = true;
  const auto json = core::to_json(config);
  CHECK(json["rope_interleaved"] == true);
  CHECK(json["parallel_residual"] == true);
  CHECK(json["decoder"]["attention"]["alibi"] == true);
  const auto back = core::model_config_from_json(json);
  CHECK((back.rope_interleaved && back.parallel_residual && back.decoder->attention.alibi));
  CHECK_THAT(config.summary(), Contains("interleaved pairs") && Contains("attention and FFN in parallel") &&
                                   Contains("ALiBi"));
  // Configs without them write no key (older HeadLabs read them).
  const auto plain = core::to_json(headlab::test::small_model(core::StackKind::Decoder, headlab::test::attention(4, 4, 4, 4), 1, 40));
  CHECK_FALSE(plain.contains("parallel_residual"));
  CHECK_FALSE(plain["decoder"]["attention"].contains("alibi"));

  auto refused = [](core::ModelConfig c) {
    try {
      c.validate();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(valid)");
  };
  auto post = config;
  post.norm_placement = core::NormPlacement::Post;
  CHECK_THAT(refused(post), Contains("parallel_residual needs norm_placement 'pre'"));
  auto no_ffn = config;
  no_ffn.ffn.kind = core::FfnKind::None;
  CHECK_THAT(refused(no_ffn), Contains("parallel_residual needs an FFN"));
  auto learned = config;
  learned.positions = core::PositionKind::Learned;
  CHECK_THAT(refused(learned), Contains("rope_interleaved: only meaningful with positions 'rope'"));
  auto partial_learned = learned;
  partial_learned.rope_interleaved = false;
  partial_learned.rope_dim = 4;
  CHECK_THAT(refused(partial_learned), Contains("rope_dim: only meaningful with positions 'rope'"));
  auto two_biases = config;
  two_biases.decoder->attention.relative_bias = core::RelativeBias{};
  CHECK_THAT(refused(two_biases), Contains("alibi and relative_bias cannot be combined"));

  // A native model with all three trains: the held-out loss falls.
  namespace train = core::train;
  headlab::test::TempDir dir("train-alibi-parallel");
  config.vocab_size = static_cast<int>(headlab::test::kSyntheticVocab);
  const auto specials = headlab::test::synthetic_specials();
  auto data = train::make_lm_dataset(headlab::test::synthetic_documents(4, 3000, 7), 32, train::Objective::Causal,
                                     specials, 0.05);
  const auto o = headlab::test::quick_train_options(dir.str(), train::Objective::Causal, 60);
  const auto result = train::train_model(config, data, specials, o);
  CHECK(result.finished);
  std::ifstream log(dir.str("train_log.jsonl"));
  std::vector<double> losses;
  for (std::string line; std::getline(log, line);)
    if (!line.empty()) losses.push_back(nlohmann::json::parse(line)["eval_loss"].get<double>());
  REQUIRE(losses.size() == 2);
  CHECK(losses.back() < losses.front() - 0.15);
}
