#include "app/work/generation_job.h"

#include "core/model/generate.h"
#include "core/memory_budget.h"
#include "core/model/model.h"
#include "core/tokenizer/framing.h"
#include "core/model/run.h"
#include "core/model/model_store.h"
#include "core/stop_tokens.h"
#include "core/tokenizer/token_lookup.h"

#include <torch/torch.h>

#include <cctype>
#include <stdexcept>

namespace headlab::app {
namespace {

// A prompt given as token ids ("5, 17, 3" or "5 17 3"), each below the vocabulary size.
std::vector<int64_t> prompt_ids(const std::string& text, int64_t vocab) {
  std::vector<int64_t> ids;
  std::string item;
  auto flush = [&] {
    if (item.empty()) return;
    size_t used = 0;
    int64_t id = -1;
    try {
      id = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || id < 0 || id >= vocab)
      throw std::runtime_error("the model has no tokenizer: give the prompt as token ids below " + std::to_string(vocab) +
                               ", e.g. 5, 17, 3 ('" + item + "' is not one)");
    ids.push_back(id);
    item.clear();
  };
  for (char c : text) {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c)))
      flush();
    else
      item += c;
  }
  flush();
  if (ids.empty()) throw std::runtime_error("the model has no tokenizer: give the prompt as token ids, e.g. 5, 17, 3");
  return ids;
}


// The generation as a task: every step published as it is made, the last one with its Δp.
std::shared_ptr<const GenerationResult> generate_text(Task& task, const GenerationRequest& request, core::ModelStore& models) {
  if (request.model_folder.empty())
    throw std::runtime_error("generation needs a model folder (a random-weight model has none)");
  task.phase("loading the model");
  const auto shared_model = models.get(request.model_folder);
  core::Model& model = *shared_model;
  task.check();
  task.phase("writing");
  const core::Tokenizer* tok = model.tokenizer.get();
  const bool enc_dec = model.config.kind == core::StackKind::EncoderDecoder;
  // Without a tokenizer the prompt is token ids and tokens are shown as "#id", as `headlab generate
  // --ids` reads them.
  auto token_text = [&](int64_t id) { return core::token_name(tok, id); };

  core::GenerateRequest g;
  const GenerationSettings& settings = request.settings;
  g.max_new = settings.max_new;
  g.sampling = {settings.temperature, settings.top_k, settings.top_p, static_cast<uint64_t>(settings.seed)};
  g.controls = request.controls;
  g.cancel = task.stop_flag();
  if (tok) {
    g.prompt = enc_dec ? core::encoder_input_ids(model.config, *tok, settings.prompt)
                       : core::causal_prompt_ids(model.config, *tok, settings.prompt);
    if (g.prompt.empty()) throw std::runtime_error("the prompt is empty: type the text to continue");
  } else {
    g.prompt = prompt_ids(settings.prompt, model.config.vocab_size);
  }
  if (enc_dec) {
    auto begin = tok ? core::decoder_start_id(model.config, *tok) : model.config.decoder_start_id;
    if (!begin && tok) throw std::runtime_error("the tokenizer has no begin token for the decoder");
    g.decoder_prompt = {begin ? *begin : 0};
  }
  g.stop_ids = core::generation_stop_ids(request.model_folder, tok, enc_dec, model.config.vocab_size);
  g.forced = request.keep;

  auto result = std::make_shared<GenerationResult>();
  result->model_folder = request.model_folder;
  result->controls = request.controls;
  result->prompt_is_ids = tok == nullptr;
  for (int64_t id : enc_dec ? g.decoder_prompt : g.prompt) result->prompt_tokens.push_back(token_text(id));
  if (model.config.decoder) {
    result->bytes_per_token = core::kv_cache_bytes_per_token(model.config);
    result->mha_bytes_per_token = core::kv_cache_bytes_per_token_as_mha(model.config);
  }
  std::vector<int64_t> generated;
  std::vector<std::vector<int64_t>> top_ids;  // per step, the ids of `top`
  auto on_step = [&](const core::GenerationStep& step) {
    GeneratedStep s;
    s.id = step.token;
    s.token = token_text(step.token);
    const auto probs = torch::softmax(step.logits, -1);
    const auto top = probs.topk(std::min<int64_t>(5, probs.size(0)));
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < std::get<1>(top).size(0); ++i) {
      ids.push_back(std::get<1>(top)[i].item<int64_t>());
      s.top.emplace_back(token_text(ids.back()), std::get<0>(top)[i].item<float>());
    }
    top_ids.push_back(std::move(ids));
    s.kept = generated.size() < request.keep.size();
    for (const auto& row : step.attention) {
      const auto r = row.to(torch::kCPU).contiguous();
      s.heads = static_cast<int>(r.size(0));
      s.keys = static_cast<int>(r.size(1));
      s.rows.emplace_back(r.data_ptr<float>(), r.data_ptr<float>() + r.numel());
    }
    for (const auto& share : step.sink_share) {
      std::vector<float> shares;
      if (share.defined()) {
        const auto c = share.to(torch::kCPU, torch::kFloat).contiguous();
        shares.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
      }
      s.sinks.push_back(std::move(shares));
    }
    s.cache_bytes = step.cache_bytes;
    generated.push_back(step.token);
    // Each step publishes a new snapshot: the view never sees a result being written.
    auto next = std::make_shared<GenerationResult>(*result);
    next->steps.push_back(std::move(s));
    next->text = tok ? tok->decode(generated, true) : std::string();
    result = next;
    task.progress(static_cast<int64_t>(result->steps.size()), g.max_new);
    task.publish(std::shared_ptr<const GenerationResult>(result));
  };
  const auto out = core::generate(model, g, on_step);
  auto done = std::make_shared<GenerationResult>(*result);
  done->stopped = out.stopped;
  done->notes = out.notes;
  if (!request.controls.is_default() && !out.tokens.empty() && out.stopped != "cancelled") {
    // Δp: one run of the whole text without the controls gives each step's distribution at the same
    // prefix (position p predicts token p + 1).
    core::RunRequest base;
    std::vector<int64_t> sequence = enc_dec ? g.decoder_prompt : g.prompt;
    sequence.insert(sequence.end(), out.tokens.begin(), out.tokens.end() - 1);
    base.ids = enc_dec ? g.prompt : sequence;
    if (enc_dec) base.decoder_ids = sequence;
    base.capture = core::kCaptureNone;
    const int64_t first = int64_t(sequence.size()) - int64_t(out.tokens.size());
    for (int64_t p = first; p < int64_t(sequence.size()); ++p) base.logit_positions.push_back(p);
    const auto probs = torch::softmax(core::run(model, base)->logits, -1);  // [steps, V]
    for (size_t s = 0; s < done->steps.size(); ++s)
      for (int64_t id : top_ids[s]) done->steps[s].top_base.push_back(probs[int64_t(s)][id].item<float>());
  }
  return done;
}

}  // namespace


void GenerationJob::start(const GenerationRequest& request) {
  TaskOptions o;
  o.name = "generating";
  o.lane = "generate";
  o.kind = "generate";
  o.replaces = {"generate"};
  launch<GenerationResult>(o, [request, models = models_](Task& task) { return generate_text(task, request, *models); });
}

}  // namespace headlab::app
