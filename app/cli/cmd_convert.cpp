// `headlab convert --model DIR --to gqa --groups G | --to mqa | --to collaborative --key-dim D[,D…]
// --out DIR [--data FILE…]`: a trained model turned into grouped-query (or multi-query) attention by
// mean-pooling each group's key and value heads (Ainslie et al. 2023), or into collaborative
// attention by a CP decomposition of its heads' key-query products (Cordonnier et al. 2020 §4;
// core/model/convert.h). Prints what the KV cache saves or each layer's reconstruction error and, with
// --data, the model's loss and top-1 on that text before and after, as `headlab evaluate` measures.
#include "app/cli/batch_memory.h"
#include "app/cli/cli.h"
#include "app/cli/cli_args.h"
#include "app/cli/cli_checks.h"
#include "app/cli/progress.h"
#include "core/model/convert.h"
#include "core/model/device.h"
#include "core/memory_budget.h"
#include "core/model/model.h"
#include "core/precision.h"
#include "core/tokenizer_files.h"
#include "core/train/data.h"
#include "core/train/trainer.h"

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <memory>

namespace headlab::app {
namespace {

struct ConvertOptions {
  std::string model, to, out;
  int groups = 0;
  std::vector<int> key_dims;
  int iterations = 200;
  std::vector<std::string> data;
  int64_t seq_len = 128;
  bool force = false;
  std::string device;  // --device: where the quality before and after is measured
};

// Loss and top-1 on every example of `files`, as `headlab evaluate` reads them — with masks drawn
// from seed 1 in batches of 2,048 tokens, so `headlab evaluate --seed 1 --batch-tokens 2048` gives
// the same numbers (compare and prune measure alike) — where the model is; exactly, before and after
// alike (the converted model's float32 weights have no fast products).
core::train::EvalResult quality(core::Model& model, const std::vector<std::string>& files, int64_t seq_len) {
  const core::PrecisionScope exact(core::Precision::exact);
  const auto objective = core::train::objective_of(model.config);
  const auto specials = core::train::special_tokens(*model.tokenizer);
  const auto examples = core::train::load_text_dataset(files, *model.tokenizer, objective, seq_len, 0).train;
  return core::train::evaluate_examples(model.module, examples, objective, specials, core::train::Masking{}, 1,
                                        std::max<int64_t>(1, 2048 / seq_len));
}

// The converted model is measured on --device (moved there: it is written from there as well).
void print_quality(core::Model& converted, const ConvertOptions& o, const core::train::EvalResult& before,
                   torch::Device device) {
  place_model(converted, device);
  const auto after = quality(converted, o.data, o.seq_len);
  std::printf("on %zu file(s), %lld targets: loss %.4f → %.4f, top-1 %.2f%% → %.2f%%\n", o.data.size(),
              static_cast<long long>(before.targets), before.loss, after.loss, 100 * before.accuracy,
              100 * after.accuracy);
}

void save_converted(core::Model& converted, const core::Model& model, const ConvertOptions& o, const std::string& out,
                    const std::string& suffix) {
  // A model replaced (--force) takes its tokenizer, counts and stop tokens along; the source's come
  // (converting in place keeps them).
  std::error_code ec;
  if (o.force && !std::filesystem::equivalent(o.model, out, ec)) core::remove_model_companions(out);
  core::save_converted_model(converted, model, o.model, out, suffix);
  std::printf("wrote %s\n", out.c_str());
  std::fflush(stdout);  // kept in a log even when a later key size is stopped
}

int convert_command(const ConvertOptions& o) {
  const bool collaborative = o.to == "collaborative";
  if (collaborative && o.key_dims.empty()) throw UsageError("--to collaborative needs --key-dim D (or D1,D2,…)");
  for (size_t i = 0; i < o.key_dims.size(); ++i)  // one would overwrite the other's folder
    for (size_t j = 0; j < i; ++j)
      if (o.key_dims[i] == o.key_dims[j]) throw UsageError("--key-dim gives " + std::to_string(o.key_dims[i]) + " twice");
  // Several key sizes: one folder each, OUT/key-dim-D.
  auto out_of = [&](int d) {
    return !collaborative || o.key_dims.size() == 1 ? o.out
                                                    : (std::filesystem::path(o.out) / ("key-dim-" + std::to_string(d))).string();
  };
  for (int d : collaborative ? o.key_dims : std::vector<int>{0})
    check_output_folder("--out", out_of(d), {"config.json"}, o.force);
  const torch::Device device = device_option(o.device);  // refused before the model loads
  auto model = core::load_model(o.model);
  if (model->config.kind == core::StackKind::EncoderDecoder)
    throw UsageError("convert turns the self-attention of encoders or decoders; " + o.model + " is an encoder-decoder");
  if (!o.data.empty() && !model->tokenizer) throw UsageError(core::no_tokenizer(o.model) + ": --data needs one");
  if (!o.data.empty()) check_seq_len(model->config, o.seq_len, o.model);
  const auto& a = (model->config.decoder ? model->config.decoder : model->config.encoder)->attention;
  core::train::EvalResult before;
  // On a card the model before conversion is measured as a second copy there, so the one the
  // conversion reads stays mapped from its files (a round trip would leave owned copies of an
  // 8B model's 16 GB in memory).
  if (!o.data.empty()) before = device.is_cpu() ? quality(*model, o.data, o.seq_len)
                                                : quality(*load_model_on(o.model, o.device), o.data, o.seq_len);

  if (collaborative) {
    // W_Q W_Kᵀ of the heads stacked has rank at most h·d_k: a larger shared key is that one padded.
    for (int d : o.key_dims)
      if (d > a.heads * a.key_size)
        throw UsageError("--key-dim " + std::to_string(d) + " is more than h·d_k = " + std::to_string(a.heads * a.key_size) +
                         " of " + o.model + " (" + std::to_string(a.heads) + " heads × key size " +
                         std::to_string(a.key_size) + "), which already holds every head's keys exactly");
    // Several key sizes replaced (--force): once everything is checked, the earlier run's folders of
    // these sizes go, so a run stopped part-way leaves its own finished sizes, never one beside
    // another run's.
    if (o.force && o.key_dims.size() > 1)
      for (int d : o.key_dims) {
        std::error_code ec;
        if (!std::filesystem::equivalent(out_of(d), o.model, ec)) std::filesystem::remove_all(out_of(d), ec);
      }
    std::printf("%s: %d heads × key size %d (h·d_k = %d)\n", o.model.c_str(), a.heads, a.key_size, a.heads * a.key_size);
    for (int d : o.key_dims) {
      auto cp = core::conversion_cp_options(o.iterations);
      cp.device = device;  // the CP sweeps run on the card too
      core::CollaborativeConversion converted;
      try {
        // A progress line on stderr: ALS on a large model takes minutes per layer.
        Progress progress("D̃k " + std::to_string(d), "layers");
        converted = core::convert_to_collaborative(*model, d, cp, [&](int layer, int layers, int sweep, double error) {
          char detail[64];
          std::snprintf(detail, sizeof detail, "layer %d: sweep %d, relative error %.4f", layer + 1, sweep, error);
          progress(layer, layers, detail);
        });
        const int layers = static_cast<int>(converted.layers.size());
        if (layers > 0) progress(layers, layers);  // the last layer's sweeps are done: 100%
        progress.finish();
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
      std::printf("shared key size D̃k = %d (%.0f%% of h·d_k): relative error of W_Q^i W_K^iᵀ per layer:", d,
                  100.0 * d / (a.heads * a.key_size));
      std::printf("%s\n", core::layer_errors_text(converted).c_str());
      if (!o.data.empty()) print_quality(*converted.model, o, before, device);
      save_converted(*converted.model, *model, o, out_of(d), core::conversion_label(o.to, 0, d));
    }
    return 0;
  }
  const int groups = o.to == "mqa" ? 1 : o.groups;
  if (o.to == "gqa" && groups <= 0) throw UsageError("--to gqa needs --groups G");
  std::shared_ptr<core::Model> converted;
  try {
    converted = core::convert_to_gqa(*model, groups);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::printf("%s: %d query heads over %d key/value heads → %d (%s)\n", o.model.c_str(), a.heads, a.kv_heads, groups,
              groups == 1 ? "MQA" : "GQA");
  if (model->config.decoder)
    std::printf("KV cache: %lld → %lld bytes a token\n",
                static_cast<long long>(core::kv_cache_bytes_per_token(model->config)),
                static_cast<long long>(core::kv_cache_bytes_per_token(converted->config)));
  if (!o.data.empty()) print_quality(*converted, o, before, device);
  save_converted(*converted, *model, o, o.out, core::conversion_label(o.to, groups, 0));
  return 0;
}

}  // namespace

void add_convert_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ConvertOptions>();
  auto* cmd = app.add_subcommand("convert", command_description("convert"));
  cmd->add_option("--model", o->model, "Model folder (native, or a Hugging Face folder HeadLab opens)")->required();
  add_device_option(cmd, o->device);
  cmd->add_option("--to", o->to, "gqa, mqa or collaborative")
      ->required()
      ->check(CLI::IsMember({"gqa", "mqa", "collaborative"}));
  auto* groups = cmd->add_option("--groups", o->groups, "GQA: key/value heads after conversion (divides the heads)")
                     ->check(positive());
  auto* key_dim = cmd->add_option("--key-dim", o->key_dims,
                                  "Collaborative: shared key size D̃k; several (D1,D2,…) write OUT/key-dim-D each")
                      ->delimiter(',')
                      ->check(positive());
  auto* iterations = cmd->add_option("--iterations", o->iterations, "Collaborative: ALS sweeps at most (default 200)")
                         ->check(positive());
  cmd->add_option("--out", o->out, "Folder for the converted model")->required();
  cmd->add_option("--data", o->data, "Text to measure loss and top-1 on, before and after");
  cmd->add_option("--seq-len", o->seq_len, "Sequence length for --data (default 128)")->check(positive());
  cmd->add_flag("--force", o->force, "Replace a model already in --out");
  cmd->callback([o, groups, key_dim, iterations, &action] {
    action = [o, groups, key_dim, iterations] {
      // An option of another conversion is refused by name rather than ignored.
      for (const auto* option : {groups, key_dim, iterations}) {
        const bool gqa_option = option == groups;
        if (option->count() > 0 && o->to != (gqa_option ? "gqa" : "collaborative"))
          throw UsageError(option->get_name() + " is for --to " + (gqa_option ? "gqa" : "collaborative") +
                           ", not --to " + o->to + (o->to == "mqa" ? " (one key/value head for all)" : ""));
      }
      return convert_command(*o);
    };
  });
}

}  // namespace headlab::app
