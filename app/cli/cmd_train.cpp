// `headlab train --config CFG.json --data PATH… --out DIR …`: trains any engine config.
#include "app/cli/batch_memory.h"
#include "app/cli/cli.h"
#include "app/cli/cli_args.h"
#include "app/cli/cli_checks.h"
#include "app/cli/stop_signals.h"
#include "core/atomic_file.h"
#include "core/model/model.h"
#include "core/token_counts.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer_files.h"
#include "core/train/data.h"
#include "core/train/trainer.h"

#include <CLI/CLI.hpp>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <memory>

namespace headlab::app {
namespace {

std::atomic<bool> g_interrupt{false};

struct TrainCliOptions {
  std::string config, out, objective, tokenizer, decay = "cosine", dtype = "F32", new_token_rows = "typical";
  std::string device;  // --device
  std::vector<std::string> data, frozen_heads;  // LAYER.HEAD, parsed into train.frozen_heads
  core::train::TrainOptions train;
  double held_out = 0.02;
  bool force = false;  // replace a model already in --out (without --resume)
};

// A folder this run makes is removed again when the run fails before its first checkpoint, so a
// failed start leaves nothing behind; once a checkpoint is written, the folder stays for --resume.
class NewFolder {
 public:
  explicit NewFolder(const std::string& folder) : folder_(folder), made_(!std::filesystem::exists(folder)) {
    std::filesystem::create_directories(folder);
  }
  void keep() { made_ = false; }
  ~NewFolder() {
    std::error_code ec;
    if (made_ && !std::filesystem::exists(std::filesystem::path(folder_) / "checkpoint.pt", ec))
      std::filesystem::remove_all(folder_, ec);
  }

 private:
  std::string folder_;
  bool made_;
};

int train_command(TrainCliOptions& options) {
  namespace fs = std::filesystem;
  options.train.device = device_option(options.device);  // a card this process cannot use: refused first
  if (!options.train.resume && !options.force)
    for (const char* file : {"checkpoint.pt", "config.json", "model.safetensors"})
      if (fs::exists(fs::path(options.out) / file))
        throw UsageError(options.out + " already holds a model (" + file +
                         "); pass --resume to continue its training or --force to start over");
  check_output_folder("--out", options.out, {}, true);
  auto config = core::load_model_config(options.config);
  auto& o = options.train;
  if (o.steps <= 0 && o.minutes <= 0) throw UsageError("give --steps N or --minutes M");
  o.objective = core::train::objective_from_string(options.objective.empty() ? config.objective : options.objective);
  for (const auto& h : options.frozen_heads) {
    try {
      o.frozen_heads.push_back(core::train::parse_head_ref(h));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  o.decay = options.decay;
  o.dtype = options.dtype;
  o.out = options.out;
  std::string tokenizer_path = options.tokenizer;
  if (tokenizer_path.empty() && o.resume && fs::exists(fs::path(options.out) / "tokenizer.json"))
    tokenizer_path = (fs::path(options.out) / "tokenizer.json").string();
  if (tokenizer_path.empty())
    throw UsageError("give --tokenizer tokenizer.json (make one with `headlab train-tokenizer`)");
  // The folder keeps its tokenizer as tokenizer.json, where --resume and --init read it: another
  // format (a folder, vocab.txt, vocab.json) is refused here instead of copied under that name.
  const std::string tokenizer_name = fs::path(tokenizer_path).filename().string();
  if (fs::is_directory(tokenizer_path) || fs::path(tokenizer_path).extension() != ".json" ||
      tokenizer_name == "vocab.json" || tokenizer_name == "encoder.json")
    throw UsageError("--tokenizer: " + tokenizer_path +
                     " is not a tokenizer.json; train copies a tokenizer.json into the folder (make one with "
                     "`headlab train-tokenizer`, or save the tokenizer with transformers' save_pretrained)");
  auto tokenizer = core::Tokenizer::load(tokenizer_path);
  config.vocab_size = static_cast<int>(tokenizer->vocab_size());
  config.validate();
  try {
    core::train::check_training(config, o);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  check_batch_memory(config, std::max<int64_t>(1, o.batch_tokens / o.seq_len), o.seq_len, true, "train");
  const auto target = fs::path(options.out) / "tokenizer.json";
  o.tokenizer_json = target.string();

  std::cerr << "reading " << options.data.size() << " file(s)…\n";
  auto data = core::train::load_text_dataset(options.data, *tokenizer, o.objective, o.seq_len, options.held_out);
  std::cerr << data.train.size() << " training examples (" << data.train_tokens() << " tokens), "
            << data.held_out.size() << " held out; " << config.parameter_count() << " parameters, "
            << core::train::to_string(o.objective) << "\n";
  // The model carries the token counts of its training text: the frequency corpus the rare-word
  // measure ranks tokens by (headlab analyze), and where --new-token-rows frequency starts new rows.
  const auto counts = core::count_tokens_in_files(*tokenizer, options.data);
  o.new_token_rows = core::train::parse_new_token_rows(options.new_token_rows);
  o.token_counts = &counts;
  g_interrupt.store(false);
  o.interrupt = &g_interrupt;
  // Everything is read and checked: the folder is made (or reused) now.
  NewFolder folder(options.out);
  // The tokenizer is copied before training writes the folder (--tokenizer may point into --out),
  // with the tokenizer_config.json beside it, which decides its special tokens.
  core::copy_tokenizer_files(tokenizer_path, options.out);
  core::train::TrainResult result;
  {
    StopSignals stop(g_interrupt);  // Ctrl-C, SIGTERM, SIGHUP: a checkpoint, then the end
    try {
      result = core::train::train_model(config, data, core::train::special_tokens(*tokenizer), o);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  folder.keep();
  std::cout << (result.interrupted ? "interrupted" : "trained") << " at step " << result.step << "; ";
  if (result.evaluated)
    std::cout << "held-out (step " << result.last_eval_step << "): loss " << result.last_eval.loss << ", top-1 accuracy "
              << 100 * result.last_eval.accuracy << "%";
  else
    std::cout << "no held-out evaluation yet";
  std::cout << " (" << static_cast<long long>(result.tokens_per_second) << " tokens/s); wrote " << options.out << "\n";
  if (result.interrupted) {
    std::cout << "stopped by " << StopSignals::name() << "; checkpoint saved; continue with the same command plus --resume\n";
    return StopSignals::exit_code();
  }
  if (result.stopped)
    std::cout << "stopped at step " << result.step << (o.steps > 0 ? " of " + std::to_string(o.steps) : std::string())
              << " (--stop-at); continue with the same command plus --resume, without --stop-at\n";
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<TrainCliOptions>();
  auto& o = options->train;
  auto* cmd = app.add_subcommand("train", command_description("train"));
  cmd->add_option("--config", options->config, "HeadLab config.json (see assets/configs/)")->required();
  cmd->add_option("--data", options->data, "Text files (seq2seq: source<TAB>target a line)")->required();
  cmd->add_option("--out", options->out, "Output model folder (also checkpoint.pt, train_log.jsonl)")->required();
  cmd->add_option("--objective", options->objective, "mlm | causal | seq2seq (default: the config's)")
      ->check(CLI::IsMember({"mlm", "causal", "seq2seq"}));
  cmd->add_option("--tokenizer", options->tokenizer, "tokenizer.json (copied into the folder)");
  cmd->add_option("--steps", o.steps, "Optimizer steps (the schedule's length)")->check(non_negative());
  cmd->add_option("--minutes", o.minutes, "Time budget of this run (alone: the schedule's length)")
      ->check(non_negative());
  cmd->add_option("--stop-at", o.stop_at,
                  "Stop after this step; the schedule stays --steps long (continue with --resume)")
      ->check(positive());
  cmd->add_option("--seed", o.seed, "Random seed (weights, data order, masks)")
      ->check(non_negative());
  add_device_option(cmd, options->device);
  cmd->add_flag("--resume", o.resume, "Continue from DIR/checkpoint.pt (on the device it was made on)");
  cmd->add_flag("--force", options->force, "Start over in an --out folder that already holds a model");
  cmd->add_option("--init", o.init_from,
                  "Start from this model folder's weights (same architecture; its tokenizer or one that extends it; fresh "
                  "optimizer and schedule)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--freeze", o.frozen_patterns,
                  "Keep the parameters matching these globs at their starting values, e.g. 'tokens.*' 'encoder.[0-2].*'")
      ->delimiter(',');
  cmd->add_option("--reinit", o.reinit_patterns,
                  "With --init: draw the parameters matching these globs afresh (seeded); --freeze-heads rows stay as loaded")
      ->delimiter(',');
  cmd->add_option("--zero", o.zero_patterns,
                  "Start the parameters matching these globs at zero (with --freeze they stay there), e.g. "
                  "'encoder.3.attn.q.weight': that layer's queries are their biases alone, the same at every position")
      ->delimiter(',');
  cmd->add_option("--freeze-heads", options->frozen_heads,
                  "Keep these heads' query/key weights (LAYER.HEAD …) at their starting values, e.g. with --init")
      ->delimiter(',');
  cmd->add_flag("--freeze-known-tokens", o.freeze_known_tokens,
                "With --init and a --tokenizer that extends the model's (the same tokens at the same ids, then "
                "new ones): only the new tokens' embedding and output rows train");
  cmd->add_option("--new-token-rows", options->new_token_rows,
                  "With a --tokenizer that extends the --init model's: how the new tokens' rows start, typical (drawn "
                  "with the known rows' mean and covariance, the default) or frequency (each the mean of the 32 known "
                  "rows nearest in count in the training text)")
      ->check(CLI::IsMember({"typical", "frequency"}));
  cmd->add_option("--seq-len", o.seq_len, "Tokens per sequence")->check(number_in(4, 100000));
  cmd->add_option("--batch-tokens", o.batch_tokens, "Tokens per batch")->check(positive());
  cmd->add_option("--lr", o.lr, "Peak learning rate")->check(positive());
  cmd->add_option("--warmup", o.warmup, "Warm-up fraction of the schedule")->check(number_in(0.0, 1.0));
  cmd->add_option("--decay", options->decay, "cosine | linear")->check(CLI::IsMember({"cosine", "linear"}));
  cmd->add_option("--weight-decay", o.weight_decay, "AdamW weight decay")->check(non_negative());
  cmd->add_option("--decay-only", o.decay_patterns,
                  "Apply --weight-decay only to the weight matrices matching these globs (default: every matrix), "
                  "e.g. 'encoder.4.attn.[qk].weight'")
      ->delimiter(',');
  cmd->add_option("--mlm-rate", o.masking.rate, "MLM: share of tokens chosen as targets (BERT: 0.15)")
      ->check(number_above(0.0, 1.0));
  cmd->add_option("--mlm-mask", o.masking.mask, "MLM: share of targets replaced by [MASK] (BERT: 0.8)")
      ->check(number_in(0.0, 1.0));
  cmd->add_option("--mlm-random", o.masking.random, "MLM: share of targets replaced by a random token (BERT: 0.1; the rest stay)")
      ->check(number_in(0.0, 1.0));
  cmd->add_option("--mlm-rarity", o.masking.rarity,
                  "MLM: choose targets with weight count^-ALPHA (Zhang et al. 2023; BERT: 0 = uniform)")
      ->check(number_in(0.0, 2.0));
  cmd->add_option("--mlm-all-mask-share", o.masking.all_mask_share,
                  "MLM: share of sequences in which every target becomes [MASK] (the rest use --mlm-mask/--mlm-random)")
      ->check(number_in(0.0, 1.0));
  cmd->add_option("--clip", o.clip, "Gradient-norm clipping (0 = off)")->check(non_negative());
  cmd->add_option("--eval-every", o.eval_every, "Steps between held-out evaluations")->check(positive());
  cmd->add_option("--eval-batches", o.eval_batches, "Held-out batches per evaluation")->check(positive());
  cmd->add_option("--checkpoint-every", o.checkpoint_every, "Steps between checkpoints (0 = at each evaluation, the default)")
      ->check(non_negative());
  cmd->add_option("--held-out", options->held_out, "Held-out fraction of the data")->check(number_in(0.0, 0.5));
  cmd->add_option("--threads", o.threads, "Intra-op threads (default: all cores)")->check(non_negative());
  cmd->add_option("--dtype", options->dtype, "Stored weight type")->check(CLI::IsMember({"F32", "F16", "BF16"}));
  cmd->callback([options, &action] { action = [options] { return train_command(*options); }; });
}

}  // namespace headlab::app
