// The torch-free engine bridge and the worker: snapshots, incremental re-runs that share unchanged
// layers, Δp/KL against the unmodified model, newer requests superseding older ones.
#include "test_common.h"

#include "analysis/lrp.h"
#include "analysis/rollout.h"
#include "analysis/spectra.h"
#include "app/work/workbench_engine.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "app/document/controls_edit.h"
#include "app/work/worker.h"

#include <chrono>
#include <thread>

using namespace headlab::app;

namespace {

std::string config(const std::string& name) { return std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/" + name + ".json"; }

}  // namespace

TEST_CASE("the engine bridge turns a run into plain maps and predictions", "[app][engine]") {
  WorkbenchEngine engine;
  const ModelSummary m = engine.load_random(config("mha"), 1);
  REQUIRE(m.attentions.size() == 1);
  CHECK(m.random_weights);
  CHECK(m.masked_lm);
  const int layers = m.attentions[0].layers, heads = m.attentions[0].output_heads;
  RunInput in;
  in.text = "the cat sat on the [MASK] .";
  auto a = engine.run(in, nullptr, {});
  const int T = static_cast<int>(a->tokens.ids.size());
  CHECK(T == 7);
  CHECK(a->default_positions == std::vector<int>{5});
  REQUIRE(a->attentions[0].layers.size() == static_cast<size_t>(layers));
  const StageMaps& w = a->attentions[0].layers[0].stages[static_cast<int>(Stage::W)];
  CHECK(w.heads == heads);
  CHECK(w.rows == T);
  CHECK(w.cols == T);
  float row = 0;
  for (int k = 0; k < T; ++k) row += w.at(1, 3, k);
  CHECK(row == Approx(1.0f).epsilon(1e-4));
  // U is W without mixing: the same buffer.
  CHECK(a->attentions[0].layers[0].stages[static_cast<int>(Stage::U)].data == w.data);
  CHECK(a->attentions[0].layers[0].stages[static_cast<int>(Stage::J)].empty());
  REQUIRE(a->outputs.size() == 1);  // only the [MASK] goes through the LM head
  REQUIRE(a->output_at(5));
  CHECK(a->output_at(4) == nullptr);
  for (const auto& p : a->outputs[0].top) CHECK(p.p == Approx(p.p_base));
  CHECK(a->outputs[0].kl == Approx(0.0f).margin(1e-6));

  // Close a head in the last layer: earlier layers keep their buffers, the prediction moves.
  set_gate(in.controls, headlab::core::Stack::Encoder, layers - 1, 0, 0.0f, heads);
  auto b = engine.run(in, nullptr, {});
  CHECK(b->recomputed_from == layers - 1);
  CHECK(b->attentions[0].layers[0].stages[2].data == a->attentions[0].layers[0].stages[2].data);
  CHECK(b->attentions[0].layers[0].version == a->attentions[0].layers[0].version);
  REQUIRE(b->output_at(5));
  CHECK(b->output_at(5)->kl > 0.0f);
  float moved = 0;
  for (const auto& p : b->output_at(5)->top) moved += std::abs(p.p - p.p_base);
  CHECK(moved > 0.0f);

  // A pre-softmax swap in layer 0 changes layer 0's maps and every later layer.
  set_mix(in.controls, headlab::core::Stack::Encoder, 0, "pre", mix_preset(MixPreset::Swap, heads, 0, 1), heads);
  in.all_stages = true;
  auto c = engine.run(in, nullptr, {});
  CHECK(!c->attentions[0].layers[0].stages[static_cast<int>(Stage::J)].empty());
  const auto& cw = c->attentions[0].layers[0].stages[static_cast<int>(Stage::W)];
  const auto& cj = c->attentions[0].layers[0].stages[static_cast<int>(Stage::J)];
  CHECK(cw.at(0, 2, 3) != Approx(w.at(0, 2, 3)));
  CHECK(cw.at(0, 2, 3) == Approx(w.at(1, 2, 3)).epsilon(1e-4));  // head 0 now has head 1's weights
  CHECK(cj.heads == heads);
}

TEST_CASE("predictions at chosen positions equal those of a run over every position", "[app][engine]") {
  WorkbenchEngine engine, reference;
  const ModelSummary m = engine.load_random(config("mha"), 4);
  reference.load_random(config("mha"), 4);
  const int layers = m.attentions[0].layers, heads = m.attentions[0].output_heads;
  RunInput in;
  in.text = "the cat sat on the [MASK] because it was tired .";
  set_gate(in.controls, headlab::core::Stack::Encoder, 1, 2, 0.25f, heads);
  RunInput all = in;
  auto full = reference.run(in, nullptr, {});
  all.output_positions.resize(full->tokens.ids.size());
  for (size_t t = 0; t < all.output_positions.size(); ++t) all.output_positions[t] = static_cast<int>(t);
  full = reference.run(all, nullptr, {});
  REQUIRE(full->outputs.size() == full->tokens.ids.size());

  auto first = engine.run(in, nullptr, {});
  REQUIRE(first->outputs.size() == 1);
  // Another position with the same controls: only the head runs again.
  in.output_positions = {2, 7};
  auto moved = engine.run(in, nullptr, {});
  CHECK(moved->layers_computed == 0);
  CHECK(moved->attentions[0].layers[layers - 1].version == first->attentions[0].layers[layers - 1].version);
  REQUIRE(moved->outputs.size() == 2);
  for (const auto* s : {first.get(), moved.get()}) {
    for (const auto& out : s->outputs) {
      INFO("position " << out.position);
      const PositionOutput* ref = full->output_at(out.position);
      REQUIRE(ref);
      CHECK(out.kl == Approx(ref->kl).margin(1e-5));
      REQUIRE(out.top.size() == ref->top.size());
      for (size_t i = 0; i < out.top.size(); ++i) {
        CHECK(out.top[i].id == ref->top[i].id);
        CHECK(out.top[i].p == Approx(ref->top[i].p).epsilon(1e-4));
        CHECK(out.top[i].p_base == Approx(ref->top[i].p_base).epsilon(1e-4));
      }
    }
  }
  CHECK(moved->outputs[0].kl > 0.0f);
  // A position the text no longer has (the user shortened it) falls back to the [MASK].
  in.output_positions = {99};
  auto stale = engine.run(in, nullptr, {});
  REQUIRE(stale->outputs.size() == 1);
  CHECK(stale->outputs[0].position == 5);
  CHECK(stale->default_positions == std::vector<int>{5});
}

TEST_CASE("a Hugging Face encoder-decoder's decoder reads its text behind the start token", "[app][engine][seq2seq]") {
  for (const char* folder : {"t5", "bart"}) {
    INFO(folder);
    WorkbenchEngine engine;
    auto m = engine.load(std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/" + folder);
    REQUIRE(m.attentions.size() == 3);  // encoder, decoder, cross
    RunInput in;
    in.text = "a b c d e";
    in.decoder_text = "x y z";
    auto s = engine.run(in, nullptr, {});
    const int64_t start = std::string(folder) == "t5" ? 0 : 2;  // decoder_start_token_id
    REQUIRE(s->decoder_tokens.ids.size() == 4);
    CHECK(s->decoder_tokens.ids.front() == start);
    CHECK(s->decoder_tokens.special.front());
    CHECK(s->find(headlab::core::Stack::Decoder)->layers[0].stages[2].rows == 4);
    CHECK(s->find(headlab::core::Stack::Cross)->layers[0].stages[2].cols == 5);
    // Without a decoder text the decoder reads the encoder's, behind the start token too.
    in.decoder_text = "";
    in.text = "x";
    auto again = engine.run(in, nullptr, {});
    CHECK(again->decoder_tokens.ids.size() == 2);
  }
}

TEST_CASE("the engine handles encoder-decoder and talking-heads models", "[app][engine]") {
  WorkbenchEngine engine;
  auto m = engine.load_random(config("encoder-decoder"), 2);
  REQUIRE(m.attentions.size() == 3);
  CHECK(m.find(headlab::core::Stack::Cross) != nullptr);
  RunInput in;
  in.text = "a b c d e";
  in.decoder_text = "x y z";
  auto s = engine.run(in, nullptr, {});
  const auto* cross = s->find(headlab::core::Stack::Cross);
  REQUIRE(cross);
  CHECK(cross->layers[0].stages[2].rows == 3);
  CHECK(cross->layers[0].stages[2].cols == 5);
  CHECK(s->find(headlab::core::Stack::Decoder)->layers[0].stages[2].at(0, 0, 1) == 0.0f);  // causal
  REQUIRE(s->outputs.size() == 1);  // the decoder's last token
  CHECK(s->outputs[0].position == 2);

  auto th = engine.load_random(config("talking-heads"), 3);
  const auto& a = th.attentions[0];
  CHECK(a.talking_heads);
  in.all_stages = true;
  auto t = engine.run(in, nullptr, {});
  const auto& layer = t->attentions[0].layers[0];
  CHECK(layer.stages[0].heads == a.logit_heads);
  CHECK(layer.stages[1].heads == a.softmax_heads);
  CHECK(layer.stages[2].heads == a.softmax_heads);
  CHECK(layer.stages[3].heads == a.output_heads);
}

TEST_CASE("the worker publishes the newest request and reports errors", "[app][worker]") {
  WorkbenchWorker worker;
  worker.request_load({"", config("mha"), 0});
  RunInput in;
  for (int i = 0; i < 5; ++i) {
    in.text = "run number " + std::to_string(i) + " here";
    worker.request_run(in);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!worker.idle() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(worker.idle());
  REQUIRE(worker.snapshot());
  CHECK(worker.snapshot()->input.text == "run number 4 here");
  CHECK(worker.status().run_error.empty());
  CHECK(worker.status().load_error.empty());
  worker.request_load({"/nonexistent/model", "", 0});
  const auto load_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!worker.idle() && std::chrono::steady_clock::now() < load_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(worker.idle());
  CHECK(worker.status().load_error.find("/nonexistent/model") != std::string::npos);
  CHECK(worker.model());  // the previous model stays
}

TEST_CASE("the engine explains a run: LRP as the analysis computes it, rollout and flow, with the run's gates",
          "[app][engine][relevance]") {
  const std::string folder = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  WorkbenchEngine engine;
  engine.load(folder);
  RunInput in;
  in.text = "the cat sat on the [MASK] because it was tired .";
  in.relevance.enabled = true;
  in.relevance.flow = true;
  set_gate(in.controls, headlab::core::Stack::Encoder, 1, 3, 0.0f, 8);
  auto snap = engine.run(in, nullptr, {});
  REQUIRE(snap->relevance);
  const RelevanceResult& r = *snap->relevance;
  REQUIRE(r.error.empty());
  CHECK(r.position == snap->default_positions.at(0));  // the [MASK]
  CHECK(r.token == snap->output_at(r.position)->top.at(0).id);  // its top-1 token
  CHECK(r.token_text == snap->output_at(r.position)->top.at(0).token);

  // The same pass called directly on a model of its own: identical numbers.
  auto model = headlab::core::load_model(folder);
  const auto direct = headlab::analysis::lrp_relevance(*model, snap->tokens.ids, {}, in.controls);
  REQUIRE(direct.input.size() == r.input.size());
  for (size_t t = 0; t < r.input.size(); ++t) CHECK(r.input[t] == Approx(direct.input[t]).margin(1e-6));
  CHECK(r.heads.at(headlab::core::Stack::Encoder).at(2).at(5) == Approx(direct.heads.at(headlab::core::Stack::Encoder)[2][5]).margin(1e-6));
  CHECK(r.heads.at(headlab::core::Stack::Encoder).at(1).at(3) == 0.0);  // a closed head carries no relevance
  // Conservation (analysis/LRP.md): the input relevance and the constants add up to the logit.
  double sum = r.bias;
  for (double v : r.input) sum += v;
  CHECK(std::abs(sum - r.target) == Approx(r.residual).margin(1e-9));
  CHECK(r.relative_residual < 1e-5);  // float32; measured ≤ 1e-6
  // Rollout and flow read the run's maps with its gates: the gated run's U maps, recomputed here (the
  // gate closes layer 1's head 3's output, so every layer above it attends differently).
  headlab::core::RunRequest gated;
  gated.ids = snap->tokens.ids;
  gated.controls = in.controls;
  gated.capture = headlab::core::kCaptureMixedWeights;
  const auto trace = headlab::core::run(*model, gated);
  std::vector<torch::Tensor> maps;  // [heads, T, T] per layer
  for (const auto& layer : trace->encoder.layers) maps.push_back(headlab::core::value_weights(layer.self));
  // Rollout transcribed from Abnar & Zuidema 2020 with plain float64 loops: per layer the mean over
  // heads A, then 0.5·A + 0.5·I with rows renormalised, multiplied from the first layer up.
  const int64_t T = maps[0].size(1);
  std::vector<double> product(size_t(T * T), 0.0);
  for (int64_t i = 0; i < T; ++i) product[size_t(i * T + i)] = 1.0;
  for (const auto& layer : maps) {
    const auto a = layer.to(torch::kFloat64).mean(0).contiguous();  // [T, T]
    const double* m = a.data_ptr<double>();
    std::vector<double> step(size_t(T * T));
    for (int64_t i = 0; i < T; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < T; ++j) sum += step[size_t(i * T + j)] = 0.5 * m[i * T + j] + (i == j ? 0.5 : 0.0);
      for (int64_t j = 0; j < T; ++j) step[size_t(i * T + j)] /= sum;
    }
    std::vector<double> next(size_t(T * T), 0.0);  // step · product: this layer after the ones below
    for (int64_t i = 0; i < T; ++i)
      for (int64_t k = 0; k < T; ++k)
        for (int64_t j = 0; j < T; ++j) next[size_t(i * T + j)] += step[size_t(i * T + k)] * product[size_t(k * T + j)];
    product = next;
  }
  REQUIRE(r.rollout.size() == size_t(T));
  for (int64_t j = 0; j < T; ++j) CHECK(r.rollout[size_t(j)] == Approx(product[size_t(r.position * T + j)]).margin(1e-9));
  // Flow: the max-flow solver on the same gated maps gives the same values, each at most 1.
  const auto flow = headlab::analysis::attention_flow(maps, r.position);
  REQUIRE(r.flow.size() == flow.size());
  for (size_t t = 0; t < flow.size(); ++t) {
    CHECK(r.flow[t] == Approx(flow[t]).margin(1e-12));
    CHECK(r.flow[t] <= 1.0 + 1e-9);
  }
  // … and not the ungated maps': the gate moved them.
  std::vector<torch::Tensor> open_maps;
  headlab::core::RunRequest ungated = gated;
  ungated.controls = {};
  const auto open_trace = headlab::core::run(*model, ungated);
  for (const auto& layer : open_trace->encoder.layers) open_maps.push_back(headlab::core::value_weights(layer.self));
  const auto open_rollout = headlab::analysis::attention_rollout(open_maps).to(torch::kFloat64)[r.position];
  double apart = 0;
  for (int64_t j = 0; j < T; ++j) apart += std::abs(open_rollout[j].item<double>() - r.rollout[size_t(j)]);
  CHECK(apart > 1e-6);

  // Opening the head changes the explanation; a target outside the input is an error, not a throw.
  RunInput open = in;
  open.controls = {};
  open.relevance.flow = false;  // flow only when asked for (the slow part)
  auto opened = engine.run(open, nullptr, {});
  REQUIRE(opened->relevance);
  double moved = 0;
  for (size_t t = 0; t < r.input.size(); ++t) moved += std::abs(opened->relevance->input[t] - r.input[t]);
  CHECK(moved > 1e-6);
  CHECK(opened->relevance->flow.empty());
  CHECK(opened->relevance->rollout.size() == r.rollout.size());
  RunInput bad = in;
  bad.relevance.position = 99;
  auto failed = engine.run(bad, nullptr, {});
  REQUIRE(failed->relevance);
  CHECK(!failed->relevance->error.empty());
  CHECK(!failed->outputs.empty());  // the run itself still succeeded
  in.relevance.enabled = false;
  CHECK(!engine.run(in, nullptr, {})->relevance);
}

TEST_CASE("the engine gives the weights' key-query spectra and the input's logit spectra", "[app][engine][spectra]") {
  const std::string folder = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  WorkbenchEngine engine;
  const ModelSummary m = engine.load(folder);
  const auto& att = m.attentions.at(0);
  RunInput ask;
  ask.text = "the cat sat on the [MASK] .";
  CHECK(!engine.run(ask, nullptr, {})->weight_spectra);  // only when asked for
  ask.weight_spectra = true;
  const auto first = engine.run(ask, nullptr, {});
  REQUIRE(first->weight_spectra);
  CHECK(engine.run(ask, nullptr, {})->weight_spectra == first->weight_spectra);  // computed once, shared
  const auto& spectra = *first->weight_spectra;
  REQUIRE(spectra.size() == static_cast<size_t>(att.layers));
  const auto& head = spectra.at(2).heads.at(5);
  // σ_1 against an SVD of the [D, D] form built directly (the spectra take a QR shortcut).
  auto model = headlab::core::load_model(folder);
  const auto form = headlab::analysis::key_query_form(*model, headlab::core::Stack::Encoder, 2, 5);
  const auto sv = at::linalg_svdvals(form);
  const double sv0 = sv[0].item().toDouble(), sv_last = sv[att.key_size - 1].item().toDouble();
  CHECK(head.singular_values.at(0) == Approx(sv0).epsilon(1e-6));
  CHECK(head.singular_values.at(att.key_size - 1) == Approx(sv_last).epsilon(1e-4));

  RunInput in;
  for (int i = 0; i < 12; ++i) in.text += "the old man saw a small dog near the river bank . ";
  in.text += "[MASK] .";
  in.logit_spectra = true;
  auto snap = engine.run(in, nullptr, {});
  REQUIRE(snap->logit_spectra);
  const auto& layers = snap->logit_spectra->at(headlab::core::Stack::Encoder);
  REQUIRE(layers.size() == static_cast<size_t>(att.layers));
  const auto& s = layers.at(2).at(3).singular_values;
  const size_t T = snap->tokens.ids.size();
  REQUIRE(T > static_cast<size_t>(att.key_size) + 10);
  REQUIRE(s.size() == T);
  // The low-rank bottleneck: a T×T logit matrix Q Kᵀ of key size d_k < T has rank ≤ d_k (RoPE
  // rotates q and k but keeps d_k columns). Beyond d_k only float32 rounding is left (~3e-8 of σ_1);
  // the d_k-th direction stands well above it (8e-6 of σ_1 here: the trained head's spectrum falls
  // steeply, but all d_k directions are used).
  CHECK(s.at(att.key_size) < 1e-6 * s.at(0));
  CHECK(s.at(att.key_size - 1) > 20 * s.at(att.key_size));
  // Layer 3's query weights are zero (assets/README.md, "Shipped models"): every query is the same
  // bias vector b, so Q Kᵀ = 1 (K b)ᵀ has rank 1.
  const auto& nope = layers.at(3).at(2).singular_values;
  CHECK(nope.at(0) > 0);
  CHECK(nope.at(1) < 1e-6 * nope.at(0));
  in.logit_spectra = false;
  CHECK(!engine.run(in, nullptr, {})->logit_spectra);
}

TEST_CASE("the Output view's Δp and KL equal the formula on core's logits", "[app][engine]") {
  // The shipped default twice: the engine's copy and one run through core directly.
  const std::string folder = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  WorkbenchEngine engine;
  engine.load(folder);
  const auto model = headlab::core::load_model(folder);
  const int heads = model->config.encoder->attention.output_heads();
  RunInput in;
  in.text = "She opened the [MASK] and looked out at the garden.";
  // Gates that change the prediction: every head of the last two layers closed.
  for (int l = model->config.encoder->layers - 2; l < model->config.encoder->layers; ++l)
    for (int h = 0; h < heads; ++h) set_gate(in.controls, headlab::core::Stack::Encoder, l, h, 0.0f, heads);
  const auto snap = engine.run(in, nullptr, {});
  REQUIRE(snap->outputs.size() == 1);
  const PositionOutput& out = snap->outputs[0];

  headlab::core::RunRequest request;
  request.ids = snap->tokens.ids;
  request.capture = headlab::core::kCaptureNone;
  const auto base = headlab::core::run(*model, request);
  request.controls = in.controls;
  const auto gated = headlab::core::run(*model, request);
  // log-softmax in float64 at the shown position: p = gated, q = unmodified.
  const auto log_p = torch::log_softmax(gated->logits[out.position].to(torch::kFloat64), -1);
  const auto log_q = torch::log_softmax(base->logits[out.position].to(torch::kFloat64), -1);
  // KL(unmodified ‖ gated) = Σ_v q_v (log q_v − log p_v): what the prediction lost.
  const double kl = (log_q.exp() * (log_q - log_p)).sum().item<double>();
  CHECK(kl > 0.01);  // the gates do change the output
  CHECK(out.kl == Approx(kl).epsilon(1e-3).margin(1e-6));
  REQUIRE(!out.top.empty());
  // The top list is the gated model's top-k, each with its probability then and now.
  const auto top = std::get<1>(log_p.topk(static_cast<int64_t>(out.top.size())));
  double moved = 0;
  for (size_t i = 0; i < out.top.size(); ++i) {
    INFO("rank " << i);
    CHECK(out.top[i].id == top[int64_t(i)].item<int64_t>());
    CHECK(out.top[i].p == Approx(std::exp(log_p[out.top[i].id].item<double>())).epsilon(1e-4));
    CHECK(out.top[i].p_base == Approx(std::exp(log_q[out.top[i].id].item<double>())).epsilon(1e-4));
    moved += std::abs(out.top[i].p - out.top[i].p_base);
  }
  CHECK(moved > 0.01);

  // Without controls the run is its own reference: Δp and KL are exactly 0 at every position, on a
  // long input too (no second rounding of the same probabilities).
  RunInput plain;
  for (int i = 0; i < 36; ++i) plain.text += "She opened the window and looked out at the garden. ";
  for (int t = 0; t < 400; ++t) plain.output_positions.push_back(t);
  const auto same = engine.run(plain, nullptr, {});
  REQUIRE(same->outputs.size() > 300);  // every position of the text (the ones past its end dropped)
  for (const auto& po : same->outputs) {
    CHECK(po.kl == 0.0f);
    for (const auto& pr : po.top) CHECK(pr.p == pr.p_base);
  }
}

TEST_CASE("snapshots mark the keys each layer's pattern forbids, for views to shade", "[app][engine]") {
  // Gemma 2 fixture: decoder layers 0 and 2 slide (the query and 3 keys before it), layer 1 is global.
  WorkbenchEngine engine;
  engine.load(std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/gemma2");
  RunInput in;
  in.text = "a b c d e f g h i";
  const auto snap = engine.run(in, nullptr, {});
  const auto& layers = snap->attentions.at(0).layers;
  REQUIRE(layers.size() == 3);
  const int T = static_cast<int>(snap->tokens.ids.size());
  REQUIRE(T >= 6);
  for (int l = 0; l < 3; ++l) {
    INFO("layer " << l);
    REQUIRE(layers[size_t(l)].masked);
    const StageMaps& w = layers[size_t(l)].stages[static_cast<int>(Stage::W)];
    for (int q = 0; q < T; ++q)
      for (int k = 0; k < T; ++k) {
        const bool forbidden = k > q || (l != 1 && q - k > 3);
        CHECK(layers[size_t(l)].is_masked(q, k) == forbidden);
        if (forbidden) CHECK(w.at(0, q, k) == 0.0f);  // a forbidden key gets no weight
      }
  }
  // A bidirectional encoder without a pattern forbids nothing.
  WorkbenchEngine encoder;
  encoder.load_random(config("mha"), 1);
  const auto open = encoder.run(in, nullptr, {});
  for (const auto& layer : open->attentions.at(0).layers) CHECK(!layer.masked);
}

TEST_CASE("heads taken from a counterfactual equal core's patched run, live and incremental", "[app][engine][patching]") {
  // The shipped default twice: the engine's copy and one run through core with the patch by hand.
  const std::string folder = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  WorkbenchEngine engine;
  engine.load(folder);
  const auto model = headlab::core::load_model(folder);
  const int layers = model->config.encoder->layers;
  RunInput in;
  in.text = "She opened the [MASK] and looked out at the garden.";
  in.counterfactual = "She closed the [MASK] and looked out at the street.";
  const auto base = engine.run(in, nullptr, {});
  // Half of head 3 and all of head 5 of the last layer from the counterfactual.
  in.take.assign(size_t(layers), {});
  in.take[size_t(layers - 1)] = {0, 0, 0, 0.5f, 0, 1.0f};
  const auto taken = engine.run(in, nullptr, {});
  CHECK(taken->counterfactual_note.empty());
  CHECK(taken->recomputed_from == layers - 1);
  REQUIRE(taken->outputs.size() == 1);

  headlab::core::RunRequest cf;
  cf.ids = engine.tokenize(in.counterfactual).ids;
  cf.capture = headlab::core::kCaptureHeadOutputs;
  const auto counterfactual = headlab::core::run(*model, cf);
  headlab::core::RunRequest request;
  request.ids = taken->tokens.ids;
  request.capture = headlab::core::kCaptureNone;
  headlab::core::ActivationPatch patch;
  patch.stack = headlab::core::Stack::Encoder;
  patch.layer = layers - 1;
  patch.site = headlab::core::Site::Z;
  patch.value = counterfactual->encoder.layers[size_t(layers - 1)].self.head_outputs;
  patch.weight = torch::tensor({0.0f, 0.0f, 0.0f, 0.5f, 0.0f, 1.0f, 0.0f, 0.0f}).view({-1, 1, 1});
  request.patches = {patch};
  const auto patched = headlab::core::run(*model, request);
  const auto p = torch::softmax(patched->logits[taken->outputs[0].position].to(torch::kFloat64), -1);
  double moved = 0;
  for (const auto& pr : taken->outputs[0].top) {
    CHECK(pr.p == Approx(p[pr.id].item<double>()).epsilon(1e-4));
    moved += std::abs(pr.p - pr.p_base);
  }
  CHECK(moved > 1e-4);  // the counterfactual's heads do change the prediction
  // The same weights again: the same patches, nothing recomputed (the last layer's maps are kept).
  const auto again = engine.run(in, nullptr, {});
  CHECK(again->attentions[0].layers[size_t(layers - 1)].version == taken->attentions[0].layers[size_t(layers - 1)].version);
  // Weights back to 0: the unmodified model.
  in.take.clear();
  const auto back = engine.run(in, nullptr, {});
  for (const auto& pr : back->outputs[0].top) CHECK(pr.p == pr.p_base);
  // A counterfactual of another length is refused with the reason, the run unpatched.
  in.take.assign(size_t(layers), {1.0f});
  in.counterfactual = "She closed it.";
  const auto refused = engine.run(in, nullptr, {});
  CHECK_THAT(refused->counterfactual_note, Catch::Contains("same length"));
  for (const auto& pr : refused->outputs[0].top) CHECK(pr.p == pr.p_base);
  (void)base;
}

namespace {

// 150 words: more tokens than kThumbnailSide, so thumbnails pool blocks of 3 × 3.
std::string long_text() {
  std::string text;
  for (int i = 0; i < 150; ++i) text += "w" + std::to_string(i * 37 % 101) + " ";
  return text;
}

// The largest of each block of a full map, written out here (not core::pool_map).
float block_max(const StageMaps& full, int h, int i, int j, int bt, int bs) {
  float best = -INFINITY;
  for (int q = i * bt; q < std::min(full.rows, (i + 1) * bt); ++q)
    for (int k = j * bs; k < std::min(full.cols, (j + 1) * bs); ++k) best = std::max(best, full.at(h, q, k));
  return best;
}

}  // namespace

TEST_CASE("large maps come as thumbnails but for the open layer, which stays exact", "[app][engine][thumbnails]") {
  WorkbenchEngine engine;
  engine.load_random(config("gqa"), 3);  // a causal decoder: 2 layers, 8 heads
  RunInput in;
  in.text = long_text();
  in.full_maps_budget = 0;  // every map whole: the reference
  const auto full = engine.run(in, nullptr, {});
  const int T = static_cast<int>(full->tokens.ids.size());
  REQUIRE(T > kThumbnailSide);
  CHECK(!full->maps.pooled());

  in.full_maps_budget = 1;  // any map is over it
  in.open_stack = headlab::core::Stack::Decoder;
  in.open_layer = 0;
  in.relevance.enabled = true;  // rollout from a run that keeps no whole map
  const auto thumbs = engine.run(in, nullptr, {});
  REQUIRE(thumbs->maps.pooled());
  CHECK(thumbs->maps.thumbnail_side == kThumbnailSide);
  const int bt = static_cast<int>(headlab::core::pooling_block(T, kThumbnailSide));
  const int t = static_cast<int>(headlab::core::pooled_length(T, kThumbnailSide));
  REQUIRE(bt == 3);
  for (int l = 0; l < 2; ++l) {
    INFO("layer " << l);
    const LayerMaps& lf = full->attentions[0].layers[size_t(l)];
    const LayerMaps& lt = thumbs->attentions[0].layers[size_t(l)];
    for (const Stage s : {Stage::W, Stage::U}) {
      const StageMaps& f = lf.stages[static_cast<int>(s)];
      const StageMaps& p = lt.stages[static_cast<int>(s)];
      CHECK(p.full_rows == T);
      CHECK(p.full_cols == T);
      if (l == 0) {  // the open layer: the same numbers as the full run
        CHECK(!p.pooled());
        REQUIRE(p.data->size() == f.data->size());
        CHECK(*p.data == *f.data);
        continue;
      }
      REQUIRE(p.pooled());
      REQUIRE(p.rows == t);
      REQUIRE(p.cols == t);
      for (int h = 0; h < p.heads; h += 3)
        for (int i = 0; i < t; ++i)
          for (int j = 0; j < t; ++j) REQUIRE(p.at(h, i, j) == block_max(f, h, i, j, bt, bt));
      // The causal mask at the thumbnail's size: a cell is masked when its whole block is.
      REQUIRE(lt.masked);
      REQUIRE(lt.masked->size() == size_t(t) * t);
      for (int i = 0; i < t; ++i)
        for (int j = 0; j < t; ++j) {
          bool all = true;
          for (int q = i * bt; q < std::min(T, (i + 1) * bt); ++q)
            for (int k = j * bt; k < std::min(T, (j + 1) * bt); ++k) all = all && lf.is_masked(q, k);
          REQUIRE(lt.is_masked(i, j) == all);
        }
    }
  }
  // The predictions do not depend on how the maps were kept.
  REQUIRE(thumbs->outputs.size() == full->outputs.size());
  CHECK(thumbs->outputs[0].top[0].p == full->outputs[0].top[0].p);
  // Rollout from the streamed maps equals rollout over the whole maps of the full run.
  REQUIRE(thumbs->relevance);
  REQUIRE(thumbs->relevance->error.empty());
  std::vector<torch::Tensor> whole;
  for (const auto& layer : full->attentions[0].layers) {
    const StageMaps& u = layer.stages[static_cast<int>(Stage::U)];
    whole.push_back(torch::from_blob(const_cast<float*>(u.data->data()), {u.heads, u.rows, u.cols}, torch::kFloat).clone());
  }
  const auto rollout = headlab::analysis::attention_rollout(whole);
  const auto& r = *thumbs->relevance;
  REQUIRE(r.rollout.size() == size_t(T));
  for (int k = 0; k < T; ++k) CHECK(r.rollout[size_t(k)] == Approx(rollout[r.position][k].item<double>()).margin(1e-9));

  // Opening layer 1 runs that layer alone; layer 0 becomes a thumbnail. The explanation is the
  // same (same input, controls and target): kept, not computed again.
  in.open_layer = 1;
  const auto moved = engine.run(in, nullptr, {});
  CHECK(moved->layers_computed == 1);
  CHECK(moved->relevance == thumbs->relevance);
  CHECK(moved->attentions[0].layers[0].pooled());
  CHECK(!moved->attentions[0].layers[1].pooled());
  CHECK(*moved->attentions[0].layers[1].stages[2].data == *full->attentions[0].layers[1].stages[2].data);
  // Layer 0, whole before, is now the thumbnail of its whole maps.
  CHECK(moved->attentions[0].layers[0].stages[2].rows == t);
  CHECK(*moved->attentions[0].layers[0].stages[2].data == *thumbnail(full->attentions[0].layers[0].stages[2], kThumbnailSide).data);

  // A gate changes the explanation.
  set_gate(in.controls, headlab::core::Stack::Decoder, 1, 0, 0.0f, 8);
  const auto gated = engine.run(in, nullptr, {});
  REQUIRE(gated->relevance);
  CHECK(gated->relevance != moved->relevance);
  CHECK(gated->relevance->heads.at(headlab::core::Stack::Decoder).at(1).at(0) == 0.0);  // a closed head carries none
  in.controls = {};
  in.relevance.enabled = false;

  // A figure of every head pools the open layer alike.
  const StageMaps pooled_open = thumbnail(moved->attentions[0].layers[1].stages[2], kThumbnailSide);
  CHECK(*pooled_open.data == *thumbs->attentions[0].layers[1].stages[2].data);

  // Under the budget nothing is pooled.
  in.full_maps_budget = kFullMapsBudget;
  const auto small = engine.run(in, nullptr, {});
  CHECK(!small->maps.pooled());
  CHECK(!small->attentions[0].layers[0].pooled());
}
