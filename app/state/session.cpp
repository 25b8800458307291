#include "app/state/session.h"

#include "core/json_file.h"
#include "core/json_integer.h"

#include "app/state/controls_edit.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;
using nlohmann::json;

namespace headlab::app {
namespace {

const char* const kStacks[] = {"encoder", "decoder", "cross"};

const std::vector<core::HeadControls>& layers_of(const core::ModelControls& c, const std::string& stack) {
  return stack == "encoder" ? c.encoder_self : stack == "decoder" ? c.decoder_self : c.decoder_cross;
}

// Reads one field, recording a warning (not failing) when it has the wrong type.
template <class T>
void read(const json& j, const char* key, T& out, std::vector<std::string>& warnings, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) return;
  try {
    out = core::get_value<T>(j.at(key));
  } catch (const std::exception& e) {
    warnings.push_back(where + key + " ignored: " + e.what());
  }
}

}  // namespace

json controls_to_json(const core::ModelControls& controls_in) {
  core::ModelControls controls = controls_in;
  canonicalize(controls);
  json out = json::object();
  for (const char* stack : kStacks) {
    json layers = json::array();
    const auto& ls = layers_of(controls, stack);
    for (size_t l = 0; l < ls.size(); ++l) {
      if (ls[l].is_default() && ls[l].ablation == core::Ablation::Zero) continue;
      json layer = {{"layer", l}, {"ablation", ls[l].ablation == core::Ablation::Mean ? "mean" : "zero"}};
      if (!ls[l].gates.empty()) layer["gates"] = ls[l].gates;
      if (!ls[l].pre_mix.empty()) layer["pre_mix"] = ls[l].pre_mix;
      if (!ls[l].post_mix.empty()) layer["post_mix"] = ls[l].post_mix;
      layers.push_back(std::move(layer));
    }
    if (!layers.empty()) out[stack] = std::move(layers);
  }
  return out;
}

core::ModelControls controls_from_json(const json& j) {
  core::ModelControls controls;
  if (!j.is_object()) throw std::runtime_error("controls: expected an object");
  for (const char* stack : kStacks) {
    if (!j.contains(stack)) continue;
    for (const auto& layer : j.at(stack)) {
      const std::string where = std::string("controls.") + stack;
      if (!layer.contains("layer")) throw std::runtime_error(where + ": an entry has no 'layer'");
      const int l = core::get_integer<int>(layer.at("layer"));
      if (l < 0 || l > 4096) throw std::runtime_error(where + ": bad layer " + std::to_string(l));
      auto& c = controls.at(stack, l);
      c.ablation = layer.value("ablation", "zero") == "mean" ? core::Ablation::Mean : core::Ablation::Zero;
      if (layer.contains("gates")) c.gates = layer.at("gates").get<std::vector<float>>();
      if (layer.contains("pre_mix")) c.pre_mix = layer.at("pre_mix").get<std::vector<float>>();
      if (layer.contains("post_mix")) c.post_mix = layer.at("post_mix").get<std::vector<float>>();
    }
  }
  canonicalize(controls);
  return controls;
}

static json analysis_to_json(const AnalysisChoices& a) {
  json j = {{"dataset_files", a.dataset_files}, {"metrics", a.metrics}, {"limit", a.limit},
            {"report_path", a.report_path}, {"report_hash", a.report_hash}, {"sort_by", a.sort_by},
            {"sort_descending", a.sort_descending}, {"filter_role", a.filter_role}, {"filter_layer", a.filter_layer},
            {"thresholds_edited", a.thresholds_edited}, {"positional_threshold", a.positional_threshold},
            {"rare_threshold", a.rare_threshold}, {"syntactic_margin", a.syntactic_margin},
            {"lrp_enabled", a.lrp_enabled}, {"lrp_position", a.lrp_position}, {"lrp_token", a.lrp_token},
            {"lrp_shading", a.lrp_shading}, {"syntax_file", a.syntax_file}, {"syntax_index", a.syntax_index},
            {"syntax_parse", a.syntax_parse}, {"syntax_parse_file", a.syntax_parse_file}};
  // Embedded as JSON (not a string) so the session file stays readable and diffable.
  if (!a.report_embedded.empty()) j["report_embedded"] = json::parse(a.report_embedded);
  return j;
}

json session_to_json(const SessionState& s) {
  const GenerationSettings& gs = s.generation.settings;
  const auto& sel = s.selection;
  const auto& v = s.view;
  return json{
      {"format", "headlab-session"},
      {"version", kSessionVersion},
      {"model", {{"folder", s.model_folder}, {"weights_hash", s.model_hash}, {"random_config", s.random_config}}},
      {"input", {{"text", s.text}, {"decoder_text", s.decoder_text}}},
      {"controls", controls_to_json(s.controls)},
      {"selection",
       {{"stack", sel.stack}, {"layer", sel.layer}, {"head", sel.head}, {"stage", stage_name(sel.stage)},
        {"query", sel.query}, {"key", sel.key}, {"output_position", sel.output_position},
        {"mixer_layer", sel.mixer_layer}}},
      {"view",
       {{"colormap", v.colormap}, {"log_scale", v.log_scale}, {"auto_range", v.auto_range},
        {"thumbnail_size", v.thumbnail_size}, {"top_k", v.top_k}, {"export_scale", v.export_scale},
        {"export_dir", v.export_dir}, {"grid_measure", v.grid_measure},
        {"workspace", v.workspace}, {"logit_spectra", v.logit_spectra}}},
      {"analysis", analysis_to_json(s.analysis)},
      {"generation",
       {{"prompt", gs.prompt}, {"max_new", gs.max_new}, {"temperature", gs.temperature}, {"top_k", gs.top_k},
        {"top_p", gs.top_p}, {"seed", gs.seed}, {"generated", s.generation.generated}}},
      {"layout", {{"imgui_ini", s.imgui_ini}}},
  };
}

std::string session_text(const SessionState& state) { return session_to_json(state).dump(2) + "\n"; }

SessionLoad session_from_json(const json& j) {
  if (!j.is_object() || j.value("format", "") != "headlab-session")
    throw std::runtime_error("not a HeadLab session (no \"format\": \"headlab-session\")");
  SessionLoad out;
  auto& s = out.state;
  auto& w = out.warnings;
  int version = 0;
  read(j, "version", version, w, "");
  if (version > kSessionVersion)
    w.push_back("written by a newer HeadLab (session version " + std::to_string(version) + ", this one reads " +
                std::to_string(kSessionVersion) + "): loaded what this version understands");
  const json empty = json::object();
  const json& model = j.contains("model") ? j.at("model") : empty;
  read(model, "folder", s.model_folder, w, "model.");
  read(model, "weights_hash", s.model_hash, w, "model.");
  read(model, "random_config", s.random_config, w, "model.");
  const json& input = j.contains("input") ? j.at("input") : empty;
  read(input, "text", s.text, w, "input.");
  read(input, "decoder_text", s.decoder_text, w, "input.");
  if (j.contains("controls")) {
    try {
      s.controls = controls_from_json(j.at("controls"));
    } catch (const std::exception& e) {
      w.push_back(std::string("controls ignored: ") + e.what());
    }
  }
  const json& sel = j.contains("selection") ? j.at("selection") : empty;
  auto& se = s.selection;
  read(sel, "stack", se.stack, w, "selection.");
  read(sel, "layer", se.layer, w, "selection.");
  read(sel, "head", se.head, w, "selection.");
  std::string stage = "U";
  read(sel, "stage", stage, w, "selection.");
  se.stage = stage == "J" ? Stage::J : stage == "L" ? Stage::L : stage == "W" ? Stage::W : Stage::U;
  read(sel, "query", se.query, w, "selection.");
  read(sel, "key", se.key, w, "selection.");
  read(sel, "output_position", se.output_position, w, "selection.");
  read(sel, "mixer_layer", se.mixer_layer, w, "selection.");
  const json& view = j.contains("view") ? j.at("view") : empty;
  auto& v = s.view;
  read(view, "colormap", v.colormap, w, "view.");
  read(view, "log_scale", v.log_scale, w, "view.");
  // Sessions written before the absolute scale was the default say "fixed_range": false for the old
  // default; they open on the absolute scale (auto-range stays a choice made by hand).
  read(view, "auto_range", v.auto_range, w, "view.");
  read(view, "thumbnail_size", v.thumbnail_size, w, "view.");
  read(view, "top_k", v.top_k, w, "view.");
  read(view, "export_scale", v.export_scale, w, "view.");
  read(view, "export_dir", v.export_dir, w, "view.");
  read(view, "grid_measure", v.grid_measure, w, "view.");
  read(view, "workspace", v.workspace, w, "view.");
  read(view, "logit_spectra", v.logit_spectra, w, "view.");
  const json& analysis = j.contains("analysis") ? j.at("analysis") : empty;
  auto& a = s.analysis;
  read(analysis, "dataset_files", a.dataset_files, w, "analysis.");
  read(analysis, "metrics", a.metrics, w, "analysis.");
  read(analysis, "limit", a.limit, w, "analysis.");
  read(analysis, "report_path", a.report_path, w, "analysis.");
  read(analysis, "report_hash", a.report_hash, w, "analysis.");
  if (analysis.contains("report_embedded") && analysis.at("report_embedded").is_object())
    a.report_embedded = analysis.at("report_embedded").dump();
  read(analysis, "sort_by", a.sort_by, w, "analysis.");
  read(analysis, "sort_descending", a.sort_descending, w, "analysis.");
  read(analysis, "filter_role", a.filter_role, w, "analysis.");
  read(analysis, "filter_layer", a.filter_layer, w, "analysis.");
  read(analysis, "thresholds_edited", a.thresholds_edited, w, "analysis.");
  read(analysis, "positional_threshold", a.positional_threshold, w, "analysis.");
  read(analysis, "rare_threshold", a.rare_threshold, w, "analysis.");
  read(analysis, "syntactic_margin", a.syntactic_margin, w, "analysis.");
  read(analysis, "lrp_enabled", a.lrp_enabled, w, "analysis.");
  read(analysis, "lrp_position", a.lrp_position, w, "analysis.");
  read(analysis, "lrp_token", a.lrp_token, w, "analysis.");
  read(analysis, "lrp_shading", a.lrp_shading, w, "analysis.");
  read(analysis, "syntax_file", a.syntax_file, w, "analysis.");
  read(analysis, "syntax_index", a.syntax_index, w, "analysis.");
  read(analysis, "syntax_parse", a.syntax_parse, w, "analysis.");
  read(analysis, "syntax_parse_file", a.syntax_parse_file, w, "analysis.");
  const json& generation = j.contains("generation") ? j.at("generation") : empty;
  auto& g = s.generation;
  read(generation, "prompt", g.settings.prompt, w, "generation.");
  read(generation, "max_new", g.settings.max_new, w, "generation.");
  read(generation, "temperature", g.settings.temperature, w, "generation.");
  read(generation, "top_k", g.settings.top_k, w, "generation.");
  read(generation, "top_p", g.settings.top_p, w, "generation.");
  read(generation, "seed", g.settings.seed, w, "generation.");
  read(generation, "generated", g.generated, w, "generation.");
  const json& layout = j.contains("layout") ? j.at("layout") : empty;
  read(layout, "imgui_ini", s.imgui_ini, w, "layout.");
  return out;
}

SessionLoad load_session_file(const std::string& path) {
  const json j = core::read_json_file(path);  // names the file, the line and the column
  try {
    return session_from_json(j);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

void save_session_file(const std::string& path, const SessionState& state) {
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  write_file_atomic(path, session_text(state));
}

std::string state_dir() {
  fs::path dir;
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg)
    dir = fs::path(xdg) / "headlab";
  else if (const char* home = std::getenv("HOME"); home && *home)
    dir = fs::path(home) / ".local" / "state" / "headlab";
  else
    dir = fs::temp_directory_path() / "headlab-state";
  std::error_code ec;
  fs::create_directories(dir, ec);
  return dir.string();
}

std::string autosave_path() { return (fs::path(state_dir()) / "autosave.json").string(); }
std::string recent_list_path() { return (fs::path(state_dir()) / "recent.json").string(); }

std::vector<std::string> load_recent_folders() {
  const std::string path = recent_list_path();
  if (!fs::exists(path)) return {};
  try {
    return json::parse(core::read_file_bytes(path)).get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": not a list of folders (" + e.what() + ")");
  }
}

void save_recent_folders(const std::vector<std::string>& folders) {
  write_file_atomic(recent_list_path(), json(folders).dump(2) + "\n");
}

void remember_folder(std::vector<std::string>& folders, const std::string& folder) {
  if (folder.empty()) return;
  folders.erase(std::remove(folders.begin(), folders.end(), folder), folders.end());
  folders.insert(folders.begin(), folder);
  if (folders.size() > 10) folders.resize(10);
}

}  // namespace headlab::app
