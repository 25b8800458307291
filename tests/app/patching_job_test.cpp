// The Patching view's run through the Controller, headless: its tables are analysis::patch_activations'
// normalised effects on the same input, counterfactual and controls; a script waits for it; the
// session keeps its settings; heads taken from the counterfactual re-run the model live; errors name
// what is wrong; a newly opened model drops the last model's result.
#include "test_common.h"

#include "settle.h"

#include "analysis/patching.h"
#include "app/document/controller.h"
#include "app/document/controls_edit.h"
#include "core/model/model.h"
#include "core/tokenizer/token_lookup.h"

#include <cmath>
#include <cstdlib>

using namespace headlab::app;
using headlab::test::settle;
using headlab::test::TempDir;

TEST_CASE("the Patching view's run equals patch_activations and fills in head by head", "[app][patching]") {
  TempDir dir("patching_job");
  ::setenv("XDG_STATE_HOME", dir.str("state").c_str(), 1);
  const std::string folder = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  Controller c;
  c.start(folder, "");
  settle(c);
  REQUIRE(c.doc().model);
  c.execute(cmd::SetText{"she opened the [MASK] and looked out at the garden ."});
  settle(c);
  // Before a counterfactual is set, Patch says what is missing.
  CHECK_THROWS_WITH(c.execute(cmd::RunPatching{}), Catch::Contains("counterfactual"));
  cmd::SetPatching set;
  set.counterfactual = "she closed the [MASK] and looked out at the street .";
  set.answer = "door";
  set.wrong = "window";
  c.execute(set);
  c.execute(cmd::RunPatching{});
  settle(c);
  const auto& r = c.doc().patching;
  REQUIRE(r);
  CHECK(c.doc().patching_job.error.empty());
  CHECK(r->finished);
  CHECK(r->done == r->total);
  CHECK(r->total == 5 * 8);

  // The same through analysis directly.
  const auto model = headlab::core::load_model(folder);
  headlab::analysis::PatchRequest direct;
  direct.clean = c.doc().snapshot->tokens.ids;
  direct.corrupt = model->tokenizer->encode(*set.counterfactual, true).ids;
  direct.answer = headlab::core::token_id(model->tokenizer.get(), model->config.vocab_size, "door");
  direct.wrong = headlab::core::token_id(model->tokenizer.get(), model->config.vocab_size, "window");
  direct.position = 3;  // the [MASK]
  const auto expected = headlab::analysis::patch_activations(*model, direct);
  CHECK(r->position == 3);
  CHECK(r->clean == Approx(expected.clean).margin(1e-6));
  CHECK(r->corrupt == Approx(expected.corrupt).margin(1e-6));
  const auto normalised = expected.normalised(expected.exact);
  REQUIRE(r->exact.size() == normalised.size());
  for (size_t l = 0; l < normalised.size(); ++l)
    for (size_t h = 0; h < normalised[l].size(); ++h) {
      INFO("L" << l << " H" << h);
      CHECK(r->exact[l][h] == Approx(normalised[l][h][0]).margin(1e-4));
      CHECK(std::isfinite(r->attribution[l][h]));
    }
  // The result names what it measured, so that the view marks it when the input or the Mixer moves on.
  CHECK(r->clean_ids == c.doc().snapshot->tokens.ids);
  CHECK(same_controls(r->controls, c.doc().session.controls));
  // The default's LM head has a transform: no DLA, and the view says why.
  CHECK(r->dla.empty());
  CHECK_THAT(r->dla_note, Catch::Contains("transform"));

  // The session keeps the settings; a head taken from the counterfactual re-runs the model live.
  CHECK(c.doc().session.patching.settings.counterfactual == *set.counterfactual);
  const auto before = c.doc().snapshot;
  c.execute(cmd::TakeFromCounterfactual{4, 2, 1.0f});
  settle(c);
  CHECK(c.doc().session.patching.take.size() == 5);
  CHECK(c.doc().snapshot != before);
  CHECK(c.doc().snapshot->recomputed_from == 4);
  CHECK(c.doc().snapshot->outputs[0].kl > 0);
  CHECK_THROWS_WITH(c.execute(cmd::TakeFromCounterfactual{7, 0, 1.0f}), Catch::Contains("not in the model"));
  cmd::TakeFromCounterfactual reset;
  reset.reset = true;
  c.execute(reset);
  settle(c);
  CHECK(c.doc().session.patching.take.empty());
  CHECK(c.doc().snapshot->outputs[0].kl == 0.0f);

  // A saved session measures its patching again when it is opened.
  c.execute(cmd::SaveSession{dir.str("patching.json")});
  {
    Controller d;
    d.start("", dir.str("patching.json"));
    settle(d);
    REQUIRE(d.doc().patching);
    CHECK(d.doc().patching->finished);
    REQUIRE(d.doc().patching->exact.size() == r->exact.size());
    for (size_t l = 0; l < r->exact.size(); ++l)
      for (size_t h = 0; h < r->exact[l].size(); ++h) CHECK(d.doc().patching->exact[l][h] == Approx(r->exact[l][h]).margin(1e-5));
    // Measured again from the session's text, tokenized as the Input view tokenizes it.
    CHECK(d.doc().patching->clean_ids == d.doc().snapshot->tokens.ids);
  }
  // A result saved stale — a gate and the text changed after Patch — comes back as it was on
  // screen, measured with the gates and text it was measured with, so the view marks it stale again.
  c.execute(cmd::SetGate{headlab::core::Stack::Encoder, 0, 1, 0.0f});
  c.execute(cmd::SetText{"she opened the [MASK] and looked out at the sea .", std::nullopt, true});
  settle(c);
  c.execute(cmd::SaveSession{dir.str("stale.json")});
  {
    Controller d;
    d.start("", dir.str("stale.json"));
    settle(d);
    REQUIRE(d.doc().patching);
    for (size_t l = 0; l < r->exact.size(); ++l)
      for (size_t h = 0; h < r->exact[l].size(); ++h) CHECK(d.doc().patching->exact[l][h] == Approx(r->exact[l][h]).margin(1e-5));
    CHECK(d.doc().patching->clean_ids == r->clean_ids);
    CHECK(d.doc().patching->clean_ids != d.doc().snapshot->tokens.ids);
    CHECK_FALSE(same_controls(d.doc().patching->controls, d.doc().session.controls));
  }

  // A counterfactual of another length fails the run with the reason, and nothing else changes.
  set.counterfactual = "she closed it .";
  c.execute(set);
  c.execute(cmd::RunPatching{});
  settle(c);
  CHECK_THAT(c.doc().patching_job.error, Catch::Contains("same length"));
}

TEST_CASE("a patching run of the model open before never fills the next model's view", "[app][patching]") {
  TempDir dir("patching_job_open");
  ::setenv("XDG_STATE_HOME", dir.str("state").c_str(), 1);
  const std::string assets = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/";
  Controller c;
  c.start(assets + "default", "");
  settle(c);
  REQUIRE(c.doc().model);
  // A long input: the sweep is still under way when the next model opens.
  std::string text;
  for (int i = 0; i < 20; ++i) text += "she opened the door and looked out at the garden . ";
  c.execute(cmd::SetText{text});
  settle(c);
  REQUIRE(c.doc().snapshot);
  cmd::SetPatching set;
  set.counterfactual = text;
  set.counterfactual->replace(4, 6, "closed");
  set.answer = "door";
  set.wrong = "window";
  c.execute(set);
  REQUIRE(c.doc().snapshot->input.text == text);
  c.execute(cmd::RunPatching{});
  REQUIRE(c.doc().patching_job.running);
  c.execute(cmd::OpenModel{assets + "induction"});
  settle(c);
  REQUIRE(c.doc().model->folder == assets + "induction");
  INFO(c.doc().patching_job.error);
  CHECK(c.doc().patching_job.error.empty());
  CHECK_FALSE(c.doc().patching);
  CHECK_FALSE(c.doc().patching_job.running);
}
