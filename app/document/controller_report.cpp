// The controller's head report: a dataset run's or an opened file's, its thresholds and sorting,
// shown as the open model's report or kept apart as another model's (app/document/report_match.h),
// and kept for sessions.
#include "app/document/controller.h"

#include "app/document/head_table.h"
#include "app/document/report_match.h"
#include "app/work/dataset_job.h"
#include "analysis/measure.h"
#include "core/file_hash.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace fs = std::filesystem;

namespace headlab::app {
namespace {

// Above this size a report made in the window is written beside the session state instead of
// being embedded in session files.
constexpr size_t kEmbedLimit = 2u << 20;

}  // namespace

void Controller::keep_report_for_sessions(const analysis::HeadReport& report) {
  auto& a = doc_.session.analysis;
  a.report_path.clear();
  a.report_hash.clear();
  a.report_embedded.clear();
  const std::string text = analysis::to_json(report).dump();
  if (text.size() <= kEmbedLimit) {
    a.report_embedded = text;
  } else {
    // Too large to embed: kept beside the session state, named by its content.
    const std::string folder = (fs::path(state_dir()) / "reports").string();
    const std::string path = (fs::path(folder) / ("head_report-" + std::to_string(std::hash<std::string>{}(text)) + ".json")).string();
    try {
      fs::create_directories(folder);
      write_file_atomic(path, text + "\n");
      a.report_path = path;
      a.report_hash = core::hash_file(path);
    } catch (const std::exception& e) {
      notice(std::string("The head report could not be kept for sessions: ") + e.what());
    }
  }
}

void Controller::on(const cmd::OpenReport& c) {
  open_report(c.path);
}

void Controller::on(const cmd::CloseReport&) {
  close_report();
}

void Controller::on(const cmd::SortHeads& c) {
  auto& s = doc_.session;
  if (!c.by.empty() && doc_.report) {
    const auto columns = head_table_columns(*doc_.report);
    if (std::find(columns.begin(), columns.end(), c.by) == columns.end())
      throw std::runtime_error("no column '" + c.by + "' in the head table");
  }
  s.analysis.sort_by = c.by;
  s.analysis.sort_descending = c.descending;
}

void Controller::on(const cmd::FilterHeads& c) {
  auto& s = doc_.session;
  s.analysis.filter_role = c.role;
  s.analysis.filter_layer = c.layer;
}

void Controller::on(const cmd::SetThresholds& c) {
  auto& s = doc_.session;
  auto& a = s.analysis;
  if (c.reset) {
    a.thresholds_edited = false;
    a.measure_thresholds.clear();
  } else {
    if (!a.thresholds_edited && raw_report_) {
      a.positional_threshold = raw_report_->settings.positional_threshold;
      a.rare_threshold = raw_report_->settings.rare_threshold;
      a.syntactic_margin = raw_report_->settings.syntactic_margin;
      for (const auto* m : analysis::measures())
        for (const auto& t : m->role_thresholds()) a.measure_thresholds[t.key] = raw_report_->settings.*t.value;
    }
    if (c.positional) a.positional_threshold = std::clamp(*c.positional, 0.0, 1.0);
    if (c.rare) a.rare_threshold = std::clamp(*c.rare, 0.0, 1.0);
    if (c.syntactic_margin) a.syntactic_margin = std::clamp(*c.syntactic_margin, -1.0, 1.0);
    if (c.measure) {
      const analysis::RoleThreshold* spec = nullptr;
      for (const auto* m : analysis::measures())
        for (const auto& t : m->role_thresholds())
          if (*c.measure == t.key) spec = &t;
      if (!spec) throw std::invalid_argument("set_thresholds: no measure has a threshold '" + *c.measure + "'");
      if (!c.measure_value) throw std::invalid_argument("set_thresholds: '" + *c.measure + "' needs a measure_value");
      a.measure_thresholds[*c.measure] = std::clamp(*c.measure_value, spec->lo, spec->hi);
    }
    a.thresholds_edited = true;
  }
  refresh_report();
}

void Controller::on(const cmd::SetLrpTarget& c) {
  auto& s = doc_.session;
  auto& a = s.analysis;
  if (c.shading && *c.shading != "lrp" && *c.shading != "rollout" && *c.shading != "flow")
    throw std::runtime_error("unknown shading '" + *c.shading + "' (lrp, rollout or flow)");
  const bool changed = a.lrp_enabled != c.enabled || a.lrp_position != c.position || a.lrp_token != c.token ||
                       (c.shading && (*c.shading == "flow") != (a.lrp_shading == "flow"));
  if (c.shading) a.lrp_shading = *c.shading;
  a.lrp_enabled = c.enabled;
  a.lrp_position = std::max(-1, c.position);
  a.lrp_token = c.token < 0 ? -1 : c.token;
  if (changed && c.enabled) request_run();
}

void Controller::open_report(const std::string& path) {
  auto report = DatasetJob::open_report(path);
  auto& a = doc_.session.analysis;
  a.report_path = fs::absolute(path).string();
  a.report_hash = core::hash_file(path);
  a.report_embedded.clear();
  set_report(std::move(report));
}

void Controller::close_report() {
  auto& a = doc_.session.analysis;
  a.report_path.clear();
  a.report_hash.clear();
  a.report_embedded.clear();
  a.thresholds_edited = false;
  raw_report_.reset();
  refresh_report();
}

// ---- the head report ----
void Controller::set_report(std::shared_ptr<const analysis::HeadReport> report) {
  raw_report_ = std::move(report);
  refresh_report();
}

void Controller::refresh_report() {
  const auto& a = doc_.session.analysis;
  doc_.report.reset();
  doc_.foreign_report.reset();
  doc_.foreign_reason.clear();
  if (!raw_report_) return;
  std::shared_ptr<const analysis::HeadReport> shown = raw_report_;
  if (a.thresholds_edited) {
    analysis::ReportSettings settings = raw_report_->settings;
    settings.positional_threshold = a.positional_threshold;
    settings.rare_threshold = a.rare_threshold;
    settings.syntactic_margin = a.syntactic_margin;
    for (const auto* m : analysis::measures())
      for (const auto& t : m->role_thresholds())
        if (const auto it = a.measure_thresholds.find(t.key); it != a.measure_thresholds.end()) settings.*t.value = it->second;
    shown = std::make_shared<const analysis::HeadReport>(with_thresholds(*raw_report_, settings));
  }
  // Never applied by position to another model's heads.
  const std::string why = doc_.model ? report_mismatch(*raw_report_, *doc_.model) : "no model is open";
  if (why.empty()) {
    doc_.report = std::move(shown);
  } else {
    doc_.foreign_report = std::move(shown);
    doc_.foreign_reason = why;
  }
}

// A session names its report by path (and the hash the file had), or carries it embedded.
void Controller::restore_report_of_session() {
  auto& a = doc_.session.analysis;
  raw_report_.reset();
  doc_.report.reset();
  try {
    if (!a.report_embedded.empty()) {
      set_report(std::make_shared<const analysis::HeadReport>(
          analysis::head_report_from_json(nlohmann::json::parse(a.report_embedded))));
    } else if (!a.report_path.empty()) {
      const std::string hash = core::hash_file(a.report_path);
      if (!a.report_hash.empty() && hash != a.report_hash)
        notice("The head report " + a.report_path + " changed since the session was saved: showing it as it is now.");
      set_report(DatasetJob::open_report(a.report_path));
      a.report_hash = hash;
    }
  } catch (const std::exception& e) {
    notice(std::string("The session's head report could not be restored: ") + e.what());
  }
}

}  // namespace headlab::app
