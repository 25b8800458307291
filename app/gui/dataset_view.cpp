#include "app/gui/dataset_view.h"

#include "analysis/analyze.h"
#include "analysis/report_figures.h"
#include "app/gui/export_actions.h"
#include "app/gui/report_notice.h"
#include "app/gui/draw_util.h"
#include "app/gui/workbench.h"

#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;

namespace headlab::app {
namespace {

std::string duration_text(double seconds) {
  if (seconds < 0) return "…";
  const int s = static_cast<int>(seconds + 0.5);
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%d:%02d", s / 60, s % 60);
  return text;
}

// The bundled CoNLL-U sample (assets/data), or "".
std::string bundled_sample(const std::string& assets_dir) {
  const fs::path p = fs::path(assets_dir) / "data" / "en_ewt-dev-100.conllu";
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? p.string() : "";
}

}  // namespace

void DatasetView::drawContent(Workbench& wb) {
  drawRun(wb);
  ImGui::Separator();
  drawReport(wb);
}

void DatasetView::drawRun(Workbench& wb) {
  const auto& doc = wb.doc();
  const auto& a = doc.session.analysis;
  // The run's settings are edited as a copy and sent with Run (a run is the one command that uses them).
  std::vector<std::string> files = a.dataset_files;
  std::vector<std::string> metrics = a.metrics.empty() ? analysis::all_metrics() : a.metrics;
  int64_t limit = a.limit;
  bool edited = false;

  ImGui::TextDisabled("files (plain text: a sentence a line; CoNLL-U: .conllu/.conll/.conllx; folders)");
  for (size_t i = 0; i < files.size(); ++i) {
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::SmallButton("x")) files.erase(files.begin() + static_cast<long>(i)), edited = true;
    ImGui::PopID();
    if (i >= files.size()) break;
    ImGui::SameLine();
    ImGui::TextUnformatted(files[i].c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", files[i].c_str());
  }
  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 4);
  const bool enter = ImGui::InputTextWithHint("##file", "path to a file or folder", &file_input_,
                                              ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if ((ImGui::Button("Add") || enter) && !file_input_.empty()) {
    std::error_code ec;
    if (!fs::exists(file_input_, ec)) {
      wb.set_error("run_dataset", "dataset: " + file_input_ + " does not exist");
    } else {
      files.push_back(file_input_), edited = true;
      file_input_.clear();
    }
  }
  const std::string sample = bundled_sample(wb.assets_dir());
  if (!sample.empty() && std::find(files.begin(), files.end(), sample) == files.end()) {
    if (ImGui::SmallButton("Add the bundled sample")) files.push_back(sample), edited = true;
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("UD English-EWT dev, first 100 sentences (CC BY-SA 4.0): %s", sample.c_str());
  }

  ImGui::TextDisabled("measures");
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  bool first = true;
  for (const auto& m : analysis::all_metrics()) {
    bool on = std::find(metrics.begin(), metrics.end(), m) != metrics.end();
    // Checkboxes flow onto as many lines as the width needs.
    const float w = ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(m.c_str()).x;
    if (!first) {
      ImGui::SameLine();
      if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
    }
    first = false;
    if (ImGui::Checkbox(m.c_str(), &on)) {
      if (on)
        metrics.push_back(m);
      else
        metrics.erase(std::remove(metrics.begin(), metrics.end(), m), metrics.end());
      edited = true;
    }
  }
  int limit_int = static_cast<int>(std::min<int64_t>(limit, 1 << 30));
  label_before("sentence limit");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  if (ImGui::InputInt("##limit", &limit_int, 10, 100)) limit = std::max(0, limit_int), edited = true;
  ImGui::SameLine();
  ImGui::TextDisabled("(0 = all)");

  const DatasetJobStatus& d = doc.dataset;
  // Keep the measures in the order analyze lists them.
  std::vector<std::string> ordered;
  for (const auto& m : analysis::all_metrics())
    if (std::find(metrics.begin(), metrics.end(), m) != metrics.end()) ordered.push_back(m);
  const cmd::RunDataset run{files, ordered.size() == analysis::all_metrics().size() ? std::vector<std::string>{} : ordered,
                            limit};
  if (d.running) {
    const float fraction = d.total > 0 ? static_cast<float>(d.done) / static_cast<float>(d.total) : 0.0f;
    const std::string label = d.total > 0 ? std::to_string(d.done) + " / " + std::to_string(d.total) + " sentences"
                                          : d.phase;
    ImGui::ProgressBar(fraction, ImVec2(-ImGui::GetFontSize() * 5, 0), label.c_str());
    ImGui::SameLine();
    if (ImGui::Button("Stop")) wb.apply(cmd::StopDataset{});
    ImGui::TextDisabled("%s · %s elapsed · %s left", d.phase.c_str(), duration_text(d.elapsed_seconds).c_str(),
                        duration_text(d.eta_seconds).c_str());
  } else {
    ImGui::BeginDisabled(files.empty() || ordered.empty() || !doc.model || doc.model->folder.empty());
    if (ImGui::Button("Run")) wb.apply(run);
    ImGui::EndDisabled();
    if (doc.model && doc.model->folder.empty()) {
      ImGui::SameLine();
      ImGui::TextDisabled("(needs a model folder with a tokenizer)");
    }
    if (!d.error.empty()) ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.45f, 1.0f), "%s", d.error.c_str());
  }
  // Edits are remembered without a run (a session keeps them): a run with the same settings
  // starts only from the Run button.
  if (edited && !d.running) wb.apply(cmd::SetDatasetChoices{run.files, run.metrics, run.limit});
}

void DatasetView::drawReport(Workbench& wb) {
  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 4);
  const bool enter = ImGui::InputTextWithHint("##report", "head_report.json (or its folder)", &report_input_,
                                              ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if ((ImGui::Button("Open") || enter) && !report_input_.empty()) wb.apply(cmd::OpenReport{report_input_});
  const auto& report = wb.doc().report;
  if (foreign_report_notice(wb)) return;
  if (!report) {
    ImGui::TextDisabled("no head report yet: run a dataset or open one written by `headlab analyze`");
    return;
  }
  const auto& r = *report;
  ImGui::Text("%s%lld sentences, %lld tokens (%lld skipped)", r.partial ? "PARTIAL — stopped: " : "",
              static_cast<long long>(r.sentences), static_cast<long long>(r.tokens), static_cast<long long>(r.skipped));
  if (r.tree_sentences > 0) ImGui::TextDisabled("%lld with dependency trees", static_cast<long long>(r.tree_sentences));
  int roles = 0;
  for (const auto& h : r.heads) roles += h.roles.empty() ? 0 : 1;
  ImGui::Text("%zu heads, %d with a role", r.heads.size(), roles);
  if (!r.settings.precision.empty())  // core/precision.h: measured with BF16 products
    ImGui::TextDisabled("computed in %s precision (BF16 products)", r.settings.precision.c_str());
  if (r.settings.has("lrp"))
    ImGui::TextDisabled("LRP conservation: max residual %.2g·|f| (%lld sentences over tolerance)",
                        r.lrp_max_relative_residual, static_cast<long long>(r.lrp_sentences_over_tolerance));
  const auto& a = wb.doc().session.analysis;
  ImGui::TextDisabled("%s", a.report_path.empty() ? "made in this window" : a.report_path.c_str());
  for (const auto& n : r.notes) {
    ImGui::Bullet();
    ImGui::TextWrapped("%s", n.c_str());
  }
  if (export_folder_.empty())
    export_folder_ = (fs::path(wb.doc().session.view.export_dir.empty() ? fs::current_path().string()
                                                                        : wb.doc().session.view.export_dir) /
                      "head_report")
                         .string();
  label_before("into");
  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 11);
  ImGui::InputText("##export", &export_folder_);
  ImGui::SameLine();
  if (ImGui::Button("…")) {
    FileChoice choice;
    choice.title = "The folder the head report goes into";
    choice.mode = FileChoice::Mode::Folder;
    choice.path = export_folder_;
    choice.accept = [this](const std::string& folder) { export_folder_ = folder; };
    wb.file_dialog.open(std::move(choice));
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("choose the folder");
  ImGui::SameLine();
  if (ImGui::Button("Export report")) {
    const std::string folder = export_folder_;
    export_or_ask(wb, (fs::path(folder) / "head_report.json").string(), [this, &wb, folder] {
      exportFile(wb, (fs::path(folder) / "head_report.json").string());  // the task says "wrote …" when done
    });
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("head_report.json, .csv, .md and figures/ as `headlab analyze` writes them, less its example "
                      "attention maps (the window's own map views export those)");
}

bool DatasetView::exportFile(Workbench& wb, const std::string& path) {
  if (fs::path(path).extension() != ".json") return false;
  const auto& report = wb.doc().report;
  if (!report) throw std::runtime_error("export " + path + ": no head report yet");
  const std::string folder = fs::path(path).has_parent_path() ? fs::path(path).parent_path().string() : ".";
  wb.start_export(path, [report, folder] {
    try {
      analysis::write_report_files(*report, folder);
      analysis::write_report_figures(*report, {}, (fs::path(folder) / "figures").string());
    } catch (const std::exception& e) {
      throw std::runtime_error("export " + folder + ": " + e.what());
    }
  });
  return true;
}

}  // namespace headlab::app
