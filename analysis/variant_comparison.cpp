#include "analysis/variant_comparison.h"

#include "analysis/analyze.h"
#include "analysis/line_chart.h"
#include "analysis/spectra.h"
#include "core/atomic_file.h"
#include "core/memory_budget.h"
#include "core/model/device.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/train/data.h"
#include "core/train/trainer.h"

#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace headlab::analysis {

namespace fs = std::filesystem;
using nlohmann::json;

int ModelSummary::positional_heads() const {
  return int(std::count_if(report.heads.begin(), report.heads.end(), [](const HeadEntry& h) { return h.positional; }));
}
int ModelSummary::rare_heads() const {
  return int(std::count_if(report.heads.begin(), report.heads.end(), [](const HeadEntry& h) { return h.rare; }));
}
int ModelSummary::syntactic_heads() const {
  return int(std::count_if(report.heads.begin(), report.heads.end(), [](const HeadEntry& h) {
    return std::any_of(h.syntactic.begin(), h.syntactic.end(), [](const SyntacticScore& s) { return s.is_role; });
  }));
}
double ModelSummary::mean_confidence() const {
  double sum = 0;
  for (const auto& h : report.heads) sum += h.confidence;
  return report.heads.empty() ? 0 : sum / double(report.heads.size());
}
double ModelSummary::mean_key_query_rank90() const {
  double sum = 0;
  int n = 0;
  for (const auto& h : report.heads)
    if (h.spectrum && h.spectrum->applicable) sum += h.spectrum->rank90, ++n;
  return n ? sum / n : 0;
}

namespace {

// An encoder's KV cache as if it generated: its stack run as a decoder's.
int64_t kv_bytes(const core::ModelConfig& config) {
  auto c = config;
  if (!c.decoder && c.encoder) {
    c.decoder = c.encoder;
    c.encoder.reset();
    c.kind = core::StackKind::Decoder;
  }
  return core::kv_cache_bytes_per_token(c);
}

void note(const CompareOptions& o, const std::string& model, const std::string& stage) {
  if (o.progress) o.progress(model, stage);
}

}  // namespace

ModelSummary summarize_model(core::Model& model, const std::string& folder, const CompareOptions& o) {
  if (!model.tokenizer) throw std::runtime_error(folder + ": compare needs a model with a tokenizer");
  const auto objective = core::train::objective_of(model.config);
  if (objective == core::train::Objective::Seq2Seq)
    throw std::runtime_error(folder + ": compare reads plain text; this is a sequence-to-sequence model");
  ModelSummary s;
  s.folder = folder;
  s.name = model.config.name;
  const auto& stack = model.config.decoder ? *model.config.decoder : *model.config.encoder;
  s.attention = stack.attention.variant_name();
  s.key_size = stack.attention.key_size;
  s.heads = stack.attention.heads;
  s.layers = stack.layers;
  s.parameters = 0;
  for (const auto& p : model.module->parameters()) s.parameters += p.numel();
  s.kv_bytes_per_token = kv_bytes(model.config);

  note(o, folder, "quality");
  const auto specials = core::train::special_tokens(*model.tokenizer);
  const auto examples = core::train::load_text_dataset(o.data, *model.tokenizer, objective, o.seq_len, 0).train;
  if (examples.empty()) throw std::runtime_error(folder + ": the held-out text gives no sequence");
  const auto quality = core::train::evaluate_examples(model.module, examples, objective, specials, {}, 1,
                                                      std::max<int64_t>(1, 2048 / o.seq_len));
  s.loss = quality.loss;
  s.accuracy = quality.accuracy;
  s.targets = quality.targets;

  note(o, folder, "timing");
  s.threads = at::get_num_threads();
  {
    core::RunRequest r;
    r.ids = examples.front().source;
    r.capture = core::kCaptureNone;
    std::vector<double> ms;
    for (int i = 0; i < o.timing_runs + 2; ++i) {
      const auto start = std::chrono::steady_clock::now();
      core::run(model, r);
      if (core::model_device(model).is_cuda()) torch::cuda::synchronize();  // a card's kernels run on after the call
      if (i >= 2) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    s.forward_ms = ms.empty() ? 0 : ms[ms.size() / 2];
  }

  note(o, folder, "logit ranks");
  int64_t matrices = 0;
  double rank_sum = 0;
  for (size_t e = 0; e < examples.size() && int(e) < o.rank_sequences; ++e) {
    core::RunRequest r;
    r.ids = examples[e].source;
    r.capture = core::kCaptureLogits | core::kCaptureMixedLogits;
    const auto trace = core::run(model, r);
    const int64_t T = int64_t(r.ids.size());
    if (s.logit_sequence_length == 0) {
      s.logit_sequence_length = T;
      s.logit_decay.assign(size_t(T), 0.0);
    }
    if (T != s.logit_sequence_length) continue;  // a shorter last piece of text: ranks are per length
    for (const auto& layer : trace->main_stack().layers)
      for (const auto& spectrum : logit_spectra(layer.self)) {
        const auto& sv = spectrum.singular_values;
        int rank = 0;
        for (double v : sv) rank += !sv.empty() && v > o.rank_tolerance * sv.front();
        rank_sum += rank;
        s.logit_rank_max = std::max(s.logit_rank_max, rank);
        for (size_t k = 0; k < s.logit_decay.size(); ++k) {
          const double ratio = k < sv.size() && sv.front() > 0 ? sv[k] / sv.front() : 0.0;
          s.logit_decay[k] += std::log10(std::max(ratio, 1e-10));
        }
        ++matrices;
      }
  }
  const auto& att = stack.attention;
  const int meet = att.collaborative  ? att.collaborative->shared_key_size
                   : att.talking_heads ? att.talking_heads->key_heads * att.key_size
                                       : att.key_size;
  s.logit_rank_bound = static_cast<int>(std::min<int64_t>(meet, s.logit_sequence_length));
  if (matrices > 0) {
    s.logit_rank_mean = rank_sum / double(matrices);
    for (double& v : s.logit_decay) v /= double(matrices);
  }

  note(o, folder, "head analyses");
  AnalyzeOptions a;
  a.data = o.analyze_data.empty() ? o.data : o.analyze_data;
  a.settings.metrics = {"confidence", "positional", "rare", "syntactic", "spectra"};
  a.settings.limit = o.limit;
  a.examples = 0;
  s.report = analyze(model, a).report;
  s.report.model = folder;
  return s;
}

namespace {

std::string fixed(double v, int decimals) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(decimals);
  s << v;
  return s.str();
}

std::string thousands(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Short names for tables and figures: the folders' last parts, or whole paths when those collide.
std::vector<std::string> short_names(const std::vector<ModelSummary>& models) {
  std::vector<std::string> names;
  for (const auto& m : models) names.push_back(fs::path(m.folder).lexically_normal().filename().string());
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i].empty() || std::count(names.begin(), names.end(), names[i]) > 1) {
      names.clear();
      for (const auto& m : models) names.push_back(m.folder);
      break;
    }
  return names;
}

// Each model's folder under reports/: the model folder's name, followed by the model's place in the
// list where two models share that name (a/m and b/m write reports/m-1 and reports/m-2), so no
// report is written over another's.
std::vector<std::string> report_folder_names(const std::vector<ModelSummary>& models) {
  std::vector<std::string> names;
  for (const auto& m : models) {
    fs::path folder = fs::path(m.folder).lexically_normal();
    if (folder.filename().empty()) folder = folder.parent_path();  // "a/m/" names m
    const std::string name = folder.filename().string();
    names.push_back(name.empty() || name == "." || name == ".." ? "model" : name);
  }
  std::vector<std::string> unique = names;
  for (size_t i = 0; i < names.size(); ++i)
    if (std::count(names.begin(), names.end(), names[i]) > 1) unique[i] = names[i] + "-" + std::to_string(i + 1);
  return unique;
}

}  // namespace

std::vector<std::string> write_comparison(const std::vector<ModelSummary>& models, const CompareOptions& o,
                                          const std::string& out) {
  fs::create_directories(out + "/figures");
  const auto names = short_names(models);
  std::vector<std::string> written;

  std::ostringstream md;
  md << "# Attention variants compared\n\n"
     << "Held-out text: ";
  for (size_t i = 0; i < o.data.size(); ++i) md << (i ? ", " : "") << "`" << o.data[i] << "`";
  md << " (sequences of " << o.seq_len << " tokens). Head analyses on ";
  const auto& analysed = o.analyze_data.empty() ? o.data : o.analyze_data;
  for (size_t i = 0; i < analysed.size(); ++i) md << (i ? ", " : "") << "`" << analysed[i] << "`";
  md << (o.limit > 0 ? " (at most " + std::to_string(o.limit) + " sentences)" : "") << ".\n\n";

  md << "## Quality and cost\n\n"
     << "| model | attention | d_k | parameters | held-out loss | top-1 | forward (ms) | KV cache a token |\n"
     << "|---|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < models.size(); ++i) {
    const auto& m = models[i];
    md << "| " << names[i] << " | " << m.attention << " | " << m.key_size << " | " << thousands(m.parameters) << " | "
       << fixed(m.loss, 4) << " | " << fixed(100 * m.accuracy, 2) << "% | " << fixed(m.forward_ms, 2) << " | "
       << thousands(m.kv_bytes_per_token) << " B |\n";
  }
  md << "\nForward time: median of " << o.timing_runs << " passes over one sequence of " << o.seq_len
     << " tokens on " << (models.empty() ? 1 : models.front().threads)
     << " thread(s). KV cache: the float32 keys and values one more token adds when generating (an encoder counted "
        "as if it decoded).\n\n";

  md << "## Heads\n\n"
     << "| model | heads | positional | syntactic | rare-word | mean confidence | W_Q W_Kᵀ 90% rank (mean a head) |\n"
     << "|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < models.size(); ++i) {
    const auto& m = models[i];
    md << "| " << names[i] << " | " << m.report.heads.size() << " | " << m.positional_heads() << " | "
       << m.syntactic_heads() << " | " << m.rare_heads() << " | " << fixed(m.mean_confidence(), 3) << " | "
       << fixed(m.mean_key_query_rank90(), 1) << " |\n";
  }
  md << "\nRoles as Voita et al. 2019 and Clark et al. 2019 define them (syntactic: against the best fixed-offset "
        "baseline; needs CoNLL-U). Each model's full head report is in `reports/<model>/`.\n\n";

  md << "## The low-rank bottleneck (Bhojanapalli et al. 2020)\n\n"
     << "A head's T×T logit matrix QKᵀ has rank at most d_k; with d_k below the sequence length T some attention "
        "patterns cannot be expressed. Measured on "
     << o.rank_sequences << " held-out sequences: the numerical rank (singular values above "
     << o.rank_tolerance << " σ₁) of every head's logit matrix (talking heads: after the logit mix).\n\n"
     << "| model | d_k | T | logit rank, mean | max | bound |\n|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < models.size(); ++i) {
    const auto& m = models[i];
    md << "| " << names[i] << " | " << m.key_size << " | " << m.logit_sequence_length << " | "
       << fixed(m.logit_rank_mean, 1) << " | " << m.logit_rank_max << " | "
       << m.logit_rank_bound << " |\n";
  }
  md << "\nBound: min(T, the size queries and keys meet in): d_k; the shared D̃_k of collaborative heads; h_k·d_k "
        "for talking heads, whose logits mix the key heads'.\n";
  md << "\nFigures: `figures/quality_vs_parameters.svg`, `figures/logit_singular_values.svg` (and .png).\n";
  core::write_file_atomic(out + "/comparison.md", md.str());
  written.push_back("comparison.md");

  json j = json::array();
  const auto report_names = report_folder_names(models);
  for (size_t i = 0; i < models.size(); ++i) {
    const auto& m = models[i];
    const std::string report_folder = out + "/reports/" + report_names[i];
    write_report_files(m.report, report_folder);
    j.push_back({{"name", names[i]},
                 {"folder", m.folder},
                 {"model_name", m.name},
                 {"attention", m.attention},
                 {"key_size", m.key_size},
                 {"heads", m.heads},
                 {"layers", m.layers},
                 {"parameters", m.parameters},
                 {"kv_bytes_per_token", m.kv_bytes_per_token},
                 {"loss", m.loss},
                 {"accuracy", m.accuracy},
                 {"targets", m.targets},
                 {"forward_ms", m.forward_ms},
                 {"threads", m.threads},
                 {"positional_heads", m.positional_heads()},
                 {"syntactic_heads", m.syntactic_heads()},
                 {"rare_heads", m.rare_heads()},
                 {"mean_confidence", m.mean_confidence()},
                 {"mean_key_query_rank90", m.mean_key_query_rank90()},
                 {"logit_sequence_length", m.logit_sequence_length},
                 {"logit_rank_mean", m.logit_rank_mean},
                 {"logit_rank_max", m.logit_rank_max},
                 {"logit_rank_bound", m.logit_rank_bound},
                 {"logit_decay", m.logit_decay},
                 {"report", report_folder + "/head_report.json"}});
  }
  core::write_file_atomic(out + "/comparison.json",
                          json{{"seq_len", o.seq_len}, {"data", o.data}, {"models", j}}.dump(2) + "\n");
  written.push_back("comparison.json");

  LineChart quality;
  quality.title = "Held-out top-1 against parameters";
  quality.subtitle = "models trained alike; labels: model";
  quality.x_label = "parameters (millions)";
  quality.y_label = "top-1 (%)";
  ChartSeries points{"", {}, {}, {}, false};
  for (size_t i = 0; i < models.size(); ++i) {
    points.x.push_back(double(models[i].parameters) / 1e6);
    points.y.push_back(100 * models[i].accuracy);
    points.notes.push_back(names[i]);
  }
  quality.series = {points};
  std::vector<std::string> figures;
  write_line_chart(quality, out + "/figures", "quality_vs_parameters", figures);

  LineChart energy;
  energy.title = "Attention logit matrices: singular values σ_k / σ_1";
  energy.subtitle = "log10(σ_k / σ_1) of each head's T×T logits, mean over heads and held-out sequences; a cliff at k = d_k: the bottleneck";
  energy.x_label = "k";
  energy.y_label = "log10 σ_k / σ_1";
  for (size_t i = 0; i < models.size(); ++i) {
    ChartSeries c{names[i] + " (rank ≤ " + std::to_string(models[i].logit_rank_bound) + ")", {}, {}, {}, true};
    for (size_t k = 0; k < models[i].logit_decay.size(); ++k) {
      c.x.push_back(double(k + 1));
      c.y.push_back(models[i].logit_decay[k]);
    }
    if (!c.x.empty()) energy.series.push_back(c);
  }
  if (!energy.series.empty()) write_line_chart(energy, out + "/figures", "logit_singular_values", figures);
  for (const auto& f : figures) written.push_back("figures/" + f);
  return written;
}

}  // namespace headlab::analysis
