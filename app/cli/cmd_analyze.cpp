// `headlab analyze --model DIR --data FILE… [--metrics …] [--limit N] [--freq FILE…] [--shard I/N] --out DIR`
// and `headlab merge DIR… --out DIR`: what each head does, measured over a dataset, as a report
// (head_report.json/.csv/.md and figures/).
#include "analysis/analyze.h"
#include "analysis/report_figures.h"
#include "app/cli/cli.h"
#include "app/cli/cli_args.h"
#include "app/cli/cli_checks.h"
#include "app/cli/progress.h"
#include "app/cli/stop_signals.h"
#include "core/asset_paths.h"
#include "core/model/model.h"
#include "core/model/system_info.h"
#include "core/token_counts.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer_files.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

namespace headlab::app {
namespace {

struct AnalyzeCliOptions {
  std::string device;  // --device
  std::string model, out, shard, stage = "values", probe;
  std::vector<std::string> data, metrics, freq;
  int64_t limit = 0, max_tokens = 0;
  bool strip_subtypes = false, force = false;
  double positional = 0.9, rare = 0.5, margin = 0.10, prev_token = 0.5, induction = 0.5, copying = 0.5;
  int64_t min_relation = 100;
  int64_t probe_length = 0, probe_sequences = 10, probe_seed = 0;
  int shards = 0;
  int batch = 1;  // --batch
};

namespace fs = std::filesystem;

// The shard folders `headlab analyze` writes into OUT: "shard-I-of-N" → {I, N}; {-1, -1} otherwise.
std::pair<int, int> shard_folder_name(const std::string& name) {
  int index = -1, count = -1;
  char tail = 0;
  if (std::sscanf(name.c_str(), "shard-%d-of-%d%c", &index, &count, &tail) != 2 || index < 0 || count < 1)
    return {-1, -1};
  return {index, count};
}

// A sharded run with --force replaces the analysis in OUT: the merged report of an earlier run
// and shard folders of another shard count go (they cannot belong to this run); the other shards of
// this count are this run's own, written by the other tasks, and stay.
void replace_earlier_analysis(const std::string& out, int shard_count) {
  std::error_code ec;
  for (const char* file : {"head_report.json", "head_report.csv", "head_report.md"}) fs::remove(out + "/" + file, ec);
  fs::remove_all(out + "/figures", ec);
  if (!fs::is_directory(out)) return;
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    const auto [index, count] = shard_folder_name(entry.path().filename().string());
    if (index >= 0 && count != shard_count) fs::remove_all(entry.path(), ec);  // another task may race: ignore
  }
}

// The registered measures' names, comma-separated.
std::string metric_list() {
  std::string out;
  for (const auto& name : analysis::all_metrics()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::atomic<bool> g_interrupted{false};

void write_all(const analysis::HeadReport& report, const std::vector<analysis::ExampleMap>& examples,
               const std::string& folder) {
  analysis::write_report_files(report, folder);
  analysis::write_report_figures(report, examples, folder + "/figures");
}

void print_roles(const analysis::HeadReport& report) {
  int positional = 0, rare = 0, syntactic = 0, prev_token = 0, induction = 0;
  auto has_role = [](const analysis::HeadEntry& h, const char* role) {
    return std::find(h.roles.begin(), h.roles.end(), role) != h.roles.end();
  };
  for (const auto& h : report.heads) {
    positional += h.positional;
    rare += h.rare;
    syntactic += std::any_of(h.syntactic.begin(), h.syntactic.end(), [](const auto& s) { return s.is_role; });
    prev_token += has_role(h, "prev-token");
    induction += has_role(h, "induction");
    if (!h.roles.empty()) {
      std::cout << "  " << core::stack_name(h.stack) << " L" << h.layer << " H" << h.head << ":";
      for (const auto& role : h.roles) std::cout << " " << role;
      std::cout << "\n";
    }
  }
  // Counts of the roles whose measures ran (a measure left out finds no head, which is not a 0).
  const auto& s = report.settings;
  std::cout << report.sentences << " sentences (" << report.skipped << " skipped)";
  if (s.has("positional")) std::cout << "; positional heads: " << positional;
  if (s.has("rare")) std::cout << "; rare-word heads: " << rare;
  if (s.has("syntactic")) std::cout << "; syntactic heads: " << syntactic;
  if (s.has("induction")) {
    const bool probed = std::find(report.missing_shards.begin(), report.missing_shards.end(), 0) == report.missing_shards.end();
    if (probed) std::cout << "; prev-token heads: " << prev_token << ", induction heads: " << induction;
    else std::cout << "; prev-token and induction heads: not measured (shard 0 runs the probe)";
  }
  // Partial because it was stopped, or because merge was allowed to leave shards out.
  std::string missing;
  for (int shard : report.missing_shards) missing += (missing.empty() ? "" : ", ") + std::to_string(shard);
  if (report.partial)
    std::cout << (missing.empty() ? "  [partial: stopped before the end]" : "  [partial: without shard(s) " + missing + "]");
  std::cout << "\n";
}

int analyze_command(const AnalyzeCliOptions& c) {
  core::use_batch_threads();
  analysis::AnalyzeOptions o;
  o.data = c.data;
  o.freq_files = c.freq;
  o.max_tokens = c.max_tokens;
  o.batch = c.batch;
  auto& s = o.settings;
  s.metrics = c.metrics;
  s.limit = c.limit;
  s.stage = analysis::stage_from_key(c.stage);
  s.strip_subtypes = c.strip_subtypes;
  s.positional_threshold = c.positional;
  s.rare_threshold = c.rare;
  s.syntactic_margin = c.margin;
  s.min_relation_count = c.min_relation;
  s.prev_token_threshold = c.prev_token;
  s.induction_threshold = c.induction;
  s.copying_threshold = c.copying;
  s.probe_length = c.probe_length;
  s.probe_sequences = c.probe_sequences;
  s.probe_seed = c.probe_seed;
  // --probe induction: the probe's scores, beside the other measures or (without --data) alone.
  if (!c.probe.empty()) {
    if (s.metrics.empty() && c.data.empty()) s.metrics = {c.probe};
    else if (!s.metrics.empty() && std::find(s.metrics.begin(), s.metrics.end(), c.probe) == s.metrics.end())
      s.metrics.push_back(c.probe);
  }
  if (c.data.empty() && c.probe.empty() && c.metrics.empty())
    throw UsageError("--data is required (a dataset to measure), unless --probe induction or --metrics chooses "
                     "measures that need none (spectra, copying, induction)");
  try {
    std::tie(s.shard_index, s.shard_count) = analysis::shard_from(c.shard, c.shards);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  for (const auto& m : c.metrics)
    if (std::find(analysis::all_metrics().begin(), analysis::all_metrics().end(), m) == analysis::all_metrics().end())
      throw UsageError("--metrics: unknown metric '" + m + "' (" + metric_list() + ")");
  // Sharded runs write each shard beside the others; `headlab merge OUT --out OUT` joins them.
  std::string folder = c.out;
  if (s.shard_count > 1)
    folder = c.out + "/shard-" + std::to_string(s.shard_index) + "-of-" + std::to_string(s.shard_count);
  check_output_folder("--out", folder, {"head_report.json"}, c.force);
  if (s.shard_count > 1 && c.force) replace_earlier_analysis(c.out, s.shard_count);
  auto model = load_model_on(c.model, c.device);
  // A sentence is measured only within the model's positions: a larger --max-tokens says so.
  if (c.max_tokens > model->config.max_positions)
    std::cerr << "--max-tokens " << c.max_tokens << " is more than the model's " << model->config.max_positions
              << " positions: sentences longer than " << model->config.max_positions << " tokens are skipped\n";
  Progress progress("", "sentences");
  o.progress = [&progress](int64_t done, int64_t total) { return progress(done, total); };
  // Work on the weights alone before the sentences (an 8B model's spectra take minutes): a line a step.
  const auto started = std::chrono::steady_clock::now();
  o.preparing = [started](const std::string& what, int64_t done, int64_t total) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::fprintf(stderr, "%s: layer %lld/%lld, %.0fs, ETA %.0fs\n", what.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total), seconds, seconds / double(done) * double(total - done));
    return !g_interrupted.load();
  };
  g_interrupted = false;
  o.cancel = &g_interrupted;
  analysis::AnalyzeResult result;
  {
    StopSignals stop(g_interrupted);  // Ctrl-C, SIGTERM (a Slurm time limit), SIGHUP: a partial report
    try {
      result = analysis::analyze(*model, o);
    } catch (const std::invalid_argument& e) {  // a setting the analysis refuses (a probe length, a measure without data)
      throw UsageError(e.what());
    }
  }
  if (result.report.partial) progress.finish();
  write_all(result.report, result.examples, folder);
  print_roles(result.report);
  std::cout << "wrote " << folder << "/head_report.json, .csv, .md and figures/\n";
  if (result.report.partial) return StopSignals::exit_code();
  // Every sentence skipped: the report's cells are empty, not measurements of 0 — a failure.
  if (result.report.sentences == 0 && result.report.skipped > 0) {
    std::string reasons;
    for (const auto& [why, n] : result.report.skipped_reasons)
      reasons += (reasons.empty() ? "" : ", ") + std::to_string(n) + " " + why;
    std::cerr << "headlab analyze: no sentence was measured: all " << result.report.skipped << " were skipped ("
              << reasons << "); the report says so\n";
    return 1;
  }
  return 0;
}

struct MergeCliOptions {
  std::vector<std::string> inputs;
  std::string out;
  bool allow_missing = false, force = false;
};

int merge_command(const MergeCliOptions& c) {
  check_output_folder("--out", c.out, {"head_report.json"}, c.force);
  std::vector<std::string> reports;
  for (const auto& input : c.inputs) {
    // A folder of shard-I-of-N folders, as sharded `headlab analyze --out` writes them: the shards
    // are read even when the folder also holds an earlier merge's head_report.json.
    std::map<int, std::vector<fs::path>> by_count;  // N → its shard folders
    if (fs::is_directory(input))
      for (const auto& entry : fs::directory_iterator(input)) {
        const auto [index, count] = shard_folder_name(entry.path().filename().string());
        if (index >= 0 && entry.is_directory() && fs::exists(entry.path() / "head_report.json"))
          by_count[count].push_back(entry.path());
      }
    if (by_count.size() > 1) {
      // Shards of two analyses (another shard count): name them, newest first, and refuse to guess.
      auto newest = [](const std::vector<fs::path>& folders) {
        fs::file_time_type t{};
        for (const auto& f : folders) t = std::max(t, fs::last_write_time(f / "head_report.json"));
        return t;
      };
      std::vector<std::pair<int, fs::file_time_type>> order;
      for (const auto& [count, folders] : by_count) order.push_back({count, newest(folders)});
      std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      std::vector<std::string> stale_names;
      for (size_t i = 1; i < order.size(); ++i)
        for (const auto& f : by_count[order[i].first]) stale_names.push_back(f.filename().string());
      std::sort(stale_names.begin(), stale_names.end());
      std::string stale;
      for (const auto& name : stale_names) stale += " " + name;
      throw UsageError(input + " holds the shards of more than one analysis: " +
                       std::to_string(by_count[order[0].first].size()) + " of " + std::to_string(order[0].first) +
                       " (the newest), and stale ones of another shard count:" + stale +
                       ". Remove the stale folders, or rerun the analysis with --force, which replaces them");
    }
    if (!by_count.empty()) {
      std::vector<std::string> shards;
      for (const auto& f : by_count.begin()->second) shards.push_back(f.string());
      std::sort(shards.begin(), shards.end());
      reports.insert(reports.end(), shards.begin(), shards.end());
    } else if (fs::is_regular_file(input) || fs::exists(fs::path(input) / "head_report.json")) {
      reports.push_back(input);
    } else {
      throw UsageError(input + ": no head_report.json there, nor shard-*/head_report.json");
    }
  }
  std::vector<analysis::HeadReport> loaded;
  for (const auto& path : reports) loaded.push_back(analysis::read_head_report(path));
  const analysis::HeadReport merged = analysis::merge_shards(loaded, c.allow_missing);
  write_all(merged, {}, c.out);
  print_roles(merged);
  std::cout << "wrote " << c.out << "/head_report.json, .csv, .md and figures/ (" << reports.size() << " reports"
            << (merged.missing_shards.empty() ? "" : "; partial: shard(s) missing, named in the report") << ")\n";
  return 0;
}

struct CountCliOptions {
  std::string model, out;
  std::vector<std::string> data;
  bool force = false;
};

// Gives a model folder the token counts of a corpus (its training text, usually): the frequency
// ranks `analyze` uses for the rare-word measure when no --freq is given.
int count_tokens_command(const CountCliOptions& c) {
  auto tokenizer = core::load_folder_tokenizer(c.model);
  if (!tokenizer) throw UsageError(core::no_tokenizer(c.model));
  const std::string out = c.out.empty() ? c.model + "/token_counts.json" : c.out;
  check_output_file("--out", out, c.force);
  const auto counts = core::count_tokens_in_files(*tokenizer, c.data);
  // All-zero counts would rank every token alike, and the rare-word measure would find no rare word.
  if (counts.total == 0) throw UsageError("the data holds no text to count (empty files): nothing written");
  core::save_token_counts(counts, out);
  std::cout << "counted " << counts.total << " tokens in " << c.data.size() << " file(s); wrote " << out << "\n";
  return 0;
}

}  // namespace

void add_analyze_command(CLI::App& app, Action& action) {
  auto c = std::make_shared<AnalyzeCliOptions>();
  auto* cmd = app.add_subcommand("analyze", command_description("analyze"));
  cmd->add_option("--model", c->model, "Model folder (native or Hugging Face) with a tokenizer (default: the shipped default model)");
  add_device_option(cmd, c->device);
  cmd->add_option("--data", c->data,
                  "Plain text (a sentence a line), CoNLL-U files, or folders of them (not needed by spectra, copying "
                  "and the induction probe)");
  cmd->add_option("--out", c->out, "Report folder (head_report.json/.csv/.md, figures/)")->required();
  cmd->add_option("--metrics", c->metrics, "Comma-separated, of: " + metric_list() + " (default: all)")->delimiter(',');
  cmd->add_option("--probe", c->probe,
                  "induction: score previous-token, duplicate-token and induction heads on repeated random tokens "
                  "(with or without --data)")
      ->check(CLI::IsMember({"induction"}));
  cmd->add_option("--probe-length", c->probe_length,
                  "Random tokens per copy in the induction probe, at least 2 (0 = as many as fit, at most 50: the "
                  "default)")
      ->check(non_negative());
  cmd->add_option("--probe-sequences", c->probe_sequences, "Sequences in the induction probe (default 10)")
      ->check(positive());
  cmd->add_option("--probe-seed", c->probe_seed, "Seed of the induction probe's tokens (default 0)")
      ->check(non_negative());
  cmd->add_option("--limit", c->limit, "Analyse only the first N sentences (0 = all, the default)")
      ->check(non_negative());
  cmd->add_option("--freq", c->freq, "Frequency corpus for rare-word ranks (plain text; default: the model folder's "
                                     "token_counts.json, else the dataset)");
  cmd->add_option("--shard", c->shard,
                  "I/N: analyse every N-th sentence from the I-th (default: mpirun's rank and size, or a Slurm "
                  "array task's id with --shards)");
  cmd->add_option("--shards", c->shards,
                  "N: the analysis's shard count, required in a Slurm array (the task id is the shard index, "
                  "0 to N-1), checked against mpirun's size")
      ->check(positive());
  cmd->add_option("--max-tokens", c->max_tokens, "Skip longer sentences (default: the model's positions)")
      ->check(positive());
  cmd->add_option("--batch", c->batch,
                  "Sentences per forward pass (default 1: bit-identical reports however the data is sharded; more "
                  "reads each weight once per batch, for large models whose weights stream from memory)")
      ->check(number_in(1, 256));
  cmd->add_option("--stage", c->stage,
                  "Maps the attention measures read: values (U, what multiplies the values) or softmax (W)")
      ->check(CLI::IsMember({"values", "softmax"}));
  cmd->add_flag("--strip-subtypes", c->strip_subtypes, "Score nsubj:pass as nsubj (subtypes are kept by default)");
  cmd->add_flag("--force", c->force,
                "Replace the analysis in --out (sharded: this shard's folder, the earlier merge, and shard folders "
                "of another shard count)");
  cmd->add_option("--positional-threshold", c->positional, "Positional head: share at one offset >= this")
      ->check(number_in(0.0, 1.0));
  cmd->add_option("--rare-threshold", c->rare, "Rare-word head: share on the rarest token > this")->check(number_in(0.0, 1.0));
  cmd->add_option("--syntactic-margin", c->margin, "Syntactic head: accuracy >= baseline + this")->check(number_in(0.0, 1.0));
  cmd->add_option("--prev-token-threshold", c->prev_token, "Prev-token head: previous-token score >= this")
      ->check(number_in(0.0, 1.0));
  cmd->add_option("--induction-threshold", c->induction, "Induction head: induction score >= this")
      ->check(number_in(0.0, 1.0));
  cmd->add_option("--copying-threshold", c->copying, "Copying head: OV copying score >= this")
      ->check(number_in(-1.0, 1.0));
  cmd->add_option("--min-relation-count", c->min_relation,
                  "Score relations with at least this many arcs (nsubj, obj, amod, advmod always)")
      ->check(non_negative());
  cmd->callback([c, &action] { action = [c] {
      if (c->model.empty()) c->model = core::default_model_or_throw();
      return analyze_command(*c);
    }; });
}

void add_merge_command(CLI::App& app, Action& action) {
  auto m = std::make_shared<MergeCliOptions>();
  auto* merge = app.add_subcommand("merge", command_description("merge"));
  merge->add_option("reports", m->inputs, "Report folders (or a folder of shard-* folders)")->required();
  merge->add_option("--out", m->out, "Merged report folder")->required();
  merge->add_flag("--allow-missing", m->allow_missing, "Merge even when shards are missing (the report says which)");
  merge->add_flag("--force", m->force, "Replace a report already in --out");
  merge->callback([m, &action] { action = [m] { return merge_command(*m); }; });
}

void add_count_tokens_command(CLI::App& app, Action& action) {
  auto t = std::make_shared<CountCliOptions>();
  auto* count = app.add_subcommand("count-tokens", command_description("count-tokens"));
  count->add_option("--model", t->model, "Model folder with a tokenizer")->required()->check(CLI::ExistingDirectory);
  count->add_option("--data", t->data, "Plain-text files (a model's training text)")->required()->check(CLI::ExistingFile);
  count->add_option("--out", t->out, "Where to write (default: MODEL/token_counts.json)");
  count->add_flag("--force", t->force, "Replace an existing token_counts.json");
  count->callback([t, &action] { action = [t] { return count_tokens_command(*t); }; });
}

}  // namespace headlab::app
