#include "core/train/trainer.h"
#include "core/json_integer.h"

#include "core/atomic_file.h"
#include "core/model/device.h"
#include "core/model/model.h"
#include "core/model/safetensors_torch.h"
#include "core/precision.h"
#include "core/train/checkpoint.h"
#include "core/train/forward.h"
#include "core/train/grown_vocabulary.h"
#include "core/tokenizer/trainer.h"
#include "core/weights_memory.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace headlab::core::train {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double lr_factor(double p, const TrainOptions& o) {
  p = std::clamp(p, 0.0, 1.0);
  if (o.warmup > 0 && p < o.warmup) return (p / o.warmup);
  const double q = o.warmup >= 1 ? 1.0 : (p - o.warmup) / (1.0 - o.warmup);
  const double shape = o.decay == "linear" ? 1.0 - q : 0.5 * (1.0 + std::cos(M_PI * q));
  return o.min_lr_ratio + (1.0 - o.min_lr_ratio) * shape;
}

namespace {

std::string format_duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// Held-out batches with fixed masks, so every evaluation sees the same inputs. Targets are chosen
// uniformly even when training weights them by rarity, so held-out accuracy compares across runs.
std::vector<Batch> eval_batches(const Dataset& data, const SpecialTokens& specials, const TrainOptions& o,
                                int64_t batch_size) {
  std::vector<Batch> out;
  for (size_t start = 0; start < data.held_out.size() && static_cast<int64_t>(out.size()) < o.eval_batches;
       start += static_cast<size_t>(batch_size)) {
    std::vector<const Example*> ex;
    for (size_t i = start; i < std::min(data.held_out.size(), start + static_cast<size_t>(batch_size)); ++i)
      ex.push_back(&data.held_out[i]);
    out.push_back(make_batch(ex, o.objective, specials, mix_seed(o.seed ^ 0xE7A1u, out.size()), o.masking));
  }
  return out;
}

EvalResult evaluate(Transformer& model, const std::vector<Batch>& batches, const HeadGateTensors* gates = nullptr,
                    const std::function<void(int64_t done, int64_t total)>& progress = {}) {
  torch::NoGradGuard no_grad;
  model->eval();
  EvalResult r;
  double loss_sum = 0;
  int64_t correct = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    auto l = batch_loss(model, batches[i], gates);
    loss_sum += l.loss.item<double>() * double(l.targets);
    r.targets += l.targets;
    correct += l.correct;
    if (progress) progress(static_cast<int64_t>(i + 1), static_cast<int64_t>(batches.size()));
  }
  model->train();
  if (r.targets > 0) {
    r.loss = loss_sum / double(r.targets);
    r.accuracy = double(correct) / double(r.targets);
  }
  return r;
}

}  // namespace

EvalResult evaluate_examples(Transformer& model, const std::vector<Example>& examples, Objective objective,
                             const SpecialTokens& specials, const Masking& masking, uint64_t seed,
                             int64_t batch_size, const HeadGateTensors* gates,
                             const std::function<void(int64_t done, int64_t total)>& progress) {
  Masking uniform = masking;
  uniform.rarity = 0;
  uniform.weights.clear();
  batch_size = std::max<int64_t>(1, batch_size);
  std::vector<Batch> batches;
  for (size_t start = 0; start < examples.size(); start += static_cast<size_t>(batch_size)) {
    std::vector<const Example*> ex;
    for (size_t i = start; i < std::min(examples.size(), start + static_cast<size_t>(batch_size)); ++i)
      ex.push_back(&examples[i]);
    batches.push_back(make_batch(ex, objective, specials, mix_seed(seed ^ 0xE7A1u, batches.size()), uniform));
  }
  return evaluate(model, batches, gates, progress);
}

namespace {

// The last held-out evaluation a log holds, for a resumed run to report until it evaluates again.
struct LoggedEval {
  int64_t step = 0;
  EvalResult result;
};

// Keeps the log lines up to `step` (a resumed run rewrites what came after its checkpoint),
// replacing the file atomically, and returns the last evaluation among them. A last line cut short
// by a crash is dropped; any other line that is not JSON stops the resume with the file and line named.
std::optional<LoggedEval> truncate_log(const std::string& path, int64_t step) {
  if (!fs::exists(path)) return std::nullopt;
  std::optional<LoggedEval> last_eval;
  const std::string text = read_file_bytes(path);
  std::string kept;
  size_t line_number = 0;
  for (size_t begin = 0; begin < text.size();) {
    const size_t newline = text.find('\n', begin);
    const bool last = newline == std::string::npos;
    const std::string line = text.substr(begin, last ? std::string::npos : newline - begin);
    begin = last ? text.size() : newline + 1;
    ++line_number;
    if (line.empty()) continue;
    json entry;
    try {
      entry = json::parse(line);
    } catch (const json::exception& e) {
      if (last) break;  // an append interrupted mid-line
      throw std::runtime_error(path + ": line " + std::to_string(line_number) + " is not JSON (" + e.what() +
                               "); repair or remove the log to resume");
    }
    if (!entry.is_object() || !entry.contains("step") || !entry.at("step").is_number_integer())
      throw std::runtime_error(path + ": line " + std::to_string(line_number) +
                               " has no integer \"step\"; repair or remove the log to resume");
    const int64_t at = core::get_integer<int64_t>(entry.at("step"));
    if (at > step) continue;
    kept += line + "\n";
    const auto loss = entry.find("eval_loss"), accuracy = entry.find("eval_accuracy");
    if (loss != entry.end() && loss->is_number() && accuracy != entry.end() && accuracy->is_number())
      last_eval = LoggedEval{at, {loss->get<double>(), accuracy->get<double>(), 0}};
  }
  write_file_atomic(path, kept);
  return last_eval;
}

// Loads the weights of the native model folder `folder` into `model` (continued training) with the
// loader `load_model` uses: every parameter present with its shape (or drawn afresh by --reinit, so
// it may be missing), no unknown tensor. With a grown vocabulary (`known_tokens` > 0, see
// grown_vocabulary) the vocabulary-sized tensors fill their first `known_tokens` rows, and the new
// tokens' rows start as o.new_token_rows says (drawn like the known ones, seeded with o.seed, or
// from the known rows nearest in o.token_counts, special tokens never among them).
void init_from_folder(Transformer& model, int64_t known_tokens, const std::vector<int64_t>& specials,
                      const TrainOptions& o) {
  const std::string& folder = o.init_from;
  const auto& reinit_patterns = o.reinit_patterns;
  try {
    const auto file = SafetensorsFile::open((fs::path(folder) / "model.safetensors").string());
    // What --reinit draws afresh need not be in the folder (a deeper model from a shallower one).
    load_native_weights(
        model, file, [&](const std::string& name) { return matches_any(reinit_patterns, name); },
        [&](const std::string& name) { return known_tokens > 0 && is_vocabulary_sized(name); });
    if (known_tokens == 0) return;
    torch::NoGradGuard no_grad;
    for (auto& item : model->named_parameters()) {
      if (!is_vocabulary_sized(item.key())) continue;
      const TensorInfo* info = file.find(item.key());
      if (!info) throw std::runtime_error(file.path() + ": tensor '" + item.key() + "' is missing");
      std::vector<int64_t> expected(item.value().sizes().begin(), item.value().sizes().end());
      expected[0] = known_tokens;
      if (info->shape != expected)
        throw std::runtime_error(file.path() + ": tensor '" + item.key() + "' has " +
                                 std::to_string(info->shape.empty() ? 0 : info->shape[0]) + " rows or another width; " +
                                 "the model's tokenizer has " + std::to_string(known_tokens) + " tokens");
      const torch::Tensor rows = load_tensor(file, item.key(), torch::kFloat32);
      require_finite(rows, file.path(), item.key());
      item.value().narrow(0, 0, known_tokens).copy_(rows);
      const int64_t fresh = item.value().size(0) - known_tokens;
      item.value().narrow(0, known_tokens, fresh)
          .copy_(o.new_token_rows == NewTokenRows::Frequency
                     ? rows_by_frequency(rows, o.token_counts->counts, specials, fresh)
                     : draw_rows_like(rows, fresh, mix_seed(o.seed, fresh)));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("--init: ") + e.what());
  }
}

// Draws the parameters matching o.reinit_patterns as a fresh start with o.seed would, keeping the
// rows of o.frozen_heads as loaded.
void reinitialize(Transformer& model, const ModelConfig& cfg, const TrainOptions& o) {
  Transformer fresh(cfg);
  initialize_weights(fresh, o.seed);
  const FrozenWeights loaded_heads(*model, cfg, {}, o.frozen_heads);
  torch::NoGradGuard no_grad;
  const auto fresh_params = fresh->named_parameters();
  for (const auto& glob : o.reinit_patterns)
    for (auto& [name, param] : parameters_matching(*model, glob, "--reinit")) param.copy_(fresh_params[name]);
  loaded_heads.restore();
}

// Sets the parameters matching the globs to zero (TrainOptions::zero_patterns).
void zero_parameters(TransformerImpl& model, const std::vector<std::string>& globs) {
  torch::NoGradGuard no_grad;
  for (const auto& glob : globs)
    for (auto& [name, param] : parameters_matching(model, glob, "--zero")) param.zero_();
}

}  // namespace

void check_training(const ModelConfig& config, const TrainOptions& o) {
  if (o.out.empty()) throw std::invalid_argument("no output folder");
  if (o.steps <= 0 && o.minutes <= 0) throw std::invalid_argument("give a number of steps or a time budget");
  if (!(o.steps >= 0 && o.minutes >= 0 && o.stop_at >= 0))
    throw std::invalid_argument("steps, minutes and stop-at must not be negative");
  // lr 0 is allowed: the run writes its starting weights (tests and --reinit use it).
  if (!(std::isfinite(o.lr) && o.lr >= 0)) throw std::invalid_argument("--lr must be a finite number >= 0");
  if (!(o.warmup >= 0 && o.warmup <= 1)) throw std::invalid_argument("--warmup must be in [0, 1]");
  if (!(std::isfinite(o.weight_decay) && o.weight_decay >= 0))
    throw std::invalid_argument("--weight-decay must be a number >= 0");
  if (!(std::isfinite(o.clip) && o.clip >= 0)) throw std::invalid_argument("--clip must be a number >= 0 (0 = off)");
  if (o.seq_len < 4 || o.batch_tokens < 1) throw std::invalid_argument("--seq-len must be >= 4 and --batch-tokens >= 1");
  o.masking.validate();
  const std::string kind = to_string(config.kind);  // as config.json spells it
  const std::string objective = to_string(o.objective);
  auto wrong_kind = [&](const std::string& needs, const std::string& instead) {
    return std::invalid_argument("the objective " + objective + " needs " + needs + "; the config's \"kind\" is \"" +
                                 kind + "\". " + instead);
  };
  if (config.kind == StackKind::EncoderDecoder && o.objective != Objective::Seq2Seq)
    throw wrong_kind("an encoder or a decoder config", "Train an encoder-decoder with --objective seq2seq");
  if (config.kind != StackKind::EncoderDecoder && o.objective == Objective::Seq2Seq)
    throw wrong_kind("an encoder-decoder config (\"kind\": \"encoder-decoder\")",
                     "Use --objective mlm (encoder) or causal (decoder)");
  if (config.kind == StackKind::Decoder && o.objective == Objective::Mlm)
    throw wrong_kind("an encoder config (\"kind\": \"encoder\"): a decoder's causal mask hides the words after "
                     "each [MASK]",
                     "Train a decoder with --objective causal, or set \"kind\": \"encoder\" in the config");
  if (config.kind == StackKind::Encoder && o.objective == Objective::Causal)
    throw wrong_kind("a decoder config (\"kind\": \"decoder\"): an encoder's attention sees the next token it "
                     "would predict",
                     "Set \"kind\": \"decoder\" in the config for a causal LM, or train the encoder with "
                     "--objective mlm");
  if (o.resume && !fs::exists(fs::path(o.out) / "checkpoint.pt"))
    throw std::invalid_argument((fs::path(o.out) / "checkpoint.pt").string() +
                                ": no checkpoint to resume from; leave out --resume to start a new run");
  check_weights_memory(config, 4, "training");
}

TrainResult train_model(const ModelConfig& config, const Dataset& data, const SpecialTokens& specials,
                        const TrainOptions& o) {
  const PrecisionScope exact(Precision::exact);  // training computes exactly, whatever the process's choice
  check_training(config, o);
  if (config.vocab_size != specials.vocab_size)
    throw std::invalid_argument("config vocab_size " + std::to_string(config.vocab_size) + " differs from the " +
                                "tokenizer's " + std::to_string(specials.vocab_size));
  // LibTorch thread counts are per thread: set here, restored on the way out so a caller's setting survives.
  struct ThreadsGuard {
    int previous = at::get_num_threads();
    ~ThreadsGuard() { at::set_num_threads(previous); }
  } threads_guard;
  at::set_num_threads(o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  fs::create_directories(o.out);
  const std::string ckpt_path = (fs::path(o.out) / "checkpoint.pt").string();
  const std::string log_path = (fs::path(o.out) / "train_log.jsonl").string();

  ModelConfig cfg = config;
  cfg.objective = to_string(o.objective);
  Transformer model(cfg);
  if (!o.reinit_patterns.empty() && o.init_from.empty()) throw std::invalid_argument("--reinit needs --init");
  const int64_t known_tokens = o.init_from.empty() ? 0 : grown_vocabulary(o.init_from, o.tokenizer_json);
  if (o.freeze_known_tokens && known_tokens == 0)
    throw std::invalid_argument("--freeze-known-tokens needs --init with a model whose tokenizer the run's "
                                "--tokenizer extends (the same tokens at the same ids, then new ones)");
  if (o.new_token_rows == NewTokenRows::Frequency) {
    if (known_tokens == 0)
      throw std::invalid_argument("--new-token-rows frequency needs --init with a model whose tokenizer the run's "
                                  "--tokenizer extends");
    const size_t given = o.token_counts ? o.token_counts->counts.size() : 0;
    if (static_cast<int64_t>(given) != config.vocab_size)
      throw std::invalid_argument("--new-token-rows frequency needs the training text's count of each of the " +
                                  std::to_string(config.vocab_size) + " tokens (got " + std::to_string(given) + ")");
  }
  if (!o.init_from.empty() && !o.resume) {
    init_from_folder(model, known_tokens, specials.specials, o);
    if (!o.reinit_patterns.empty()) reinitialize(model, cfg, o);
  } else {
    initialize_weights(model, o.seed);
  }
  if (!o.resume) zero_parameters(*model, o.zero_patterns);
  // Drawn and loaded on the CPU (the same start on any device), then moved before the optimizer
  // and the frozen copies are made.
  if (!o.device.is_cpu()) model->to(o.device);  // TF32 stays off: training computes exactly (the scope above)
  model->train();

  // The matrices weight decay reaches: every one, or those decay_patterns name (each glob must name
  // a parameter; vectors such as biases and norm gains never decay).
  std::set<std::string> decaying;
  for (const auto& glob : o.decay_patterns)
    for (const auto& [name, param] : parameters_matching(*model, glob, "--decay-only"))
      if (param.dim() >= 2) decaying.insert(name);
  if (!o.decay_patterns.empty() && decaying.empty()) {
    std::string globs;
    for (const auto& g : o.decay_patterns) globs += " '" + g + "'";
    throw std::invalid_argument("--decay-only: no weight matrix matches" + globs + " (biases and norm gains never decay)");
  }
  std::vector<torch::Tensor> decay, no_decay;
  for (auto& item : model->named_parameters()) {
    const bool decays = item.value().dim() >= 2 && (o.decay_patterns.empty() || decaying.count(item.key()) > 0);
    (decays ? decay : no_decay).push_back(item.value());
  }
  auto adam = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, adam(o.weight_decay));
  groups.emplace_back(no_decay, adam(0.0));
  torch::optim::AdamW optimizer(groups, torch::optim::AdamWOptions(o.lr));

  const int64_t batch_size = std::max<int64_t>(1, o.batch_tokens / o.seq_len);
  BatchOrder order(data.train.size(), batch_size, mix_seed(o.seed, 1));
  const auto evals = eval_batches(data, specials, o, batch_size);

  int64_t step = 0, tokens_seen = 0, loss_count = 0;
  double loss_sum = 0, elapsed_before = 0;
  double schedule_seconds = o.steps > 0 ? 0 : o.minutes * 60;
  json fingerprint = {{"objective", to_string(o.objective)}, {"seed", o.seed}, {"seq_len", o.seq_len},
                      {"batch_size", batch_size}, {"train_examples", data.train.size()},
                      {"held_out_examples", data.held_out.size()}, {"device", device_name(o.device)}};
  auto masking_json = [](const Masking& m) {
    json j{{"rate", m.rate}, {"mask", m.mask}, {"random", m.random}};
    if (m.rarity != 0.0) j["rarity"] = m.rarity;  // absent = 0, as in checkpoints from before the option
    if (m.all_mask_share != 0.0) j["all_mask_share"] = m.all_mask_share;  // likewise
    return j;
  };
  Masking masking = o.masking;  // training batches: with the rarity weights of this data
  if (!o.init_from.empty()) fingerprint["init_from"] = o.init_from;  // absent = random initialisation
  if (!o.frozen_patterns.empty()) fingerprint["frozen"] = o.frozen_patterns;  // absent = none
  if (!o.reinit_patterns.empty()) fingerprint["reinit"] = o.reinit_patterns;   // likewise
  if (!o.zero_patterns.empty()) fingerprint["zero"] = o.zero_patterns;         // likewise
  if (known_tokens > 0) fingerprint["known_tokens"] = known_tokens;            // likewise
  if (o.freeze_known_tokens) fingerprint["freeze_known_tokens"] = true;        // likewise
  if (o.new_token_rows == NewTokenRows::Frequency) fingerprint["new_token_rows"] = "frequency";  // likewise
  if (!o.frozen_heads.empty()) {  // likewise
    json heads = json::array();
    for (const auto& h : o.frozen_heads) heads.push_back(to_string(h));
    fingerprint["frozen_heads"] = heads;
  }
  if (o.objective == Objective::Mlm) {
    masking.weights = rarity_weights(data, specials, masking.rarity);
    fingerprint["masking"] = masking_json(o.masking);
  }
  // What shapes the steps from here on (recorded in checkpoints, compared on resume).
  const json schedule = {{"lr", o.lr},         {"min_lr_ratio", o.min_lr_ratio}, {"warmup", o.warmup},
                         {"decay", o.decay},   {"weight_decay", o.weight_decay}, {"clip", o.clip},
                         {"decay_only", o.decay_patterns}};
  std::optional<LoggedEval> resumed_eval;  // the log's last evaluation, on resume
  if (o.resume) {
    // The fingerprint first: a checkpoint of another run (or made on another device) is refused
    // by name before its state is loaded.
    json meta = read_checkpoint_meta(ckpt_path);
    for (auto& [k, v] : fingerprint.items()) {
      // Checkpoints from before masking was an option used BERT's 15% / 80-10-10.
      // Checkpoints from before the device option trained on the CPU.
      const json stored = meta.at("fingerprint").value(k, k == "masking" ? masking_json(Masking{})
                                                          : k == "device"  ? json("cpu")
                                                                           : json());
      if (stored != v)
        throw std::runtime_error(ckpt_path + ": the checkpoint was made with " + k + " = " + stored.dump() +
                                 ", this run has " + v.dump());
    }
    if (to_json(cfg) != meta.at("config")) throw std::runtime_error(ckpt_path + ": made for another config");
    // The schedule may change on resume (a longer --steps continues it), but not without a word: a
    // changed learning rate, warm-up, decay or clipping is named, with the checkpoint's value.
    std::string changed;
    const json stored_schedule = meta.value("schedule", json{{"lr", meta.value("lr", o.lr)}});
    for (auto& [k, v] : schedule.items())
      if (stored_schedule.contains(k) && stored_schedule.at(k) != v)
        changed += (changed.empty() ? "" : ", ") + k + " " + stored_schedule.at(k).dump() + " → " + v.dump();
    if (!changed.empty())
      std::fprintf(stderr, "resuming with another schedule than the checkpoint's run: %s\n", changed.c_str());
    load_checkpoint(ckpt_path, model, optimizer);
    step = meta.at("step");
    tokens_seen = meta.at("tokens");
    loss_sum = meta.at("loss_sum");
    loss_count = meta.at("loss_count");
    elapsed_before = meta.at("elapsed_seconds");
    if (o.steps <= 0) schedule_seconds = meta.value("schedule_seconds", schedule_seconds);
    resumed_eval = truncate_log(log_path, step);
  } else {
    std::remove(log_path.c_str());
  }
  // After a resume's load: the checkpoint holds the rows as they were at the start.
  const FrozenWeights frozen(*model, cfg, o.frozen_patterns, o.frozen_heads,
                            o.freeze_known_tokens ? known_tokens : 0);
  if (o.progress && !frozen.empty())
    std::fprintf(stderr, "%lld weights stay fixed\n", static_cast<long long>(frozen.frozen_values()));

  // Appended a line at a time (each line is whole or, after a crash, the last one is cut short);
  // rewrites go through truncate_log.
  std::ofstream log(log_path, std::ios::app);
  if (!log) throw std::runtime_error(log_path + ": cannot open for appending: " + std::strerror(errno));
  const auto start = Clock::now();
  auto run_seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  const int64_t start_step = step, start_tokens = tokens_seen;
  double current_lr = o.lr;
  Model folder_model;
  folder_model.config = cfg;
  folder_model.module = model;

  bool counts_written = false;
  auto checkpoint = [&] {
    auto [epoch, offset] = order.position(step);
    json meta = {{"step", step}, {"tokens", tokens_seen}, {"loss_sum", loss_sum}, {"loss_count", loss_count},
                 {"elapsed_seconds", elapsed_before + run_seconds()}, {"schedule_seconds", schedule_seconds},
                 {"steps", o.steps}, {"data_epoch", epoch}, {"data_offset", offset}, {"fingerprint", fingerprint},
                 {"config", to_json(cfg)}, {"lr", o.lr}, {"schedule", schedule}, {"threads", at::get_num_threads()}};
    save_checkpoint(ckpt_path, model, optimizer, meta);
    save_model(folder_model, o.out, o.dtype, o.tokenizer_json);
    if (o.token_counts && !counts_written) {
      save_token_counts(*o.token_counts, (fs::path(o.out) / "token_counts.json").string());
      counts_written = true;
    }
  };
  TrainResult result;
  if (resumed_eval) {  // what the log says until this run evaluates
    result.last_eval = resumed_eval->result;
    result.last_eval_step = resumed_eval->step;
    result.evaluated = true;
  }
  auto log_eval = [&] {
    result.last_eval = evaluate(model, evals);
    result.last_eval_step = step;
    result.evaluated = true;
    const double secs = run_seconds();
    json line = {{"step", step},
                 {"train_loss", loss_count ? json(loss_sum / double(loss_count)) : json(nullptr)},
                 {"eval_loss", result.last_eval.loss},
                 {"eval_accuracy", result.last_eval.accuracy},
                 {"lr", current_lr},
                 {"tokens", tokens_seen},
                 {"elapsed_seconds", elapsed_before + secs},
                 {"tokens_per_second", secs > 0 ? double(tokens_seen - start_tokens) / secs : 0.0}};
    log << line.dump() << "\n";
    log.flush();
    if (!log) throw std::runtime_error(log_path + ": appending failed: " + std::strerror(errno));
    loss_sum = 0;
    loss_count = 0;
    if (o.progress) {
      std::fprintf(stderr, "%sstep %lld  eval loss %.4f  accuracy %.2f%%  (train loss %s)\n",
                   isatty(2) ? "\r\033[K" : "", static_cast<long long>(step), result.last_eval.loss,
                   100 * result.last_eval.accuracy, line["train_loss"].is_null() ? "-" : line["train_loss"].dump().c_str());
    }
  };
  current_lr = o.lr * lr_factor(o.steps > 0 ? double(step) / double(o.steps)
                                            : elapsed_before / std::max(1.0, schedule_seconds), o);
  if (step == 0) log_eval();

  const bool tty = isatty(2);
  double last_print = -1e9;
  const int64_t checkpoint_every = o.checkpoint_every > 0 ? o.checkpoint_every : o.eval_every;
  bool stop = false;
  while (!stop) {
    if (o.steps > 0 && step >= o.steps) {
      result.finished = true;
      break;
    }
    if (o.stop_at > 0 && step >= o.stop_at) {
      result.stopped = true;
      break;
    }
    const double secs = run_seconds();
    if (o.minutes > 0 && secs >= o.minutes * 60) {
      result.finished = o.steps <= 0;
      break;
    }
    if (o.interrupt && o.interrupt->load()) {
      result.interrupted = true;
      break;
    }
    const double progress = o.steps > 0 ? double(step) / double(o.steps)
                                        : (elapsed_before + secs) / std::max(1.0, schedule_seconds);
    current_lr = o.lr * lr_factor(progress, o);
    for (auto& g : optimizer.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(current_lr);

    std::vector<const Example*> examples;
    for (size_t i : order.batch(step)) examples.push_back(&data.train[i]);
    Batch batch = make_batch(examples, o.objective, specials, mix_seed(o.seed, 0x100000000ull + uint64_t(step)), masking);
    optimizer.zero_grad();
    auto r = batch_loss(model, batch);
    r.loss.backward();
    frozen.zero_grads();
    if (o.clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), o.clip);
    optimizer.step();
    frozen.restore();
    ++step;
    const double loss = r.loss.item<double>();
    if (!std::isfinite(loss)) throw std::runtime_error("the loss diverged (" + std::to_string(loss) + ") at step " +
                                                       std::to_string(step) + "; try a lower --lr");
    loss_sum += loss;
    ++loss_count;
    tokens_seen += batch.tokens;
    if (o.on_step && !o.on_step(step, loss)) {
      result.interrupted = true;
      stop = true;
    }

    const double now = run_seconds();
    if (o.progress && now - last_print >= (tty ? 0.5 : 60.0)) {
      last_print = now;
      const double tps = double(tokens_seen - start_tokens) / std::max(1e-9, now);
      const double sps = double(step - start_step) / std::max(1e-9, now);
      double eta = o.steps > 0 ? double(o.steps - step) / std::max(1e-9, sps) : o.minutes * 60 - now;
      if (o.minutes > 0) eta = std::min(eta, o.minutes * 60 - now);
      std::fprintf(stderr, "%sstep %lld%s  loss %.4f  lr %.2e  %.0f tok/s  ETA %s%s", tty ? "\r\033[K" : "",
                   static_cast<long long>(step), o.steps > 0 ? ("/" + std::to_string(o.steps)).c_str() : "", loss,
                   current_lr, tps, format_duration(eta).c_str(), tty ? "" : "\n");
      std::fflush(stderr);
    }
    if (step % o.eval_every == 0) log_eval();
    if (step % checkpoint_every == 0) checkpoint();
  }
  if (!result.interrupted && result.last_eval_step != step) {
    if (step % o.eval_every != 0) {
      log_eval();
    } else {  // a resumed run that had nothing left to do: its log already holds this step
      result.last_eval = evaluate(model, evals);
      result.last_eval_step = step;
      result.evaluated = true;
    }
  }
  checkpoint();
  if (o.progress && tty) std::fprintf(stderr, "\n");
  result.step = step;
  result.tokens_per_second = double(tokens_seen - start_tokens) / std::max(1e-9, run_seconds());
  return result;
}

}  // namespace headlab::core::train
