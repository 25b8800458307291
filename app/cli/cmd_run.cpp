// `headlab run --model DIR (--ids 1,2,3 | --text "…") [--gate L.H=V …] --out DUMP.safetensors`
#include "app/cli/cli.h"
#include "core/controls.h"
#include "core/run.h"
#include "core/safetensors.h"
#include "core/system_info.h"

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <iostream>
#include <memory>
#include <sstream>

namespace headlab::app {
namespace {

struct RunOptions {
  std::string model, ids, decoder_ids, text, out, capture = "weights";
  std::vector<std::string> gates;
  bool add_special = true;
};

std::vector<int64_t> parse_ids(const std::string& text, const char* what) {
  std::vector<int64_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      ids.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw UsageError(std::string(what) + ": '" + item + "' is not an integer id (expected e.g. 1,2,3)");
    }
  }
  if (ids.empty()) throw UsageError(std::string(what) + ": no ids");
  return ids;
}

// Adds one attention call's stages to the dump under `prefix` ("" for the main stack).
void dump_stages(std::vector<std::pair<std::string, torch::Tensor>>& out, const std::string& prefix, int layer,
                 const core::AttentionStages& s, bool all) {
  const std::string l = "." + std::to_string(layer);
  out.emplace_back(prefix + "attentions" + l, core::value_weights(s).contiguous());
  if (!all) return;
  out.emplace_back(prefix + "attention_logits" + l, s.logits);
  out.emplace_back(prefix + "attention_mixed_logits" + l, s.mixed_logits);
  out.emplace_back(prefix + "attention_weights" + l, s.weights);
  out.emplace_back(prefix + "head_outputs" + l, s.head_outputs);
}

int run_command(const RunOptions& options) {
  core::use_batch_threads();
  auto model = core::load_model(options.model);
  core::RunRequest request;
  if (!options.ids.empty()) {
    request.ids = parse_ids(options.ids, "--ids");
  } else {
    if (!model->tokenizer) throw UsageError(options.model + " has no tokenizer: give --ids instead of --text");
    request.ids = model->tokenizer->encode(options.text, options.add_special).ids;
    if (request.ids.empty()) throw UsageError("--text produced no tokens");
  }
  const bool enc_dec = model->config.kind == core::StackKind::EncoderDecoder;
  if (enc_dec) {
    if (options.decoder_ids.empty()) throw UsageError("an encoder-decoder model needs --decoder-ids");
    request.decoder_ids = parse_ids(options.decoder_ids, "--decoder-ids");
  }
  const std::string main_stack = model->config.kind == core::StackKind::Encoder ? "encoder" : "decoder";
  const int layers = model->module->layer_count(main_stack);
  const auto& attention = (main_stack == "encoder" ? model->config.encoder : model->config.decoder)->attention;
  for (const auto& text : options.gates) {
    core::GateSpec spec;
    try {
      spec = core::parse_gate_spec(text);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    if (spec.layer >= layers) throw UsageError("gate '" + text + "': the model has " + std::to_string(layers) + " layers");
    if (spec.head >= attention.output_heads())
      throw UsageError("gate '" + text + "': layers have " + std::to_string(attention.output_heads()) + " heads");
    auto& controls = request.controls.at(main_stack, spec.layer);
    controls.gates.resize(attention.output_heads(), 1.0f);
    controls.gates[spec.head] = spec.value;
  }
  const bool all = options.capture == "all";
  request.capture = all ? core::kCaptureAll : core::kCaptureWeights | core::kCaptureMixedWeights;
  auto trace = core::run(*model, request);

  std::vector<std::pair<std::string, torch::Tensor>> dump;
  dump.emplace_back("logits", trace->logits.contiguous());
  auto add_stack = [&](const core::StackTrace& stack, const std::string& prefix, bool cross) {
    for (size_t l = 0; l < stack.layers.size(); ++l) {
      dump_stages(dump, prefix, static_cast<int>(l), stack.layers[l].self, all);
      if (cross) dump_stages(dump, "cross_", static_cast<int>(l), stack.layers[l].cross, all);
    }
    if (all)
      for (size_t l = 0; l < stack.hidden.size(); ++l)
        dump.emplace_back(prefix + "hidden_states." + std::to_string(l), stack.hidden[l].contiguous());
  };
  if (enc_dec) {
    add_stack(trace->encoder, "encoder_", false);
    add_stack(trace->decoder, "decoder_", true);
  } else {
    add_stack(trace->main_stack(), "", false);
  }
  std::string ids_text;
  for (size_t i = 0; i < request.ids.size(); ++i) ids_text += (i ? "," : "") + std::to_string(request.ids[i]);
  core::save_safetensors(options.out, dump, core::DType::F32, {{"model", options.model}, {"ids", ids_text}});
  std::cout << "wrote " << options.out << ": " << request.ids.size() << " tokens, " << dump.size() << " tensors\n";
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a model on ids or text and dump logits and every head's attention");
  cmd->add_option("--model", options->model, "Model folder")->required();
  auto* ids = cmd->add_option("--ids", options->ids, "Comma-separated token ids, e.g. 1,2,3");
  auto* text = cmd->add_option("--text", options->text, "Text to tokenize with the model's tokenizer");
  ids->excludes(text);
  cmd->add_option("--decoder-ids", options->decoder_ids, "Decoder ids (encoder-decoder models)");
  cmd->add_option("--gate", options->gates, "Gate of a head, LAYER.HEAD=VALUE in [0,1] (repeatable)");
  cmd->add_option("--capture", options->capture, "weights (default) or all stages")
      ->check(CLI::IsMember({"weights", "all"}));
  cmd->add_flag("!--no-special-tokens", options->add_special, "Do not add [CLS]/[SEP]/BOS around --text");
  cmd->add_option("--out", options->out, "Output .safetensors dump")->required();
  cmd->callback([options, &action] {
    action = [options] {
      if (options->ids.empty() && options->text.empty()) throw UsageError("give --ids or --text");
      return run_command(*options);
    };
  });
}

}  // namespace headlab::app
