// The card computes what the CPU computes. Every case runs the same model twice, once on the CPU
// and once moved to cuda:0 (core/model/device.h), and compares: the Hugging Face fixtures' logits
// and maps within 1e-4 relative with TF32 off, LRP's conservation and head relevance, generation
// with the KV cache, a gate's partial re-run and a dataset analysis. Each case is skipped (exit 77
// under ctest) where this build has no CUDA or the machine no card, as on every CI machine.
#include "test_common.h"

#include "analysis/analyze.h"
#include "analysis/lrp.h"
#include "app/work/workbench_engine.h"
#include "core/model/cp_als.h"
#include "core/model/device.h"
#include "core/model/generate.h"
#include "core/precision.h"
#include "core/model/run.h"
#include "core/weights_policy.h"
#include "core/hf_fixtures.h"
#include "core/train/head_pruning.h"
#include "core/train/trainer.h"
#include "synthetic_text.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace headlab::core;

namespace {

const torch::Device kCard(torch::kCUDA, 0);

using headlab::test::max_abs_diff;
using headlab::test::hf::relative_difference;

std::shared_ptr<Model> on_card(const std::string& folder) {
  auto model = load_model(folder);
  move_to_device(*model, kCard);
  return model;
}

// Card against CPU: float32 on both sides, other kernels and summation orders.
constexpr double kCardTolerance = 1e-4;

}  // namespace

TEST_CASE("card: every Hugging Face family computes on the card what it computes on the CPU", "[gpu]") {
  SKIP_WITHOUT_CARD();
  for (const std::string& name : headlab::test::hf::one_per_family()) {
    DYNAMIC_SECTION(name) {
      const std::string folder = headlab::test::hf::fixture(name);
      const auto expected = headlab::test::hf::read_expected(folder);
      auto cpu = load_model(folder);
      auto card = on_card(folder);
      REQUIRE(model_device(*card) == kCard);
      RunRequest request;
      request.ids = expected.ids;
      request.decoder_ids = expected.decoder_ids;
      request.token_types = expected.token_types;
      const auto a = run(*card, request), b = run(*cpu, request);
      CHECK(a->logits.is_cuda());
      CHECK(relative_difference(a->logits, b->logits) < kCardTolerance);
      for (const Stack stack : {Stack::Encoder, Stack::Decoder}) {
        const auto& x = stack == Stack::Encoder ? a->encoder : a->decoder;
        const auto& y = stack == Stack::Encoder ? b->encoder : b->decoder;
        REQUIRE(x.layers.size() == y.layers.size());
        for (size_t l = 0; l < x.layers.size(); ++l) {
          INFO("layer " << l);
          CHECK(x.layers[l].self.weights.is_cuda());  // the maps stay on the card until a view asks
          CHECK(max_abs_diff(x.layers[l].self.weights, y.layers[l].self.weights) < kCardTolerance);
          if (x.layers[l].cross.weights.defined())
            CHECK(max_abs_diff(x.layers[l].cross.weights, y.layers[l].cross.weights) < kCardTolerance);
        }
      }
      // LRP runs its forward and backward pass on the card and conserves as on the CPU.
      const auto r = headlab::analysis::lrp_relevance(*card, expected.ids, {}, {}, expected.decoder_ids);
      const auto s = headlab::analysis::lrp_relevance(*cpu, expected.ids, {}, {}, expected.decoder_ids);
      CHECK(r.token == s.token);
      CHECK(r.target == Approx(s.target).epsilon(kCardTolerance).margin(1e-6));
      CHECK(r.relative_residual() < kCardTolerance);
      for (const auto& [stack, layers] : s.heads)
        for (size_t l = 0; l < layers.size(); ++l)
          for (size_t h = 0; h < layers[l].size(); ++h)
            CHECK(r.heads.at(stack)[l][h] == Approx(layers[l][h]).epsilon(1e-3).margin(kCardTolerance * std::abs(s.target) + 1e-7));
    }
  }
}

TEST_CASE("card: stored BF16 weights stay BF16 on the card and compute as their float32 upcast", "[gpu]") {
  SKIP_WITHOUT_CARD();
  const std::string folder = headlab::test::hf::fixture("llama-bf16");
  ::setenv("HEADLAB_WEIGHTS", "mapped", 1);
  auto card = load_model(folder);
  ::unsetenv("HEADLAB_WEIGHTS");
  REQUIRE(card->mapped_bytes > 0);
  size_t free_bytes = 0, total_bytes = 0;
  REQUIRE(card_memory(0, free_bytes, total_bytes));  // the memory checks read it: they must not go blind
  CHECK(total_bytes >= free_bytes);
  CHECK(free_bytes > 0);
  move_to_device(*card, kCard);
  CHECK(card->mapped_bytes == 0);
  CHECK(card->module->tokens->weight.scalar_type() == torch::kBFloat16);
  CHECK(card->module->tokens->weight.is_cuda());
  auto cpu = load_model(folder);  // copied to float32
  const auto expected = headlab::test::hf::read_expected(folder);
  RunRequest request;
  request.ids = expected.ids;
  CHECK(relative_difference(run(*card, request)->logits, run(*cpu, request)->logits) < kCardTolerance);
}

TEST_CASE("card: generation with the KV cache draws the CPU's tokens", "[gpu]") {
  SKIP_WITHOUT_CARD();
  for (const char* name : {"gpt2", "llama", "qwen3", "gemma2", "gpt-oss", "bart"}) {
    DYNAMIC_SECTION(name) {
      const std::string folder = headlab::test::hf::fixture(name);
      const auto expected = headlab::test::hf::read_expected(folder);
      auto cpu = load_model(folder);
      auto card = on_card(folder);
      GenerateRequest request;
      request.prompt = expected.ids;
      if (cpu->config.kind == StackKind::EncoderDecoder) request.decoder_prompt = {expected.decoder_ids.front()};
      request.max_new = 8;
      const auto a = generate(*card, request), b = generate(*cpu, request);
      CHECK(a.tokens == b.tokens);
      REQUIRE(a.steps.size() == b.steps.size());
      for (size_t i = 0; i < a.steps.size(); ++i) {
        CHECK(relative_difference(a.steps[i].logits, b.steps[i].logits) < kCardTolerance);
        REQUIRE(a.steps[i].attention.size() == b.steps[i].attention.size());
        for (size_t l = 0; l < a.steps[i].attention.size(); ++l)
          CHECK(max_abs_diff(a.steps[i].attention[l], b.steps[i].attention[l]) < kCardTolerance);
      }
    }
  }
}

TEST_CASE("card: a gate re-runs from its layer on the card and equals a full run", "[gpu]") {
  SKIP_WITHOUT_CARD();
  const std::string folder = headlab::test::hf::fixture("llama");
  const auto expected = headlab::test::hf::read_expected(folder);
  auto card = on_card(folder);
  RunRequest request;
  request.ids = expected.ids;
  const auto base = run(*card, request);
  const int layers = card->module->layer_count(Stack::Decoder);
  RunRequest gated = request;
  auto& gates = gated.controls.at(Stack::Decoder, layers - 1).gates;
  gates.assign(static_cast<size_t>(card->config.decoder->attention.output_heads()), 1.0f);
  gates[0] = 0.0f;
  RunRequest partial = gated;
  partial.previous = base;
  const auto again = run(*card, partial), full = run(*card, gated);
  CHECK(again->layers_computed == 1);
  CHECK(relative_difference(again->logits, full->logits) < 1e-6);
  CHECK(relative_difference(again->logits, base->logits) > 1e-6);  // the gate changed something
}

TEST_CASE("card: a dataset analysis of the default model gives the CPU's report", "[gpu]") {
  SKIP_WITHOUT_CARD();
  const std::string folder = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  auto cpu = load_model(folder);
  auto card = on_card(folder);
  headlab::analysis::AnalyzeOptions o;
  o.data = {std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu"};
  o.settings.metrics = {"confidence", "positional", "rare", "syntactic"};
  o.settings.limit = 30;
  const auto a = headlab::analysis::analyze(*card, o).report, b = headlab::analysis::analyze(*cpu, o).report;
  CHECK(a.sentences == 30);
  REQUIRE(a.heads.size() == b.heads.size());
  for (size_t i = 0; i < a.heads.size(); ++i) {
    INFO("L" << a.heads[i].layer << " H" << a.heads[i].head);
    CHECK(a.heads[i].confidence == Approx(b.heads[i].confidence).epsilon(1e-5));
    CHECK(a.heads[i].positional_offset == b.heads[i].positional_offset);
    CHECK(a.heads[i].positional_share == Approx(b.heads[i].positional_share).epsilon(1e-6));
    CHECK(a.heads[i].rare_share == Approx(b.heads[i].rare_share).epsilon(1e-6));
    CHECK(a.heads[i].roles == b.heads[i].roles);
  }
}

TEST_CASE("card: the window's engine on the card shows the CPU's maps, predictions and relevance under gates and "
          "a counterfactual", "[gpu]") {
  SKIP_WITHOUT_CARD();
  const std::string folder = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  headlab::app::WorkbenchEngine cpu_engine, card_engine;
  cpu_engine.use(load_model(folder), folder);
  const auto summary = card_engine.use(on_card(folder), folder);
  CHECK(summary.device == "cuda:0");
  headlab::app::RunInput in;
  in.text = "The cat sat on the [MASK] because it was tired.";
  in.relevance.enabled = true;
  in.relevance.flow = true;
  in.counterfactual = "The dog ran to the [MASK] because it was hungry.";
  in.take = {{}, {0.0f, 1.0f}};  // layer 1 head 1 from the counterfactual
  auto& gates = in.controls.at(Stack::Encoder, 3).gates;
  gates.assign(8, 1.0f);
  gates[2] = 0.0f;  // a gated run: its outputs are compared with the base run's (p_base, KL)
  const auto a = card_engine.run(in, nullptr, {}), b = cpu_engine.run(in, nullptr, {});
  REQUIRE(a->attentions.size() == b->attentions.size());
  for (size_t l = 0; l < b->attentions[0].layers.size(); ++l) {
    const auto& x = a->attentions[0].layers[l].stages[static_cast<int>(headlab::app::Stage::U)];
    const auto& y = b->attentions[0].layers[l].stages[static_cast<int>(headlab::app::Stage::U)];
    REQUIRE(x.data->size() == y.data->size());
    double worst = 0;
    for (size_t i = 0; i < y.data->size(); ++i) worst = std::max(worst, double(std::abs((*x.data)[i] - (*y.data)[i])));
    INFO("layer " << l);
    CHECK(worst < kCardTolerance);
  }
  REQUIRE(a->outputs.size() == b->outputs.size());
  for (size_t i = 0; i < b->outputs.size(); ++i) {
    REQUIRE(a->outputs[i].top.size() == b->outputs[i].top.size());
    for (size_t k = 0; k < b->outputs[i].top.size(); ++k) {
      CHECK(a->outputs[i].top[k].id == b->outputs[i].top[k].id);
      CHECK(a->outputs[i].top[k].p == Approx(b->outputs[i].top[k].p).margin(kCardTolerance));
      CHECK(a->outputs[i].top[k].p_base == Approx(b->outputs[i].top[k].p_base).margin(kCardTolerance));
    }
    CHECK(a->outputs[i].kl == Approx(b->outputs[i].kl).margin(kCardTolerance));
  }
  REQUIRE(a->relevance);
  REQUIRE(b->relevance);
  CHECK(a->relevance->target == Approx(b->relevance->target).epsilon(kCardTolerance));
  CHECK(a->relevance->relative_residual < kCardTolerance);
  REQUIRE(a->relevance->input.size() == b->relevance->input.size());
  for (size_t t = 0; t < b->relevance->input.size(); ++t)
    CHECK(a->relevance->input[t] == Approx(b->relevance->input[t]).margin(kCardTolerance * std::abs(b->relevance->target)));
}

TEST_CASE("card: evaluation batches run on the card and give the CPU's loss", "[gpu]") {
  SKIP_WITHOUT_CARD();
  const std::string folder = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  // Plain text: the UD sample's sentences.
  headlab::test::TempDir dir("card-evaluate");
  {
    std::ifstream in(std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu");
    std::ofstream out(dir.str("text.txt"));
    for (std::string line; std::getline(in, line);)
      if (line.rfind("# text = ", 0) == 0) out << line.substr(9) << "\n";
  }
  std::string output;
  const std::string base =
      std::string(HEADLAB_BINARY) + " evaluate --model " + folder + " --data " + dir.str("text.txt") + " --device ";
  REQUIRE(headlab::test::run_command(base + "cpu", output) == 0);
  const std::string on_cpu = output;
  REQUIRE(headlab::test::run_command(base + "cuda", output) == 0);
  INFO("cpu:\n" << on_cpu << "\ncard:\n" << output);
  // "… loss 6.103  top-1  17.9%  (196 targets)": equal to the digits printed (float32 on both).
  auto loss_line = [](const std::string& text) {
    const auto at = text.find("loss ");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  CHECK_FALSE(loss_line(on_cpu).empty());
  CHECK(loss_line(output) == loss_line(on_cpu));
}

TEST_CASE("card: training on the card follows the CPU's losses and writes a CPU-readable folder", "[gpu]") {
  SKIP_WITHOUT_CARD();
  using namespace headlab::core::train;
  headlab::test::TempDir dir("card-train");
  auto config = load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json");
  config.vocab_size = static_cast<int>(headlab::test::kSyntheticVocab);
  const auto specials = headlab::test::synthetic_specials();
  const auto data = make_lm_dataset(headlab::test::synthetic_documents(4, 3000, 7), 32, Objective::Mlm, specials, 0.05);
  auto options = [&](const std::string& out, torch::Device device) {
    auto o = headlab::test::quick_train_options(out, Objective::Mlm, 40);
    o.device = device;
    return o;
  };
  const auto cpu = train_model(config, data, specials, options(dir.str("cpu"), torch::kCPU));
  const auto card = train_model(config, data, specials, options(dir.str("card"), kCard));
  REQUIRE(card.finished);
  // The same start, batches and masks: the losses part only by float32 rounding over 40 steps.
  CHECK(card.last_eval.loss == Approx(cpu.last_eval.loss).epsilon(1e-3));
  auto a = load_model(dir.str("cpu")), b = load_model(dir.str("card"));
  CHECK(model_device(*b).is_cpu());
  const auto wa = a->module->named_parameters(), wb = b->module->named_parameters();
  double worst = 0;
  for (const auto& item : wa) worst = std::max(worst, max_abs_diff(item.value(), wb[item.key()]));
  CHECK(worst < 1e-2);
  // A checkpoint made on the card resumes there, and is refused on the CPU by name.
  auto resume = options(dir.str("card"), torch::kCPU);
  resume.resume = true;
  resume.steps = 60;
  CHECK_THROWS_WITH(train_model(config, data, specials, resume), Catch::Contains("device"));
}

TEST_CASE("card: head gates train beside the model on the card and gate it as on the CPU", "[gpu]") {
  SKIP_WITHOUT_CARD();
  using namespace headlab::core::train;
  const std::string folder = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  auto cpu = load_model(folder);
  auto card = on_card(folder);
  const auto specials = special_tokens(*cpu->tokenizer);
  std::vector<std::vector<int64_t>> docs;
  for (const char* sentence : {"the old man looked at the sea and the sky , and the sea was calm .",
                               "he thought of the boy who had helped him with the lines and the bait ."})
    docs.push_back(cpu->tokenizer->encode(sentence, false).ids);
  const auto data = make_lm_dataset(docs, 16, Objective::Mlm, specials, 0.0);
  PruneOptions p;
  p.steps = 5;
  p.batch_size = 2;
  p.lambda = 0.1;
  const auto gates = train_head_gates(card->module, data.train, Objective::Mlm, specials, p);
  REQUIRE(gates.layers.size() == 5);
  // The trained gates, built on the CPU, gate the card's model as they gate the CPU's.
  const auto tensors = gate_tensors(gates);
  const auto on_cpu = evaluate_examples(cpu->module, data.train, Objective::Mlm, specials, {}, 1, 2, &tensors);
  const auto there = evaluate_examples(card->module, data.train, Objective::Mlm, specials, {}, 1, 2, &tensors);
  CHECK(there.loss == Approx(on_cpu.loss).epsilon(kCardTolerance));
}

TEST_CASE("card: convert measures the quality before and after on the card as on the CPU", "[gpu]") {
  SKIP_WITHOUT_CARD();
  headlab::test::TempDir dir("card-convert");
  {
    std::ofstream text(dir.str("text.txt"));
    for (int i = 0; i < 20; ++i) text << "the old man looked at the sea and the sky , and the sea was calm and blue .\n";
  }
  auto convert = [&](const std::string& device) {
    std::string output;
    const std::string cmd = std::string(HEADLAB_BINARY) + " convert --model " + HEADLAB_SOURCE_DIR +
                            "/assets/models/default --to gqa --groups 2 --data " + dir.str("text.txt") + " --out " +
                            dir.str("gqa-" + device) + " --device " + device;
    const int rc = headlab::test::run_command(cmd, output);
    INFO(output);
    REQUIRE(rc == 0);
    // "… loss A → B, top-1 …"
    const auto at = output.find("loss ");
    REQUIRE(at != std::string::npos);
    std::istringstream in(output.substr(at + 5));
    double before = 0, after = 0;
    std::string arrow;
    in >> before >> arrow >> after;
    return std::make_pair(before, after);
  };
  const auto cpu = convert("cpu"), card = convert("cuda");
  CHECK(card.first == Approx(cpu.first).epsilon(kCardTolerance));
  CHECK(card.second == Approx(cpu.second).epsilon(kCardTolerance));
  // The folder written after the card's measurement opens on the CPU and equals the CPU's.
  auto a = load_model(dir.str("gqa-cpu")), b = load_model(dir.str("gqa-cuda"));
  const auto wa = a->module->named_parameters(), wb = b->module->named_parameters();
  for (const auto& item : wa) CHECK(max_abs_diff(item.value(), wb[item.key()]) == 0.0);
}


TEST_CASE("card: fast precision multiplies BF16 weights as stored and uses TF32, within BF16's rounding of exact", "[gpu]") {
  SKIP_WITHOUT_CARD();
  const std::string folder = headlab::test::hf::fixture("llama-bf16");
  ::setenv("HEADLAB_WEIGHTS", "mapped", 1);
  auto card = load_model(folder);
  ::unsetenv("HEADLAB_WEIGHTS");
  move_to_device(*card, kCard);
  auto cpu = load_model(folder);  // float32 copies: the exact reference
  RunRequest request;
  request.ids = headlab::test::hf::read_expected(folder).ids;
  request.capture = kCaptureWeights;
  const auto reference = run(*cpu, request);
  std::shared_ptr<const Trace> fast;
  {
    PrecisionScope scope(Precision::fast);
    fast = run(*card, request);
  }
  const auto exact = run(*card, request);  // the scope ended: exact again, TF32 off
  CHECK(relative_difference(exact->logits, reference->logits) < kCardTolerance);
  const double logits = relative_difference(fast->logits, reference->logits);
  double maps = 0;
  for (size_t l = 0; l < reference->decoder.layers.size(); ++l)
    maps = std::max(maps, max_abs_diff(fast->decoder.layers[l].self.weights, reference->decoder.layers[l].self.weights));
  INFO("fast on the card: logits " << logits << " relative, maps " << maps);
  CHECK(logits > 1e-5);  // BF16 products really ran
  CHECK(logits < 3e-2);
  CHECK(maps < 2e-2);
  // A float32 model: TF32 products, within TF32's 10-bit mantissa of exact.
  auto f32 = on_card(headlab::test::hf::fixture("llama"));
  auto f32_cpu = load_model(headlab::test::hf::fixture("llama"));
  PrecisionScope scope(Precision::fast);
  CHECK(relative_difference(run(*f32, request)->logits, run(*f32_cpu, request)->logits) < 1e-2);
  CHECK(at::globalContext().float32MatmulPrecision() == at::Float32MatmulPrecision::HIGH);  // TF32 allowed
}

TEST_CASE("card: CP-ALS sweeps on the card give the CPU's decomposition", "[gpu]") {
  SKIP_WITHOUT_CARD();
  torch::manual_seed(7);
  // A rank-6 tensor plus noise, decomposed at rank 5 (the truncated start leaves nothing to chance: 5 ≤ I, J).
  const torch::Tensor t = cp_reconstruct(torch::randn({12, 6}, torch::kFloat64), torch::randn({10, 6}, torch::kFloat64),
                                         torch::randn({4, 6}, torch::kFloat64)) +
                          0.01 * torch::randn({4, 12, 10}, torch::kFloat64);
  CpOptions o;
  o.max_iterations = 60;
  const CpResult cpu = cp_als(t, 5, o);
  o.device = kCard;
  const CpResult card = cp_als(t, 5, o);
  CHECK(card.a.is_cpu());  // the factors come back to the host
  CHECK(std::abs(card.iterations - cpu.iterations) <= 1);  // the tolerance stop may fall one sweep apart
  CHECK(card.relative_error == Approx(cpu.relative_error).epsilon(1e-6));
  CHECK(relative_difference(cp_reconstruct(card.a, card.b, card.c), cp_reconstruct(cpu.a, cpu.b, cpu.c)) < 1e-6);
}
