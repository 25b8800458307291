// `headlab prune --model DIR --data FILE… [--held-out FILE…] [--lambda λ1,λ2,…] [--roles REPORT]
// [--fine-tune] [--export-session] --out DIR`: Voita et al. 2019 §6 — a Hard Concrete gate per head
// trained with an L0 penalty (core/train/head_pruning.h), once per λ. Writes, per λ, the heads kept
// per layer and the held-out loss and top-1 with the test-time gates (prune.json, prune.md), the
// paper's curve of quality against heads kept (prune.svg/.png), optionally a session per λ that
// opens the model with those gates, and — given a head report — which roles the surviving heads have.
#include "analysis/head_report.h"
#include "analysis/line_chart.h"
#include "app/cli/batch_memory.h"
#include "app/cli/cli.h"
#include "app/cli/cli_args.h"
#include "app/cli/cli_checks.h"
#include "app/cli/progress.h"
#include "app/cli/stop_signals.h"
#include "app/document/report_match.h"
#include "app/document/session.h"
#include "core/atomic_file.h"
#include "core/model/model.h"
#include "core/precision.h"
#include "core/tokenizer_files.h"
#include "core/train/data.h"
#include "core/train/head_pruning.h"
#include "core/train/trainer.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

namespace headlab::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct PruneCliOptions {
  std::string model, out, roles;
  std::string device;  // --device
  std::vector<std::string> data, held_out;
  std::vector<double> lambdas{0.001, 0.003, 0.01, 0.03, 0.1};
  int64_t steps = 300, seq_len = 128, batch_tokens = 2048;
  double lr = 0.05, fine_tune_lr = 1e-4, held_out_fraction = 0.1;
  bool fine_tune = false, export_session = false, force = false;
  uint64_t seed = 1;
  int threads = 0;
};

// The shortest spelling that reads back as `lambda` (names OUT/lambda-λ/ and the λ's session).
std::string lambda_text(double lambda) {
  for (int digits = 6;; ++digits) {
    std::ostringstream s;
    s.precision(digits);
    s << lambda;
    if (digits >= 17 || std::stod(s.str()) == lambda) return s.str();
  }
}

// One λ's outcome.
struct LambdaRun {
  double lambda = 0;
  core::train::PruneResult gates;
  core::train::EvalResult quality;
  double seconds = 0;
  std::string session;  // written session file, "" = none
};

// Head key "stack L H" → the head's roles in the report ("" = none).
using RoleMap = std::map<std::string, std::vector<std::string>>;
std::string head_key(core::Stack stack, int layer, int head) {
  return std::string(core::stack_name(stack)) + " " + std::to_string(layer) + " " + std::to_string(head);
}

// The roles of a report measured on this model (its weights, as the window decides); a report of
// another model is refused, naming both, rather than its roles read onto these heads by position.
RoleMap roles_from(const std::string& path, std::shared_ptr<core::Model> model, const std::string& folder) {
  RoleMap roles;
  if (path.empty()) return roles;
  const auto report = analysis::read_head_report(path);
  WorkbenchEngine engine;
  const std::string mismatch = report_mismatch(report, engine.use(std::move(model), folder));
  if (!mismatch.empty()) throw std::runtime_error("--roles: " + path + " was " + mismatch);
  for (const auto& h : report.heads) roles[head_key(h.stack, h.layer, h.head)] = h.roles;
  return roles;
}

// The role classes of a head for the survival table: the kind of each of its roles ("syntactic" for
// "syntactic(nsubj)"), each once; "none" for a head without a role. A head with two roles counts
// under both.
std::vector<std::string> role_classes(const std::vector<std::string>& roles) {
  std::vector<std::string> classes;
  for (const auto& r : roles) {
    const std::string kind = r.substr(0, r.find('('));
    if (std::find(classes.begin(), classes.end(), kind) == classes.end()) classes.push_back(kind);
  }
  if (classes.empty()) classes.push_back("none");
  return classes;
}

std::string layer_name(const core::train::LayerGates& l) {
  return (l.stack == core::Stack::Encoder ? "E" : l.stack == core::Stack::Decoder ? "D" : "X") + std::to_string(l.layer);
}

void write_session(const LambdaRun& run, const std::string& model_folder, const std::string& path) {
  SessionState s;
  s.model_folder = fs::absolute(model_folder).lexically_normal().string();
  for (const auto& l : run.gates.layers) {
    auto& c = s.controls.at(l.stack, l.layer);
    c.gates.assign(l.gate.begin(), l.gate.end());
  }
  save_session_file(path, s);
}

// The survival analysis (Voita et al. 2019 §6.2: the specialised heads are pruned last): per role
// class, the share of its heads still open at each λ (a head with roles of two classes in both), and
// each head's last λ open.
json survival(const std::vector<LambdaRun>& runs, const RoleMap& roles) {
  std::map<std::string, std::vector<int>> kept;  // class → heads kept per λ
  std::map<std::string, int> total;
  json heads = json::array();
  if (runs.empty()) return json::object();
  for (const auto& l : runs.front().gates.layers)
    for (size_t h = 0; h < l.gate.size(); ++h) {
      const auto it = roles.find(head_key(l.stack, l.layer, int(h)));
      const std::vector<std::string> r = it == roles.end() ? std::vector<std::string>{} : it->second;
      const std::vector<std::string> classes = role_classes(r);
      std::vector<bool> open(runs.size(), false);
      double last_open = -1;
      for (size_t i = 0; i < runs.size(); ++i) {
        const auto& layer = *std::find_if(runs[i].gates.layers.begin(), runs[i].gates.layers.end(),
                                          [&](const auto& g) { return g.stack == l.stack && g.layer == l.layer; });
        open[i] = layer.gate[h] > 0;
        if (open[i]) last_open = std::max(last_open, runs[i].lambda);
      }
      for (const auto& cls : classes) {
        ++total[cls];
        auto& k = kept[cls];
        k.resize(runs.size(), 0);
        for (size_t i = 0; i < runs.size(); ++i) k[i] += open[i];
      }
      heads.push_back({{"stack", core::stack_name(l.stack)}, {"layer", l.layer}, {"head", h}, {"roles", r},
                       {"classes", classes}, {"last_lambda_open", last_open < 0 ? json(nullptr) : json(last_open)}});
    }
  json classes = json::object();
  for (const auto& [cls, k] : kept) {
    std::vector<double> share;
    for (int n : k) share.push_back(double(n) / total[cls]);
    classes[cls] = {{"heads", total[cls]}, {"kept", k}, {"kept_share", share}};
  }
  return {{"classes", classes}, {"heads", heads}};
}

// "Partial: stopped (Ctrl-C) after 1 of 2 λ values; not run: 0.1", or "" for a whole sweep.
std::string partial_text(const PruneCliOptions& o, const std::vector<LambdaRun>& runs) {
  if (runs.size() >= o.lambdas.size()) return "";
  std::string missing;
  for (size_t i = runs.size(); i < o.lambdas.size(); ++i) missing += (missing.empty() ? "" : ", ") + lambda_text(o.lambdas[i]);
  return "Partial: stopped (" + StopSignals::name() + ") after " + std::to_string(runs.size()) + " of " +
         std::to_string(o.lambdas.size()) + " λ values; not run: " + missing;
}

std::string markdown(const PruneCliOptions& o, const core::train::EvalResult& base, int heads,
                     const std::vector<LambdaRun>& runs, const json& surv) {
  std::ostringstream md;
  char line[512];
  md << "# Head pruning: " << o.model << "\n\n";
  if (const std::string partial = partial_text(o, runs); !partial.empty()) md << "**" << partial << ".**\n\n";
  md
     << "Hard Concrete gates with an L0 penalty (Voita et al. 2019 §6; Louizos et al. 2018), " << o.steps
     << " steps per λ, weights " << (o.fine_tune ? "fine-tuned" : "frozen")
     << ". A head is kept when its test-time gate is above 0; quality is the model's own objective on the held-out "
        "text with those gates.\n\n"
     << "| λ | heads kept | per layer | held-out loss | top-1 |\n|---|---|---|---|---|\n";
  std::snprintf(line, sizeof line, "| – (no gates) | %d | all | %.4f | %.2f%% |\n", heads, base.loss, 100 * base.accuracy);
  md << line;
  for (const auto& r : runs) {
    std::string per_layer;
    for (const auto& l : r.gates.layers) per_layer += (per_layer.empty() ? "" : " ") + layer_name(l) + ":" + std::to_string(l.kept());
    std::snprintf(line, sizeof line, "| %s | %d | %s | %.4f | %.2f%% |\n", lambda_text(r.lambda).c_str(),
                  r.gates.kept(), per_layer.c_str(), r.quality.loss, 100 * r.quality.accuracy);
    md << line;
  }
  if (!o.roles.empty() && surv.contains("classes")) {
    md << "\n## Which heads survive (roles from " << o.roles
       << ")\n\nA head with roles of two kinds counts under both.\n\n| role | heads |";
    for (const auto& r : runs) md << " kept at λ " << lambda_text(r.lambda) << " |";
    md << "\n|---|---|";
    for (size_t i = 0; i < runs.size(); ++i) md << "---|";
    md << "\n";
    for (const auto& [cls, c] : surv["classes"].items()) {
      md << "| " << cls << " | " << c["heads"].get<int>() << " |";
      for (size_t i = 0; i < runs.size(); ++i) {
        std::snprintf(line, sizeof line, " %d (%.0f%%) |", c["kept"][i].get<int>(), 100 * c["kept_share"][i].get<double>());
        md << line;
      }
      md << "\n";
    }
    md << "\nHeads with a role, and the largest λ at which each is still open:\n\n";
    for (const auto& h : surv["heads"])
      if (!h["roles"].empty()) {
        md << "- " << h["stack"].get<std::string>() << " L" << h["layer"].get<int>() << " H" << h["head"].get<int>() << " (";
        for (size_t i = 0; i < h["roles"].size(); ++i) md << (i ? ", " : "") << h["roles"][i].get<std::string>();
        md << "): " << (h["last_lambda_open"].is_null() ? "closed at every λ" : "open up to λ " + lambda_text(h["last_lambda_open"].get<double>())) << "\n";
      }
  }
  return md.str();
}

int prune_command(const PruneCliOptions& o) {
  const core::PrecisionScope exact(core::Precision::exact);  // gates and quality alike, whatever --precision says
  check_output_folder("--out", o.out, {"prune.json"}, o.force);
  for (size_t i = 0; i < o.lambdas.size(); ++i)  // one λ's session and folder would overwrite the other's
    for (size_t j = 0; j < i; ++j)
      if (o.lambdas[i] == o.lambdas[j]) throw UsageError("--lambda gives λ " + lambda_text(o.lambdas[i]) + " twice");
  if (o.threads > 0) at::set_num_threads(o.threads);
  const torch::Device device = device_option(o.device);  // refused before the model loads
  auto model = core::load_model(o.model);
  check_seq_len(model->config, o.seq_len, o.model);
  // The gates learn through a backward pass of each batch: refused up front when it cannot fit.
  check_batch_memory(model->config, std::max<int64_t>(1, o.batch_tokens / o.seq_len), o.seq_len, true, "prune");
  place_model(*model, device);
  if (!model->tokenizer) throw UsageError(core::no_tokenizer(o.model) + ": prune trains on text");
  const RoleMap roles = roles_from(o.roles, model, o.model);
  const auto objective = core::train::objective_of(model->config);
  if (objective == core::train::Objective::Seq2Seq)
    throw UsageError("prune trains on plain text; " + o.model + " is a sequence-to-sequence model");
  const auto specials = core::train::special_tokens(*model->tokenizer);
  auto data = core::train::load_text_dataset(o.data, *model->tokenizer, objective, o.seq_len,
                                             o.held_out.empty() ? o.held_out_fraction : 0.0);
  if (!o.held_out.empty())
    data.held_out = core::train::load_text_dataset(o.held_out, *model->tokenizer, objective, o.seq_len, 0).train;
  if (data.train.empty()) throw UsageError("--data: no training text after tokenization");
  if (data.held_out.empty()) throw UsageError("no held-out text: give --held-out FILE or more --data");
  const int64_t batch = std::max<int64_t>(1, o.batch_tokens / o.seq_len);
  auto evaluate = [&](core::Model& m, const core::train::HeadGateTensors* gates) {
    return core::train::evaluate_examples(m.module, data.held_out, objective, specials, {}, o.seed, batch, gates);
  };
  // Ctrl-C, SIGTERM (a Slurm time limit), SIGHUP: the λ under way is dropped, the finished ones are
  // written as a sweep that stopped early (a stop before the first λ says that nothing was written).
  static std::atomic<bool> interrupted{false};
  interrupted = false;
  StopSignals stop_signals(interrupted);
  const auto base = evaluate(*model, nullptr);
  std::printf("%s: %zu training and %zu held-out sequences of %lld tokens; without gates: loss %.4f, top-1 %.2f%%\n",
              o.model.c_str(), data.train.size(), data.held_out.size(), static_cast<long long>(o.seq_len), base.loss,
              100 * base.accuracy);
  fs::create_directories(o.out);

  std::vector<LambdaRun> runs;
  int heads = 0;
  for (double lambda : o.lambdas) {
    if (interrupted.load()) break;
    // Fine-tuning changes the weights: each λ starts again from the model as saved.
    auto working = o.fine_tune ? core::load_model(o.model) : model;
    if (o.fine_tune) {
      core::own_weights(*working);  // trained: float32 copies, not views of the files
      place_model(*working, device);
    }
    core::train::PruneOptions p;
    p.lambda = lambda;
    p.steps = o.steps;
    p.batch_size = batch;
    p.lr = o.lr;
    p.fine_tune = o.fine_tune;
    p.fine_tune_lr = o.fine_tune_lr;
    p.seed = o.seed;
    Progress progress("λ " + lambda_text(lambda), "steps");
    p.progress = [&progress](int64_t step, int64_t steps, double loss, double expected) {
      char detail[64];
      std::snprintf(detail, sizeof detail, "loss %.4f, expected open heads %.1f", loss, expected);
      return progress(step, steps, detail) && !interrupted.load();
    };
    const auto start = std::chrono::steady_clock::now();
    LambdaRun run;
    run.lambda = lambda;
    run.gates = core::train::train_head_gates(working->module, data.train, objective, specials, p);
    if (interrupted.load()) break;  // its gates are not trained to the end
    const auto gates = core::train::gate_tensors(run.gates);
    run.quality = evaluate(*working, &gates);
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    heads = run.gates.heads();
    progress.finish();
    std::printf("λ %-8s heads kept %2d of %d:", lambda_text(lambda).c_str(), run.gates.kept(), heads);
    for (const auto& l : run.gates.layers) std::printf(" %s:%d", layer_name(l).c_str(), l.kept());
    std::printf("  loss %.4f, top-1 %.2f%%  (%.0f s)\n", run.quality.loss, 100 * run.quality.accuracy, run.seconds);
    std::fflush(stdout);  // each λ's line is kept, also in a log a stop ends
    std::string folder = o.model;
    if (o.fine_tune) {
      folder = o.out + "/lambda-" + lambda_text(lambda);
      working->config.name += " (fine-tuned with head gates, λ " + lambda_text(lambda) + ")";
      core::save_model(*working, folder, working->weights_dtype == "F64" ? "F32" : working->weights_dtype, o.model);
    }
    if (o.export_session) {
      run.session = o.out + "/lambda-" + lambda_text(lambda) + ".session.json";
      write_session(run, folder, run.session);
    }
    runs.push_back(std::move(run));
  }

  const bool stopped = runs.size() < o.lambdas.size();
  if (runs.empty()) {  // stopped during the first λ: no gates to write
    std::printf("stopped by %s before the first λ finished; nothing written\n", StopSignals::name().c_str());
    return StopSignals::exit_code();
  }
  const json surv = roles.empty() ? json::object() : survival(runs, roles);
  json out = {{"model", o.model},
              {"method", "Hard Concrete L0 gates per head (Voita et al. 2019 section 6; Louizos et al. 2018)"},
              {"steps", o.steps},
              {"fine_tune", o.fine_tune},
              {"held_out_sequences", data.held_out.size()},
              {"seq_len", o.seq_len},
              {"heads", heads},
              {"partial", stopped},
              {"lambdas", o.lambdas},  // asked for; "runs" holds those that finished
              {"baseline", {{"loss", base.loss}, {"accuracy", base.accuracy}, {"targets", base.targets}}},
              {"roles_report", o.roles},
              {"runs", json::array()}};
  for (const auto& r : runs) {
    json layers = json::array();
    for (const auto& l : r.gates.layers)
      layers.push_back({{"stack", core::stack_name(l.stack)}, {"layer", l.layer}, {"gates", l.gate}, {"open_probability", l.open_probability},
                        {"log_alpha", l.log_alpha}, {"kept", l.kept()}});
    out["runs"].push_back({{"lambda", r.lambda}, {"heads_kept", r.gates.kept()}, {"loss", r.quality.loss},
                           {"accuracy", r.quality.accuracy}, {"seconds", r.seconds}, {"layers", layers},
                           {"session", r.session}});
  }
  if (!surv.empty()) out["survival"] = surv;
  core::write_file_atomic(o.out + "/prune.json", out.dump(2) + "\n");
  core::write_file_atomic(o.out + "/prune.md", markdown(o, base, heads, runs, surv));

  analysis::LineChart chart;
  chart.title = "Head pruning: held-out top-1 against heads kept";
  chart.subtitle = "Hard Concrete L0 gates (Voita et al. 2019 §6), weights " +
                   std::string(o.fine_tune ? "fine-tuned" : "frozen") + "; labels: λ";
  if (const std::string partial = partial_text(o, runs); !partial.empty()) chart.subtitle += ". " + partial;
  chart.x_label = "heads kept";
  chart.y_label = "top-1 (%)";
  analysis::ChartSeries curve{"pruned", {}, {}, {}, true};
  for (const auto& r : runs) {
    curve.x.push_back(r.gates.kept());
    curve.y.push_back(100 * r.quality.accuracy);
    curve.notes.push_back("λ " + lambda_text(r.lambda));
  }
  chart.series = {curve, {"all heads, no gates", {double(heads)}, {100 * base.accuracy}, {}, false}};
  std::vector<std::string> written;
  analysis::write_line_chart(chart, o.out, "prune", written);
  std::printf("wrote %s/prune.json, prune.md, prune.svg, prune.png%s\n", o.out.c_str(),
              o.export_session ? " and a session per λ" : "");
  if (stopped)
    std::printf("stopped by %s after %zu of %zu λ values (prune.json says \"partial\": true)\n",
                StopSignals::name().c_str(), runs.size(), o.lambdas.size());
  if (!surv.empty()) {
    std::printf("heads kept per role:");
    for (const auto& [cls, c] : surv["classes"].items()) {
      std::printf("  %s (%d):", cls.c_str(), c["heads"].get<int>());
      for (const auto& k : c["kept"]) std::printf(" %d", k.get<int>());
    }
    std::printf("\n");
  }
  return stopped ? StopSignals::exit_code() : 0;
}

}  // namespace

void add_prune_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<PruneCliOptions>();
  auto* cmd = app.add_subcommand("prune", command_description("prune"));
  cmd->add_option("--model", o->model, "Model folder")->required();
  add_device_option(cmd, o->device);
  cmd->add_option("--data", o->data, "Text to train the gates on")->required();
  cmd->add_option("--held-out", o->held_out, "Text to measure quality on (default: every 10th sequence of --data)");
  cmd->add_option("--lambda", o->lambdas, "λ values, comma-separated (default 0.001,0.003,0.01,0.03,0.1)")
      ->delimiter(',')
      ->check(non_negative());
  cmd->add_option("--steps", o->steps, "Optimizer steps per λ (default 300)")->check(positive());
  cmd->add_option("--lr", o->lr, "Learning rate of the gates' log α (Adam, default 0.05)")->check(positive());
  cmd->add_flag("--fine-tune", o->fine_tune, "Train the model's weights with the gates (writes OUT/lambda-λ/ per λ)");
  cmd->add_option("--fine-tune-lr", o->fine_tune_lr, "Learning rate of the weights with --fine-tune (default 1e-4)")
      ->check(positive());
  cmd->add_option("--roles", o->roles, "A head report (headlab analyze) whose roles the survivors are counted by");
  cmd->add_flag("--export-session", o->export_session, "Write OUT/lambda-λ.session.json: the window opens the model with those gates");
  cmd->add_option("--seq-len", o->seq_len, "Tokens per sequence (default 128)")->check(positive());
  cmd->add_option("--batch-tokens", o->batch_tokens, "Tokens per batch (default 2048)")->check(positive());
  cmd->add_option("--seed", o->seed, "Random seed (gate samples, data order, masks)")
      ->check(non_negative());
  cmd->add_option("--threads", o->threads, "Intra-op threads (default: all cores)")->check(non_negative());
  cmd->add_option("--out", o->out, "Folder for the results")->required();
  cmd->add_flag("--force", o->force, "Replace results already in --out");
  cmd->callback([o, &action] { action = [o] { return prune_command(*o); }; });
}

}  // namespace headlab::app
