// The training loop: AdamW, linear warm-up then cosine or linear decay, gradient clipping,
// periodic held-out evaluation, atomic checkpoints with exact resume, train_log.jsonl, and a
// progress line. Deterministic for a seed on one machine (same thread count).
#pragma once

#include "core/config.h"
#include "core/train/data.h"
#include "core/train/forward.h"
#include "core/train/frozen_weights.h"
#include "core/train/grown_vocabulary.h"
#include "core/model/transformer.h"
#include "core/token_counts.h"

#include <atomic>
#include <functional>
#include <string>

namespace headlab::core::train {

struct TrainOptions {
  Objective objective = Objective::Mlm;
  int64_t steps = 0;        // total optimizer steps (the schedule's length); 0 = use `minutes`
  double minutes = 0;       // wall-clock budget of this invocation (0 = none)
  // Stop this invocation after this step (0 = none) while the schedule stays `steps` long: a
  // phase's weights at a chosen step of a longer schedule, reproducibly; --resume continues it.
  int64_t stop_at = 0;
  uint64_t seed = 0;
  int64_t seq_len = 128;
  int64_t batch_tokens = 4096;  // batch size = batch_tokens / seq_len sequences
  double lr = 1e-3;
  double min_lr_ratio = 0.0;    // decay floor, as a fraction of lr
  double warmup = 0.05;         // fraction of the schedule spent warming up
  std::string decay = "cosine";  // "cosine" | "linear"
  double weight_decay = 0.01;
  // Which matrices weight_decay applies to (globs; empty: every matrix — vectors such as biases and
  // norm gains never decay). A phase can decay some heads' query/key weights hard, so what stays of
  // their scores is their biases (under RoPE a function of the offset alone), while the value,
  // output and feed-forward weights beside them train without decay.
  std::vector<std::string> decay_patterns;
  Masking masking;              // MLM only
  double beta1 = 0.9, beta2 = 0.98, eps = 1e-6;
  double clip = 1.0;            // max gradient norm (0 = off)
  int64_t eval_every = 200;     // steps between held-out evaluations
  int64_t eval_batches = 20;    // held-out batches per evaluation
  int64_t checkpoint_every = 0; // steps between checkpoints (0 = at each evaluation)
  int threads = 0;              // intra-op threads (0 = all cores)
  // Where the model trains: the CPU, or a card (TF32 off, so it computes what the CPU computes within
  // float32 rounding). Batches are built on the CPU and moved; a checkpoint resumes on its device.
  torch::Device device = torch::kCPU;
  std::string out;              // output folder
  bool resume = false;
  // A native model folder (same architecture; the same tokenizer or one it extends) whose weights replace the random start:
  // continued training with a fresh optimizer and schedule, e.g. a second phase with other
  // masking or sequence length. Ignored on resume (the checkpoint has the weights).
  std::string init_from;
  // Weights that keep their starting values (see frozen_weights.h), typically with init_from: what
  // a first phase built survives a second one. Parameter-name globs, and heads of the main stack.
  std::vector<std::string> frozen_patterns;
  // With init_from: parameters (globs) drawn afresh from the seed's initialisation after loading, e.g.
  // to re-train layers (Zhang et al. 2021, "Revisiting few-sample BERT fine-tuning"). The rows of
  // frozen_heads keep the loaded values, so "*" keeps only those heads of the first phase. What they
  // match may be missing from the folder: a deeper config starts from a shallower model.
  std::vector<std::string> reinit_patterns;
  // Parameters (globs) set to zero after the start is drawn or loaded (and after reinit_patterns).
  // With frozen_patterns naming them as well they stay zero: a layer's query weights at zero leave
  // each head's query its bias alone, the same at every position, so the layer's maps depend on the
  // keys only (under RoPE, on the keys and the offset). Zero query weights are also muP's start
  // (Yang et al. 2022, "Tensor Programs V").
  std::vector<std::string> zero_patterns;
  std::vector<HeadRef> frozen_heads;
  // With init_from and a tokenizer that extends the folder's (its tokens at the same ids, then new
  // ones; e.g. subword pieces added to a word-level vocabulary): the known tokens' rows of the
  // vocabulary-sized tensors (token embeddings, output bias, untied output weights) keep the loaded
  // values and only the new tokens' rows train. Without it the known rows train as well.
  bool freeze_known_tokens = false;
  // How the new tokens' rows start (core/train/grown_vocabulary.h): drawn like the known ones, or
  // each the mean of the known rows nearest in training count, which needs `token_counts`.
  NewTokenRows new_token_rows = NewTokenRows::Typical;
  // The training text's counts (counts: [vocab]). Written into `out` as token_counts.json with the
  // first checkpoint, so that a folder analysed mid-run ranks rare words by the counts the finished
  // model will carry (not by the dataset, the rare-word measure's fallback); and where
  // NewTokenRows::Frequency finds each new row's neighbours. Null: none written, none to start from.
  const TokenCounts* token_counts = nullptr;
  std::string tokenizer_json;   // copied into the output folder
  std::string dtype = "F32";    // weight type of the model folder
  bool progress = true;         // a progress line on stderr (rewritten in place on a terminal)
  const std::atomic<bool>* interrupt = nullptr;  // set (e.g. by SIGINT) → checkpoint and stop
  // Called after every optimizer step with (step, training loss); false stops like `interrupt`.
  std::function<bool(int64_t, double)> on_step;
};

struct EvalResult {
  double loss = 0;
  double accuracy = 0;  // top-1 on masked / next / target tokens
  int64_t targets = 0;
};

struct TrainResult {
  int64_t step = 0;       // optimizer steps done in total
  bool interrupted = false;
  bool finished = false;  // reached `steps` (or the minute budget without `steps`)
  bool stopped = false;   // reached `stop_at` before the schedule's end
  // The last held-out evaluation and its step: this run's, or on resume the log's last until this
  // run evaluates; `evaluated` false when there is none (loss and accuracy are then no measurement).
  EvalResult last_eval;
  int64_t last_eval_step = 0;
  bool evaluated = false;
  double tokens_per_second = 0;
};

// Evaluates `examples` as the trainer evaluates its held-out split: batches of
// max(1, batch_tokens / seq_len) examples in order, MLM masks drawn from (seed, batch number) with
// `masking` (targets chosen uniformly), no gradient. With the trainer's seed, batch size and
// masking this reproduces its held-out loss and top-1 when every held-out batch is evaluated.
// `gates`: head pruning's; `progress(done, total)`: after each batch.
EvalResult evaluate_examples(Transformer& model, const std::vector<Example>& examples, Objective objective,
                             const SpecialTokens& specials, const Masking& masking, uint64_t seed,
                             int64_t batch_size, const HeadGateTensors* gates = nullptr,
                             const std::function<void(int64_t done, int64_t total)>& progress = {});

// What train_model checks before it writes or allocates anything, for a caller to refuse a run
// before it makes the output folder: the objective against the config's kind (a causal LM is a
// decoder, a masked LM an encoder, seq2seq an encoder-decoder), the schedule (steps or minutes), the
// learning rate and schedule settings, the masking, a checkpoint to resume from, and whether the
// weights with their gradients and optimizer state fit the memory limit (core/memory_budget.h).
// std::invalid_argument naming the option or config key to change; MemoryLimitError for memory.
void check_training(const ModelConfig& config, const TrainOptions& options);

// Trains `config` (vocab_size must match `specials`) on `data`; writes the model folder,
// checkpoint.pt and train_log.jsonl into options.out. With options.resume, continues from
// options.out/checkpoint.pt. Throws std::runtime_error with context on bad input.
TrainResult train_model(const ModelConfig& config, const Dataset& data, const SpecialTokens& specials,
                        const TrainOptions& options);

// Learning-rate multiplier at progress p ∈ [0, 1] (warm-up, then decay).
double lr_factor(double p, const TrainOptions& options);

}  // namespace headlab::core::train
