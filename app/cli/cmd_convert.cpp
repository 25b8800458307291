// `headlab convert --model DIR --to gqa --groups G | --to mqa --out DIR [--data FILE…]`: a trained
// model turned into grouped-query (or multi-query) attention by mean-pooling each group's key and
// value heads (Ainslie et al. 2023, core/convert.h). Prints what the KV cache saves and, with
// --data, the model's loss and top-1 on that text before and after, as `headlab evaluate` measures.
#include "app/cli/cli.h"
#include "core/convert.h"
#include "core/memory_budget.h"
#include "core/model.h"
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
  std::vector<std::string> data;
  int64_t seq_len = 128;
  bool force = false;
};

// Loss and top-1 on every example of `files`, as `headlab evaluate` reads them.
core::train::EvalResult quality(core::Model& model, const std::vector<std::string>& files, int64_t seq_len) {
  const auto objective = model.config.decoder ? core::train::Objective::Causal : core::train::Objective::Mlm;
  const auto specials = core::train::special_tokens(*model.tokenizer);
  const auto examples = core::train::load_text_dataset(files, *model.tokenizer, objective, seq_len, 0).train;
  return core::train::evaluate_examples(model.module, examples, objective, specials, core::train::Masking{}, 1,
                                        std::max<int64_t>(1, 2048 / seq_len));
}

int convert_command(const ConvertOptions& o) {
  refuse_overwrite((std::filesystem::path(o.out) / "config.json").string(), o.force);
  auto model = core::load_model(o.model);
  if (model->config.kind == core::StackKind::EncoderDecoder)
    throw UsageError("convert turns the self-attention of encoders or decoders; " + o.model + " is an encoder-decoder");
  const auto& a = (model->config.decoder ? model->config.decoder : model->config.encoder)->attention;
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
  if (!o.data.empty()) {
    if (!model->tokenizer) throw UsageError(o.model + " has no tokenizer: --data needs one");
    const auto before = quality(*model, o.data, o.seq_len);
    const auto after = quality(*converted, o.data, o.seq_len);
    std::printf("on %zu file(s), %lld targets: loss %.4f → %.4f, top-1 %.2f%% → %.2f%%\n", o.data.size(),
                static_cast<long long>(before.targets), before.loss, after.loss, 100 * before.accuracy,
                100 * after.accuracy);
  }
  const auto tokenizer = std::filesystem::path(o.model) / "tokenizer.json";
  converted->config.name += groups == 1 ? " (MQA)" : " (GQA " + std::to_string(groups) + ")";
  core::save_model(*converted, o.out, model->weights_dtype == "F64" ? "F32" : model->weights_dtype,
                   std::filesystem::exists(tokenizer) ? tokenizer.string() : "");
  std::printf("wrote %s\n", o.out.c_str());
  return 0;
}

}  // namespace

void add_convert_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ConvertOptions>();
  auto* cmd = app.add_subcommand("convert", command_description("convert"));
  cmd->add_option("--model", o->model, "Model folder (native, or a Hugging Face folder HeadLab opens)")->required();
  cmd->add_option("--to", o->to, "gqa or mqa")->required()->check(CLI::IsMember({"gqa", "mqa"}));
  cmd->add_option("--groups", o->groups, "GQA: key/value heads after conversion (divides the heads)");
  cmd->add_option("--out", o->out, "Folder for the converted model")->required();
  cmd->add_option("--data", o->data, "Text to measure loss and top-1 on, before and after");
  cmd->add_option("--seq-len", o->seq_len, "Sequence length for --data (default 128)")->check(CLI::PositiveNumber);
  cmd->add_flag("--force", o->force, "Replace a model already in --out");
  cmd->callback([o, &action] { action = [o] { return convert_command(*o); }; });
}

}  // namespace headlab::app
