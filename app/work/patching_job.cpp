#include "app/work/patching_job.h"

#include "analysis/logit_attribution.h"
#include "analysis/patching.h"
#include "core/model/model.h"
#include "core/model/model_store.h"
#include "core/model/run.h"
#include "core/tokenizer/framing.h"
#include "core/tokenizer/token_lookup.h"

#include <torch/torch.h>

#include <cctype>
#include <cmath>
#include <stdexcept>

namespace headlab::app {
namespace {

// A text as the Input view frames it, or as token ids without a tokenizer.
std::vector<int64_t> counterfactual_ids(const core::Model& model, const std::string& text) {
  if (model.tokenizer) return core::model_encoding(model.config, *model.tokenizer, text).ids;
  std::vector<int64_t> ids;
  std::string item;
  for (char c : text + " ") {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!item.empty()) ids.push_back(core::token_id(nullptr, model.config.vocab_size, item));
      item.clear();
    } else {
      item += c;
    }
  }
  return ids;
}

std::vector<std::vector<float>> normalised(const analysis::PatchTable& t, double clean, double corrupt) {
  std::vector<std::vector<float>> out(t.size());
  for (size_t l = 0; l < t.size(); ++l)
    for (const auto& unit : t[l])
      out[l].push_back(clean == corrupt || std::isnan(unit[0]) ? NAN : float((unit[0] - corrupt) / (clean - corrupt)));
  return out;
}

std::shared_ptr<const PatchingResult> run_patching(Task& task, const PatchingRequest& request, core::ModelStore& models) {
  if (request.model_folder.empty())
    throw std::runtime_error("patching needs a model folder (a random-weight model has none)");
  task.phase("loading the model");
  const auto shared_model = models.get(request.model_folder);
  core::Model& model = *shared_model;
  task.check();
  std::vector<int64_t> clean = request.clean_ids;
  if (clean.empty()) clean = counterfactual_ids(model, request.clean_text);
  if (clean.empty()) throw std::runtime_error("patching: run a text in the Input view first");
  const auto& s = request.settings;
  auto base = std::make_shared<PatchingResult>();
  base->model_folder = request.model_folder;
  base->settings = s;
  base->clean_ids = clean;
  base->controls = request.controls;
  analysis::PatchRequest r;
  try {
    r.clean = clean;
    r.corrupt = counterfactual_ids(model, s.counterfactual);
    if (r.corrupt.size() != r.clean.size())
      throw std::invalid_argument("the counterfactual has " + std::to_string(r.corrupt.size()) + " tokens and the input " +
                                  std::to_string(r.clean.size()) + "; patching takes activations position by position, "
                                  "so both must tokenize to the same length");
    r.metric = analysis::metric_from_name(s.metric);
    r.site = core::site_from_name(s.site);
    if (!s.answer.empty()) r.answer = core::token_id(model.tokenizer.get(), model.config.vocab_size, s.answer);
    if (!s.wrong.empty()) r.wrong = core::token_id(model.tokenizer.get(), model.config.vocab_size, s.wrong);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("patching: ") + e.what());
  }
  r.controls = request.controls;
  r.cancel = task.stop_flag();
  r.position = analysis::default_position(model, r.clean);
  base->answer = r.answer;
  base->wrong = r.wrong;
  if (model.tokenizer) {
    if (r.answer >= 0) base->answer_token = core::token_name(model.tokenizer.get(), r.answer);
    if (r.wrong >= 0) base->wrong_token = core::token_name(model.tokenizer.get(), r.wrong);
  }
  // The direct logit attribution of the clean run, when the model's stream is a sum at the head.
  if (r.answer >= 0) {
    task.phase("direct logit attribution");
    core::RunRequest run;
    run.ids = r.clean;
    run.controls = r.controls;
    run.capture = core::kCaptureHeadOutputs | core::kCaptureResidual | core::kCapturePatchSites;
    run.cancel = task.stop_flag();
    try {
      const auto trace = core::run(model, run);
      const int64_t at = r.position >= 0 ? r.position : int64_t(r.clean.size()) - 1;
      const auto dla = analysis::logit_attribution(model, *trace, at, r.answer, r.wrong);
      for (const auto& layer : dla.heads) base->dla.emplace_back(layer.begin(), layer.end());
    } catch (const std::invalid_argument& e) {
      base->dla_note = e.what();
    }
  }
  task.phase(std::string("patching ") + s.site + " from the counterfactual");
  auto make = [&](const analysis::PatchResult& p, bool finished) {
    auto out = std::make_shared<PatchingResult>(*base);
    out->position = p.position;
    out->clean = p.clean;
    out->corrupt = p.corrupt;
    out->exact = normalised(p.exact, p.clean, p.corrupt);
    out->attribution = normalised(p.attribution, p.clean, p.corrupt);
    out->correlation = p.correlation;
    out->notes = p.notes;
    for (const auto& layer : p.exact)
      for (const auto& unit : layer) {
        ++out->total;
        out->done += !std::isnan(unit[0]);
      }
    out->finished = finished;
    return std::shared_ptr<const PatchingResult>(out);
  };
  r.partial = [&](const analysis::PatchResult& p) { task.publish(make(p, false)); };
  r.progress = [&](int64_t done, int64_t total) {
    task.progress(done, total);
    return true;
  };
  try {
    return make(analysis::patch_activations(model, r), true);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("patching: ") + e.what());
  }
}

}  // namespace

void PatchingJob::start(const PatchingRequest& request) {
  TaskOptions o;
  o.name = "patching";
  o.lane = "patching";
  o.kind = "patching";
  o.replaces = {"patching"};
  launch<PatchingResult>(o, [request, models = models_](Task& task) { return run_patching(task, request, *models); });
}

}  // namespace headlab::app
