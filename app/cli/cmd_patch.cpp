// `headlab patch --model DIR --clean TEXT --corrupt TEXT (--answer TOKEN --wrong TOKEN | --metric
//  logit|prob|kl) --what z|pattern|q|k|v|resid|mlp [--positions all|each] --out DIR`: activation
// patching of every head (or layer, or layer × position) from the corrupted run into the clean one,
// with attribution patching beside it, and optionally path patching from one sender head into chosen
// receivers (analysis/patching.h). Writes patch.json and heatmaps.
#include "analysis/heatmap_figure.h"
#include "analysis/patching.h"
#include "app/cli/cli.h"
#include "app/cli/cli_args.h"
#include "app/cli/cli_checks.h"
#include "app/cli/progress.h"
#include "app/cli/stop_signals.h"
#include "core/asset_paths.h"
#include "core/atomic_file.h"
#include "core/cancelled.h"
#include "core/model/model.h"
#include "core/model/system_info.h"
#include "core/precision.h"
#include "core/tokenizer/framing.h"
#include "core/tokenizer/token_lookup.h"
#include "core/tokenizer_files.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>

namespace headlab::app {
namespace {

struct PatchOptions {
  std::string device;  // --device
  std::string model, clean, corrupt, clean_ids, corrupt_ids, answer, wrong, out;
  int64_t answer_id = -1, wrong_id = -1, position = -1;
  std::string metric, what = "z", positions = "all";
  std::string path_sender, path_receivers, path_site = "k";
  bool add_special = true, no_exact = false, no_attribution = false, force = false;
};

std::vector<int64_t> input_ids(const core::Model& model, const std::string& text, const std::string& ids,
                               const char* text_option, const char* ids_option, bool add_special) {
  if (!ids.empty()) return parse_ids(ids, ids_option);
  if (text.empty())
    throw UsageError(std::string(text_option) + " is missing or empty: give a text, or the ids with " + ids_option);
  if (!model.tokenizer)
    throw UsageError(core::no_tokenizer(model.folder.empty() ? "the model" : model.folder) + ": give " + ids_option +
                     " instead of " + text_option);
  auto out = add_special ? core::model_encoding(model.config, *model.tokenizer, text).ids
                         : model.tokenizer->encode(text, false).ids;
  if (out.empty()) throw UsageError(std::string(text_option) + " produced no tokens");
  return out;
}

// "the clean text has 7 tokens and the corrupted one 8; they first differ at position 3: 'Mary' vs 'Ma'"
std::string length_mismatch(const core::Model& model, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  auto token = [&](int64_t id) { return model.tokenizer ? "'" + core::token_name(model.tokenizer.get(), id) + "'" : std::to_string(id); };
  auto list = [&](const std::vector<int64_t>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + token(ids[i]);
    return s;
  };
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  std::string where = i < std::min(a.size(), b.size()) ? "; they first differ at position " + std::to_string(i) + ": " +
                                                              token(a[i]) + " vs " + token(b[i])
                                                        : "";
  return "the clean input has " + std::to_string(a.size()) + " tokens and the corrupted one " + std::to_string(b.size()) +
         where + ". Patching takes activations position by position, so both must tokenize to the same length.\n  clean:     " +
         list(a) + "\n  corrupted: " + list(b);
}

analysis::HeadRef parse_head(const std::string& text, const char* what) {
  const auto dot = text.find('.');
  try {
    if (dot != std::string::npos) {
      size_t a = 0, b = 0;
      const int layer = std::stoi(text.substr(0, dot), &a);
      const int head = std::stoi(text.substr(dot + 1), &b);
      if (a == dot && b == text.size() - dot - 1) return {layer, head};
    }
  } catch (const std::exception&) {
  }
  throw UsageError(std::string(what) + ": '" + text + "' is not LAYER.HEAD (e.g. 0.3)");
}

// [layer][unit][position] as JSON: [layer][head] (heads, all positions), [layer][head][position],
// [layer] (resid/mlp, all positions) or [layer][position].
nlohmann::json table_json(const analysis::PatchTable& t, bool heads, bool each) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& layer : t) {
    if (heads) {
      nlohmann::json row = nlohmann::json::array();
      for (const auto& unit : layer) row.push_back(each ? nlohmann::json(unit) : nlohmann::json(unit[0]));
      out.push_back(row);
    } else {
      out.push_back(each ? nlohmann::json(layer[0]) : nlohmann::json(layer[0][0]));
    }
  }
  return out;
}

// A heatmap of a table: layer × head (heads with --positions each: summed over positions), layer ×
// position (resid/mlp with --positions each) or one column (resid/mlp, every position at once).
void table_figure(const analysis::PatchTable& t, bool heads, bool each, const std::string& title, const std::string& subtitle,
                  const std::vector<std::string>& notes, const std::string& folder, const std::string& name,
                  std::vector<std::string>& written) {
  const size_t units = t.empty() ? 0 : t[0].size();
  const size_t positions = t.empty() || t[0].empty() ? 0 : t[0][0].size();
  std::vector<std::string> cols;
  if (heads)
    for (size_t h = 0; h < units; ++h) cols.push_back("H" + std::to_string(h));
  else
    for (size_t p = 0; p < positions; ++p) cols.push_back(each ? std::to_string(p) : "all positions");
  std::vector<std::vector<double>> rows;
  for (const auto& layer : t) {
    std::vector<double> row;
    if (heads)
      for (const auto& unit : layer) {
        double v = 0;
        for (double x : unit) v += x;
        row.push_back(v);
      }
    else
      row = layer[0];
    rows.push_back(row);
  }
  const std::string axis = heads ? (each ? "head (summed over positions)" : "head") : (each ? "position" : "");
  auto map = analysis::effect_heatmap(title, subtitle, axis, cols, rows);
  map.notes = notes;
  analysis::write_heatmap(map, folder, name, written);
}

std::atomic<bool> g_patch_interrupted{false};

int patch_command(const PatchOptions& o) {
  check_output_folder("--out", o.out, {"patch.json"}, o.force);
  core::use_batch_threads();
  auto model = load_model_on(o.model, o.device);
  analysis::PatchRequest r;
  r.clean = input_ids(*model, o.clean, o.clean_ids, "--clean", "--clean-ids", o.add_special);
  r.corrupt = input_ids(*model, o.corrupt, o.corrupt_ids, "--corrupt", "--corrupt-ids", o.add_special);
  if (r.clean.size() != r.corrupt.size()) throw UsageError(length_mismatch(*model, r.clean, r.corrupt));
  r.answer = o.answer_id >= 0 ? o.answer_id : o.answer.empty() ? -1 : parse_token(*model, o.answer, "--answer");
  r.wrong = o.wrong_id >= 0 ? o.wrong_id : o.wrong.empty() ? -1 : parse_token(*model, o.wrong, "--wrong");
  try {
    r.metric = o.metric.empty() ? analysis::PatchMetric::LogitDiff : analysis::metric_from_name(o.metric);
    r.site = core::site_from_name(o.what);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  // Path patching's heads are checked now, not after the exact re-runs.
  const bool path = !o.path_sender.empty();
  analysis::HeadRef sender;
  std::vector<analysis::HeadRef> receivers;
  core::Site path_site = core::Site::K;
  if (path) {
    sender = parse_head(o.path_sender, "--path");
    std::stringstream in(o.path_receivers);
    for (std::string item; std::getline(in, item, ',');) receivers.push_back(parse_head(item, "--to"));
    try {
      path_site = core::site_from_name(o.path_site);
      analysis::check_path_patch(*model, sender, receivers, path_site);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  r.each_position = o.positions == "each";
  r.position = o.position;
  r.exact = !o.no_exact;
  r.attribution = !o.no_attribution;
  Progress progress("exact patching", "runs");
  r.progress = [&progress](int64_t done, int64_t total) { return progress(done, total); };
  // Ctrl-C stops the exact re-runs (an 8B model's 1,024 heads take most of an hour on a CPU) and
  // writes what is complete: attribution patching whole, the exact cells run so far, marked partial.
  analysis::PatchResult result;
  std::optional<analysis::PatchResult> so_far;
  r.partial = [&so_far](const analysis::PatchResult& p) { so_far = p; };
  g_patch_interrupted = false;
  r.cancel = &g_patch_interrupted;
  bool stopped = false;
  {
    StopSignals stop(g_patch_interrupted);  // Ctrl-C, SIGTERM, SIGHUP: what is complete is written
    try {
      result = analysis::patch_activations(*model, r);
    } catch (const core::Cancelled&) {
      if (!so_far) throw;  // stopped before anything was measured: nothing to write
      result = *so_far;
      stopped = true;
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  int64_t exact_run = 0, exact_cells = 0;
  for (const auto& layer : result.exact)
    for (const auto& unit : layer)
      for (double v : unit) ++exact_cells, exact_run += std::isnan(v) ? 0 : 1;
  if (stopped) {
    progress.finish();
    result.notes.push_back("stopped (" + StopSignals::name() + ") after " + std::to_string(exact_run) + " of " + std::to_string(exact_cells) +
                           " exact re-runs; the cells not run are null");
  }
  const bool heads = core::site_has_heads(r.site);
  nlohmann::json j;
  j["format"] = "headlab-patch";
  j["partial"] = stopped;
  j["model"] = o.model;
  if (const std::string p = core::recorded_precision(); !p.empty()) j["precision"] = p;  // absent: exact
  j["site"] = core::site_name(r.site);
  j["metric"] = analysis::metric_name(r.metric);
  j["positions"] = r.each_position ? "each" : "all";
  j["position"] = result.position;
  j["answer"] = r.answer >= 0 ? nlohmann::json(r.answer) : nlohmann::json(nullptr);
  j["wrong"] = r.wrong >= 0 ? nlohmann::json(r.wrong) : nlohmann::json(nullptr);
  j["clean_ids"] = r.clean;
  j["corrupt_ids"] = r.corrupt;
  j["clean"] = result.clean;
  j["corrupt"] = result.corrupt;
  std::filesystem::create_directories(o.out);
  std::vector<std::string> figures;
  // Each figure names what it measured on, so that it stands alone.
  analysis::PatchFigureFacts facts;
  facts.model = o.model;
  auto input_text = [](const std::string& text, const std::string& ids) { return ids.empty() ? text : "ids " + ids; };
  facts.clean = input_text(o.clean, o.clean_ids);
  facts.counterfactual = input_text(o.corrupt, o.corrupt_ids);
  facts.metric = analysis::metric_name(r.metric);
  facts.position = result.position;
  facts.clean_value = result.clean;
  facts.counterfactual_value = result.corrupt;
  auto token = [&](int64_t id) {
    return (model->tokenizer ? "'" + core::readable_token(core::token_name(model->tokenizer.get(), id)) + "' " : std::string()) + "(" +
           std::to_string(id) + ")";
  };
  if (r.answer >= 0) facts.answer = token(r.answer);  // patch_figure_notes keeps those the metric reads
  if (r.wrong >= 0) facts.wrong = token(r.wrong);
  const auto notes = analysis::patch_figure_notes(facts);
  const std::string what = std::string(core::site_name(r.site));
  if (r.exact) {
    j["effects"] = table_json(result.exact, heads, r.each_position);
    const auto normalised = result.normalised(result.exact);
    j["normalised"] = normalised.empty() ? nlohmann::json(nullptr) : table_json(normalised, heads, r.each_position);
    j["layers_run"] = result.layers_run;
    if (!normalised.empty() && !stopped)  // a stopped run's table has holes: the JSON says which
      table_figure(normalised, heads, r.each_position, "Activation patching: " + what + " from the corrupted run",
                   std::string("(patched − corrupt) / (clean − corrupt) of ") + analysis::metric_name(r.metric) +
                       "; 1 = the clean result kept, 0 = the corrupted one",
                   notes, o.out, "patch_exact", figures);
  }
  if (r.attribution) {
    j["attribution"] = table_json(result.attribution, heads, r.each_position);
    const auto normalised = result.normalised(result.attribution);
    j["attribution_normalised"] = normalised.empty() ? nlohmann::json(nullptr) : table_json(normalised, heads, r.each_position);
    // Not for kl: its estimate is 0 everywhere (the note says why), a figure of "all kept".
    if (!normalised.empty() && r.metric != analysis::PatchMetric::KL)
      table_figure(normalised, heads, r.each_position, "Attribution patching: " + what + " (Nanda 2023)",
                   "first-order estimate of the normalised effect, from one backward pass", notes, o.out,
                   "patch_attribution", figures);
  }
  j["correlation"] = result.correlation ? nlohmann::json(*result.correlation) : nlohmann::json(nullptr);
  if (path && !stopped) {
    double value = 0;
    try {
      value = analysis::path_patch(*model, r, sender, receivers, path_site);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    j["path"] = {{"sender", {sender.layer, sender.head}},
                 {"receivers", nlohmann::json::array()},
                 {"site", o.path_site},
                 {"value", value},
                 {"normalised", result.clean != result.corrupt ? nlohmann::json((value - result.corrupt) / (result.clean - result.corrupt))
                                                               : nlohmann::json(nullptr)}};
    for (const auto& h : receivers) j["path"]["receivers"].push_back({h.layer, h.head});
    std::printf("path patching L%d H%d → %s of %zu receiver head(s): %.6g\n", sender.layer, sender.head,
                o.path_site.c_str(), receivers.size(), value);
  }
  j["notes"] = result.notes;
  j["figures"] = figures;
  core::write_file_atomic(o.out + "/patch.json", j.dump(1) + "\n");
  std::printf("%s: clean %.6g, corrupted %.6g at position %lld\n", analysis::metric_name(r.metric), result.clean,
              result.corrupt, static_cast<long long>(result.position));
  if (r.exact && !r.each_position) {
    const auto normalised = result.normalised(result.exact);
    for (size_t l = 0; l < result.exact.size(); ++l) {
      std::printf("  L%-2zu", l);
      for (size_t u = 0; u < result.exact[l].size(); ++u) {
        const double v = normalised.empty() ? result.exact[l][u][0] : normalised[l][u][0];
        if (std::isnan(v))
          std::printf("        –");  // not run (a stopped run), in a column as wide as " %8.4f"; null in patch.json
        else
          std::printf(" %8.4f", v);
      }
      std::printf("\n");
    }
  }
  if (result.correlation) std::printf("attribution vs exact patching: correlation %.4f\n", *result.correlation);
  for (const auto& note : result.notes) std::printf("note: %s\n", note.c_str());
  std::printf("wrote %s/patch.json", o.out.c_str());
  for (const auto& f : figures) std::printf(", %s", f.c_str());
  std::printf("%s\n", stopped ? " [partial: stopped before the end]" : "");
  return stopped ? StopSignals::exit_code() : 0;
}

}  // namespace

void add_patch_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<PatchOptions>();
  auto* cmd = app.add_subcommand("patch", command_description("patch"));
  cmd->add_option("--model", o->model, "Model folder (default: the shipped default model)");
  add_device_option(cmd, o->device);
  cmd->add_option("--clean", o->clean, "The clean text");
  cmd->add_option("--corrupt", o->corrupt, "The corrupted (counterfactual) text, of the same length in tokens");
  cmd->add_option("--clean-ids", o->clean_ids, "The clean input as token ids, e.g. 1,2,3");
  cmd->add_option("--corrupt-ids", o->corrupt_ids, "The corrupted input as token ids");
  auto* answer = cmd->add_option("--answer", o->answer, "The clean answer: a token or its id");
  auto* wrong = cmd->add_option("--wrong", o->wrong, "The corrupted answer, for the logit difference: a token or its id");
  cmd->add_option("--answer-id", o->answer_id, "The clean answer's id")->check(non_negative())->excludes(answer);
  cmd->add_option("--wrong-id", o->wrong_id, "The corrupted answer's id")->check(non_negative())->excludes(wrong);
  cmd->add_option("--metric", o->metric, "logit-diff (default; needs --answer and --wrong), logit, prob (need --answer) or kl")
      ->check(CLI::IsMember({"logit-diff", "logit", "prob", "kl"}));
  cmd->add_option("--what", o->what, "The site to patch: z (default), pattern, q, k, v, resid or mlp")
      ->check(CLI::IsMember({"z", "pattern", "q", "k", "v", "resid", "mlp"}));
  cmd->add_option("--positions", o->positions, "all (every position at once, default) or each (one patch per position)")
      ->check(CLI::IsMember({"all", "each"}));
  cmd->add_option("--position", o->position, "The scored position (default: a masked LM's first [MASK], else the last)")->check(non_negative());
  cmd->add_option("--path", o->path_sender, "Path patching: the sender head LAYER.HEAD");
  cmd->add_option("--to", o->path_receivers, "Path patching: receiver heads LAYER.HEAD[,LAYER.HEAD…]");
  cmd->add_option("--path-site", o->path_site, "Path patching: the receivers' q, k (default) or v")
      ->check(CLI::IsMember({"q", "k", "v"}));
  cmd->add_flag("--no-exact", o->no_exact, "Skip exact patching (attribution patching only)");
  cmd->add_flag("--no-attribution", o->no_attribution, "Skip attribution patching");
  cmd->add_flag("!--no-special-tokens", o->add_special,
                "Read the texts' bare ids, without the special tokens the model reads around a text ([CLS] … [SEP], BOS)");
  cmd->add_option("--out", o->out, "Output folder (patch.json, heatmaps)")->required();
  cmd->add_flag("--force", o->force, "Replace an existing patch.json");
  cmd->callback([&action, o, cmd] {
    // What the metric reads: an answer and a wrong token (logit-diff), an answer (logit, prob) or
    // neither (kl). A token the metric would not read is refused, as is a missing one, by name.
    const std::string metric = o->metric.empty() ? "logit-diff" : o->metric;
    const bool has_answer = cmd->count("--answer") + cmd->count("--answer-id") > 0;
    const bool has_wrong = cmd->count("--wrong") + cmd->count("--wrong-id") > 0;
    std::string refused;
    if (metric == "logit-diff" && !(has_answer && has_wrong))
      refused = "the logit-diff metric (the default) needs the clean answer and the corrupted one: give --answer and --wrong "
                "(or their ids), or choose --metric logit, prob or kl";
    else if ((metric == "logit" || metric == "prob") && !has_answer)
      refused = "--metric " + metric + " needs the clean answer: give --answer (or --answer-id)";
    else if ((metric == "logit" || metric == "prob") && has_wrong)
      refused = "--metric " + metric + " reads the answer alone: --wrong is for --metric logit-diff";
    else if (metric == "kl" && (has_answer || has_wrong))
      refused = "--metric kl compares whole distributions: --answer and --wrong are for logit-diff, logit or prob";
    else if (o->path_sender.empty() && cmd->count("--path-site") > 0)
      refused = "--path-site is the receivers' site in path patching: give --path and --to with it";
    action = [o, refused] {
      if (!refused.empty()) throw UsageError(refused);
      if (!o->path_sender.empty() && o->path_receivers.empty()) throw UsageError("--path needs --to");
      if (o->path_sender.empty() && !o->path_receivers.empty())
        throw UsageError("--to names path patching's receivers; give its sender with --path");
      if (o->model.empty()) o->model = core::default_model_or_throw();
      return patch_command(*o);
    };
  });
}

}  // namespace headlab::app
