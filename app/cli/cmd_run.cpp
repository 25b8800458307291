// `headlab run --model DIR (--ids 1,2,3 | --text "…") [--gate L.H=V …] [--lrp [--lrp-target POS[:ID]]]
//  [--rollout] [--logit-spectra] --out DUMP.safetensors`
#include "analysis/logit_attribution.h"
#include "analysis/lrp.h"
#include "analysis/rollout.h"
#include "analysis/spectra.h"
#include "app/cli/cli.h"
#include "app/cli/cli_args.h"
#include "app/cli/cli_checks.h"
#include "core/asset_paths.h"
#include "core/controls.h"
#include "core/model/run.h"
#include "core/model/safetensors_torch.h"
#include "core/model/system_info.h"
#include "core/tokenizer/framing.h"
#include "core/tokenizer/token_lookup.h"
#include "core/tokenizer_files.h"

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

namespace headlab::app {
namespace {

struct RunOptions {
  std::string device;  // --device
  std::string model, ids, decoder_ids, text, out, capture = "weights";
  std::vector<std::string> gates;
  bool add_special = true;
  bool lrp = false;
  std::string lrp_target;  // "POS" or "POS:ID"; implies --lrp
  bool rollout = false;        // attention rollout [T, T] and flow [T] (Abnar & Zuidema 2020)
  bool logit_spectra = false;  // singular values of each head's T×S logit matrix
  bool force = false;          // replace an existing --out
  bool by_ids = false;         // --ids given (else --text)
  std::string dla;             // ANSWER[,WRONG]: direct logit attribution and the logit lens
  int64_t dla_position = -1;   // −1: the last position
};


// --lrp-target POS[:ID], checked against the output length and the vocabulary.
analysis::LrpTarget parse_lrp_target(const std::string& text, int64_t positions, int64_t vocab) {
  if (text.empty()) return {};
  auto number = [&](const std::string& item) {
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used == item.size() && v >= 0) return static_cast<int64_t>(v);
    } catch (const std::exception&) {
    }
    throw UsageError("--lrp-target: '" + text + "' is not POS or POS:ID (non-negative integers, e.g. 3 or 3:17)");
  };
  analysis::LrpTarget target;
  const auto colon = text.find(':');
  target.position = number(text.substr(0, colon));
  if (colon != std::string::npos) target.token = number(text.substr(colon + 1));
  if (target.position >= positions)
    throw UsageError("--lrp-target: position " + std::to_string(target.position) + " is outside the input (0.." +
                     std::to_string(positions - 1) + ")");
  if (target.token >= vocab)
    throw UsageError("--lrp-target: token " + std::to_string(target.token) + " is outside the vocabulary (size " +
                     std::to_string(vocab) + ")");
  return target;
}

std::string format_number(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", v);
  return buffer;
}

torch::Tensor float_tensor(const std::vector<double>& values) {
  return torch::tensor(std::vector<float>(values.begin(), values.end()), torch::kFloat32);
}

// Adds one attention call's stages to the dump under `prefix` ("" for the main stack).
void dump_stages(std::vector<std::pair<std::string, torch::Tensor>>& out, const std::string& prefix, int layer,
                 const core::AttentionStages& s, bool all) {
  const std::string l = "." + std::to_string(layer);
  out.emplace_back(prefix + "attentions" + l, core::value_weights(s).contiguous());
  // Learned sinks: `attentions` rows sum to 1 − this share [h, T], as transformers returns them.
  if (s.sink_share.defined()) out.emplace_back(prefix + "sink_share" + l, s.sink_share.contiguous());
  if (!all) return;
  out.emplace_back(prefix + "attention_logits" + l, s.logits);
  out.emplace_back(prefix + "attention_mixed_logits" + l, s.mixed_logits);
  out.emplace_back(prefix + "attention_weights" + l, s.weights);
  out.emplace_back(prefix + "head_outputs" + l, s.head_outputs);
}

// --dla ANSWER[,WRONG]: each component's direct share of the logit difference (dla [L, H], dla_embed,
// dla_mlp [L], dla_biases, dla_rest) and the logit lens (logit_lens [L + 1]), printed as tables.
void add_dla(core::Model& model, const core::Trace& trace, const RunOptions& options,
             std::vector<std::pair<std::string, torch::Tensor>>& dump, std::map<std::string, std::string>& metadata) {
  const auto comma = options.dla.find(',');
  const int64_t answer = parse_token(model, options.dla.substr(0, comma), "--dla");
  const int64_t wrong = comma == std::string::npos ? -1 : parse_token(model, options.dla.substr(comma + 1), "--dla");
  const int64_t T = static_cast<int64_t>(trace.ids.size());
  const int64_t position = options.dla_position < 0 ? T - 1 : options.dla_position;
  analysis::LogitAttribution a;
  try {
    a = analysis::logit_attribution(model, trace, position, answer, wrong);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  auto token = [&](int64_t id) {
    return model.tokenizer ? "'" + core::token_name(model.tokenizer.get(), id) + "' (" + std::to_string(id) + ")"
                           : std::to_string(id);
  };
  std::vector<torch::Tensor> rows;
  for (const auto& layer : a.heads) rows.push_back(float_tensor(layer));
  dump.emplace_back("dla", torch::stack(rows));
  dump.emplace_back("dla_embed", float_tensor({a.embed}));
  if (!a.mlps.empty()) dump.emplace_back("dla_mlp", float_tensor(a.mlps));
  dump.emplace_back("dla_biases", float_tensor({a.biases}));
  dump.emplace_back("dla_rest", float_tensor({a.rest}));
  std::vector<double> lens;
  for (const auto& row : a.lens) lens.push_back(row.value);
  dump.emplace_back("logit_lens", float_tensor(lens));
  metadata["dla_position"] = std::to_string(position);
  metadata["dla_answer"] = std::to_string(answer);
  metadata["dla_wrong"] = std::to_string(wrong);
  metadata["dla_value"] = format_number(a.value);
  std::cout << "direct logit attribution at position " << position << ": " << (wrong >= 0 ? "logit(" : "logit ")
            << token(answer) << (wrong >= 0 ? ") − logit(" + token(wrong) + ")" : "") << " = " << format_number(a.value)
            << " (final-norm scale " << format_number(a.scale) << ")\n  embeddings " << format_number(a.embed) << "\n";
  for (size_t l = 0; l < a.heads.size(); ++l) {
    std::cout << "  layer " << l << ":";
    for (size_t h = 0; h < a.heads[l].size(); ++h) std::cout << " H" << h << " " << format_number(a.heads[l][h]);
    if (l < a.mlps.size()) std::cout << "  | mlp " << format_number(a.mlps[l]);
    std::cout << "\n";
  }
  std::cout << "  output biases " << format_number(a.biases) << ", final-norm and LM-head biases " << format_number(a.rest)
            << "\nlogit lens (the stream after each layer through the final norm and LM head):\n";
  for (const auto& row : a.lens) {
    std::cout << "  after " << row.layer << " layer" << (row.layer == 1 ? "" : "s") << ": " << format_number(row.value) << "  top:";
    for (const auto& [id, p] : row.top) std::cout << " " << token(id) << " " << format_number(p);
    std::cout << "\n";
  }
  for (const auto& note : a.notes) std::cout << "note: " << note << "\n";
}

int run_command(const RunOptions& options) {
  core::use_batch_threads();
  auto model = load_model_on(options.model, options.device);
  core::RunRequest request;
  if (options.by_ids) {
    request.ids = parse_ids(options.ids, "--ids");
  } else {
    const auto* tok = model->tokenizer.get();
    if (!tok) throw UsageError(core::no_tokenizer(options.model) + ": give --ids instead of --text");
    // As every command and the window read a text (core::model_encoding), unless asked for the bare ids.
    // A token the model has no embedding for is refused by name (core::check_encoding_fits).
    core::Encoding encoding;
    try {
      if (options.add_special) {
        encoding = core::model_encoding(model->config, *tok, options.text);
      } else {
        encoding = tok->encode(options.text, false);
        core::check_encoding_fits(model->config, *tok, encoding);
      }
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(options.model + ": --text: " + e.what());
    }
    request.ids = require_tokens(encoding.ids, "--text");
  }
  const bool enc_dec = model->config.kind == core::StackKind::EncoderDecoder;
  if (enc_dec) {
    if (options.decoder_ids.empty()) throw UsageError("an encoder-decoder model needs --decoder-ids");
    request.decoder_ids = parse_ids(options.decoder_ids, "--decoder-ids");
  } else if (!options.decoder_ids.empty()) {
    throw UsageError("--decoder-ids is for encoder-decoder models; " + options.model + " has one stack, which reads " +
                     "--ids or --text alone");
  }
  const core::Stack main_stack = model->config.kind == core::StackKind::Encoder ? core::Stack::Encoder : core::Stack::Decoder;
  apply_gates(*model, main_stack, options.gates, request.controls);
  const bool lrp = options.lrp || !options.lrp_target.empty();
  analysis::LrpTarget lrp_target;
  if (lrp)
    lrp_target = parse_lrp_target(options.lrp_target,
                                  static_cast<int64_t>(enc_dec ? request.decoder_ids.size() : request.ids.size()),
                                  model->config.vocab_size);
  const bool all = options.capture == "all";
  request.capture = all ? core::kCaptureAll : core::kCaptureWeights | core::kCaptureMixedWeights;
  if (options.logit_spectra) request.capture |= core::kCaptureLogits | core::kCaptureMixedLogits;
  if (!options.dla.empty())
    request.capture |= core::kCaptureHeadOutputs | core::kCaptureResidual | core::kCapturePatchSites;
  auto trace = core::run(*model, request);

  std::vector<std::pair<std::string, torch::Tensor>> dump;
  dump.emplace_back("logits", trace->logits.contiguous());
  auto add_stack = [&](const core::StackTrace& stack, const std::string& prefix, bool cross) {
    for (size_t l = 0; l < stack.layers.size(); ++l) {
      dump_stages(dump, prefix, static_cast<int>(l), stack.layers[l].self, all);
      if (cross) dump_stages(dump, "cross_", static_cast<int>(l), stack.layers[l].cross, all);
      if (stack.layers[l].experts.defined())  // a mixture of experts: each token's experts [T, k]
        dump.emplace_back(prefix + "experts." + std::to_string(l), stack.layers[l].experts.contiguous());
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
  std::map<std::string, std::string> metadata = dump_metadata(options.model, "ids", request.ids);
  int64_t lrp_position = -1;  // the position LRP explained, once resolved
  if (lrp) {
    // analysis/LRP.md: raw head relevance per layer, input relevance per position, and the conservation check.
    const auto result = analysis::lrp_relevance(*model, request.ids, lrp_target, request.controls, request.decoder_ids);
    auto add_heads = [&](core::Stack key, const std::string& prefix) {
      auto it = result.heads.find(key);
      if (it == result.heads.end()) return;
      for (size_t l = 0; l < it->second.size(); ++l)
        dump.emplace_back(prefix + "lrp." + std::to_string(l), float_tensor(it->second[l]));
    };
    if (enc_dec) {
      add_heads(core::Stack::Encoder, "encoder_");
      add_heads(core::Stack::Decoder, "decoder_");
      add_heads(core::Stack::Cross, "cross_");
      dump.emplace_back("encoder_lrp_input", float_tensor(result.input));
      dump.emplace_back("decoder_lrp_input", float_tensor(result.decoder_input));
    } else {
      add_heads(main_stack, "");
      dump.emplace_back("lrp_input", float_tensor(result.input));
    }
    double input_total = 0;
    for (double v : result.input) input_total += v;
    for (double v : result.decoder_input) input_total += v;
    metadata["lrp_position"] = std::to_string(result.position);
    lrp_position = result.position;
    metadata["lrp_token"] = std::to_string(result.token);
    metadata["lrp_target"] = format_number(result.target);
    metadata["lrp_bias"] = format_number(result.bias);
    metadata["lrp_residual"] = format_number(result.residual);
    std::cout << "lrp: f = " << format_number(result.target) << " (logit of token " << result.token << " at position "
              << result.position << "); input " << format_number(input_total) << " + bias "
              << format_number(result.bias) << ", conservation residual " << format_number(result.residual) << " ("
              << format_number(result.relative_residual()) << " of |f|)\n";
  }
  if (options.rollout) {
    // Abnar & Zuidema 2020, per self-attention stack: rollout [T, T] and the flow into one position
    // (the LRP target's when --lrp is given, else the last), so both explanations sit side by side.
    auto add_rollout = [&](const core::StackTrace& stack, const std::string& prefix, int64_t position) {
      std::vector<torch::Tensor> maps;
      for (const auto& layer : stack.layers) maps.push_back(core::value_weights(layer.self));
      dump.emplace_back(prefix + "rollout", analysis::attention_rollout(maps).to(torch::kFloat32).contiguous());
      dump.emplace_back(prefix + "flow", float_tensor(analysis::attention_flow(maps, static_cast<int>(position))));
    };
    const int64_t last = static_cast<int64_t>((enc_dec ? request.decoder_ids : request.ids).size()) - 1;
    const int64_t position = lrp_position >= 0 ? lrp_position : last;
    metadata["flow_position"] = std::to_string(position);
    if (enc_dec) {
      add_rollout(trace->encoder, "encoder_", static_cast<int64_t>(request.ids.size()) - 1);
      add_rollout(trace->decoder, "decoder_", position);
    } else {
      add_rollout(trace->main_stack(), "", position);
    }
  }
  if (options.logit_spectra) {
    // Bhojanapalli et al. 2020: a head's T×S logit matrix has rank ≤ its key size.
    auto add_spectra = [&](const core::StackTrace& stack, const std::string& prefix, bool cross) {
      for (size_t l = 0; l < stack.layers.size(); ++l) {
        const auto& stages = cross ? stack.layers[l].cross : stack.layers[l].self;
        std::vector<torch::Tensor> rows;
        for (const auto& spectrum : analysis::logit_spectra(stages))
          rows.push_back(torch::tensor(spectrum.singular_values, torch::kFloat64).to(torch::kFloat32));
        dump.emplace_back(prefix + "logit_singular_values." + std::to_string(l), torch::stack(rows));
      }
    };
    if (enc_dec) {
      add_spectra(trace->encoder, "encoder_", false);
      add_spectra(trace->decoder, "decoder_", false);
      add_spectra(trace->decoder, "cross_", true);
    } else {
      add_spectra(trace->main_stack(), "", false);
    }
  }
  if (!options.dla.empty()) add_dla(*model, *trace, options, dump, metadata);
  core::save_safetensors(options.out, dump, core::DType::F32, metadata);
  std::cout << "wrote " << options.out << ": " << request.ids.size() << " tokens, " << dump.size() << " tensors\n";
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", command_description("run"));
  cmd->add_option("--model", options->model, "Model folder (default: the shipped default model)");
  add_device_option(cmd, options->device);
  auto* ids = cmd->add_option("--ids", options->ids, "Comma-separated token ids, e.g. 1,2,3");
  auto* text = cmd->add_option("--text", options->text, "Text to tokenize with the model's tokenizer");
  ids->excludes(text);
  cmd->add_option("--decoder-ids", options->decoder_ids, "Decoder ids (encoder-decoder models)");
  cmd->add_option("--gate", options->gates, "Gate of a head, LAYER.HEAD=VALUE in [0,1] (repeatable)");
  cmd->add_option("--capture", options->capture, "weights (default) or all stages")
      ->check(CLI::IsMember({"weights", "all"}));
  cmd->add_flag("--lrp", options->lrp,
                 "Add LRP relevance (analysis/LRP.md): lrp.{l} [H] per layer and lrp_input [T]");
  cmd->add_option("--lrp-target", options->lrp_target,
                  "Logit to explain, POS[:ID], the position and the token id (default: first [MASK] or last position, top-1 token); implies --lrp");
  cmd->add_flag("--rollout", options->rollout,
                 "Add attention rollout [T, T] and flow [T] into the LRP target (or last) position (Abnar & Zuidema 2020)");
  cmd->add_flag("--logit-spectra", options->logit_spectra,
                 "Add logit_singular_values.{l} [H, min(T, S)]: each head's T×S logit matrix's singular values");
  auto* dla = cmd->add_option("--dla", options->dla,
                  "Direct logit attribution of ANSWER[,WRONG] (ids or tokens): each head's, FFN's and the embeddings' "
                  "share of the logit difference (dla [L, H], dla_embed, dla_mlp [L]) and the logit lens (logit_lens [L+1])");
  cmd->add_option("--dla-position", options->dla_position, "Position --dla reads (default: the last)")
      ->check(non_negative())
      ->needs(dla);
  cmd->add_flag("!--no-special-tokens", options->add_special,
                "Read --text's bare ids, without the special tokens the model reads around a text ([CLS] … [SEP], BOS)");
  cmd->add_option("--out", options->out, "Output .safetensors dump")->required();
  cmd->add_flag("--force", options->force, "Replace an existing --out file");
  cmd->callback([options, ids, text, dla, &action] {
    options->by_ids = ids->count() > 0;
    const bool text_given = text->count() > 0;
    const bool empty_dla = dla->count() > 0 && options->dla.empty();
    action = [options, text_given, empty_dla] {
      if (empty_dla) throw UsageError("--dla is empty: give ANSWER[,WRONG], tokens or ids");
      if (!options->by_ids && !text_given) throw UsageError("give --ids or --text");
      if (!options->by_ids) require_text(options->text, "--text");
      check_output_file("--out", options->out, options->force);
      if (options->model.empty()) options->model = core::default_model_or_throw();
      return run_command(*options);
    };
  });
}

}  // namespace headlab::app
