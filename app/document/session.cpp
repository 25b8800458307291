#include "app/document/session.h"

#include "app/layout/colormap.h"
#include "core/control_values.h"
#include "core/json_file.h"
#include "core/json_integer.h"

#include "app/document/controls_edit.h"

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
  for (const core::Stack stack : core::kStacks) {
    json layers = json::array();
    const auto& ls = controls.layers(stack);
    for (size_t l = 0; l < ls.size(); ++l) {
      if (ls[l].is_default() && ls[l].ablation == core::Ablation::Zero) continue;
      json layer = {{"layer", l}, {"ablation", ls[l].ablation == core::Ablation::Mean ? "mean" : "zero"}};
      if (!ls[l].gates.empty()) layer["gates"] = ls[l].gates;
      if (!ls[l].pre_mix.empty()) layer["pre_mix"] = ls[l].pre_mix;
      if (!ls[l].post_mix.empty()) layer["post_mix"] = ls[l].post_mix;
      layers.push_back(std::move(layer));
    }
    if (!layers.empty()) out[core::stack_name(stack)] = std::move(layers);
  }
  return out;
}

core::ModelControls controls_from_json(const json& j) {
  core::ModelControls controls;
  if (!j.is_object()) throw std::runtime_error("controls: expected an object");
  for (const core::Stack stack : core::kStacks) {
    const char* key = core::stack_name(stack);
    if (!j.contains(key)) continue;
    for (const auto& layer : j.at(key)) {
      const std::string where = std::string("controls.") + key;
      if (!layer.contains("layer")) throw std::runtime_error(where + ": an entry has no 'layer'");
      const int l = core::get_integer<int>(layer.at("layer"));
      if (l < 0 || l > 4096) throw std::runtime_error(where + ": bad layer " + std::to_string(l));
      auto& c = controls.at(stack, l);
      const std::string at = where + " layer " + std::to_string(l);
      // A list of numbers, or the message names the layer and the key (not nlohmann's type_error).
      auto numbers = [&](const char* key) {
        const json& v = layer.at(key);
        if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number(); }))
          throw std::runtime_error(at + ": " + key + " must be a list of numbers, got " + v.dump());
        return v.get<std::vector<float>>();
      };
      if (layer.contains("ablation") && !layer.at("ablation").is_string())
        throw std::runtime_error(at + ": ablation must be \"zero\" or \"mean\"");
      c.ablation = layer.value("ablation", "zero") == "mean" ? core::Ablation::Mean : core::Ablation::Zero;
      if (layer.contains("gates")) c.gates = numbers("gates");
      if (layer.contains("pre_mix")) c.pre_mix = numbers("pre_mix");
      if (layer.contains("post_mix")) c.post_mix = numbers("post_mix");
      try {
        core::check_controls(c, where + " layer " + std::to_string(l));
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(e.what());
      }
    }
  }
  canonicalize(controls);
  return controls;
}

namespace {

// ---- one description of the session's fields, read and written alike ----------------------------

// Writes each field into a JSON object.
struct SessionWriter {
  json& j;
  template <class T>
  void field(const char* key, const T& value) { j[key] = value; }
  void field(const char* key, const Stage& stage) { j[key] = stage_name(stage); }
  void field(const char* key, const core::ModelControls& controls) { j[key] = controls_to_json(controls); }
  void field(const char* key, const core::Stack& stack) { j[key] = core::stack_name(stack); }
  // A report made in the window: embedded as JSON (not a string), so the file stays readable and diffable.
  void embedded_json(const char* key, const std::string& text) {
    if (!text.empty()) j[key] = json::parse(text);
  }
  template <class F>
  void section(const char* key, F&& fields) {
    SessionWriter inner{j[key]};
    inner.j = json::object();
    fields(inner);
  }
};

// Reads each field it finds, keeping the default of a missing one and a warning for a wrong type.
struct SessionReader {
  const json& j;
  std::vector<std::string>& warnings;
  std::string where;  // "view." …
  template <class T>
  void field(const char* key, T& value) { read(j, key, value, warnings, where); }
  void field(const char* key, core::Stack& stack) {
    std::string name = core::stack_name(stack);
    read(j, key, name, warnings, where);
    try {
      stack = core::stack_from_name(name);
    } catch (const std::invalid_argument& e) {
      warnings.push_back(where + key + " ignored: " + e.what());
    }
  }
  void field(const char* key, Stage& stage) {
    std::string name = stage_name(stage);
    read(j, key, name, warnings, where);
    stage = name == "J" || name == "L" || name == "W" ? stage_from_name(name) : Stage::U;  // unknown: the default
  }
  void field(const char* key, core::ModelControls& controls) {
    if (!j.is_object() || !j.contains(key)) return;
    try {
      controls = controls_from_json(j.at(key));
    } catch (const std::exception& e) {
      warnings.push_back(where + key + " ignored: " + e.what());
    }
  }
  void embedded_json(const char* key, std::string& text) {
    if (j.is_object() && j.contains(key) && j.at(key).is_object()) text = j.at(key).dump();
  }
  template <class F>
  void section(const char* key, F&& fields) {
    static const json empty = json::object();
    SessionReader inner{j.is_object() && j.contains(key) ? j.at(key) : empty, warnings, where + key + "."};
    fields(inner);
  }
};

// The fields of every part of a session, for SessionWriter and SessionReader alike: a new setting
// is one line here (and its member in app/document/session.h).
template <class Io, class S>
void session_fields(Io& io, S& s) {
  io.section("model", [&](auto& m) {
    m.field("folder", s.model_folder);
    m.field("weights_hash", s.model_hash);
    m.field("random_config", s.random_config);
    m.field("device", s.device);
    m.field("precision", s.precision);
  });
  io.section("input", [&](auto& in) {
    in.field("text", s.text);
    in.field("decoder_text", s.decoder_text);
  });
  io.section("selection", [&](auto& sel) {
    auto& se = s.selection;
    sel.field("stack", se.stack);
    sel.field("layer", se.layer);
    sel.field("head", se.head);
    sel.field("stage", se.stage);
    sel.field("query", se.query);
    sel.field("key", se.key);
    sel.field("output_position", se.output_position);
    sel.field("mixer_layer", se.mixer_layer);
  });
  io.section("view", [&](auto& view) {
    auto& v = s.view;
    view.field("colormap", v.colormap);
    view.field("log_scale", v.log_scale);
    // Sessions written before the absolute scale was the default say "fixed_range": false for the
    // old default; they open on the absolute scale (auto range stays a choice made by hand).
    view.field("auto_range", v.auto_range);
    view.field("thumbnail_size", v.thumbnail_size);
    view.field("top_k", v.top_k);
    view.field("export_scale", v.export_scale);
    view.field("export_dir", v.export_dir);
    view.field("grid_measure", v.grid_measure);
    view.field("workspace", v.workspace);
    view.field("logit_spectra", v.logit_spectra);
  });
  io.section("analysis", [&](auto& an) {
    auto& a = s.analysis;
    an.field("dataset_files", a.dataset_files);
    an.field("metrics", a.metrics);
    an.field("limit", a.limit);
    an.field("report_path", a.report_path);
    an.field("report_hash", a.report_hash);
    an.embedded_json("report_embedded", a.report_embedded);
    an.field("sort_by", a.sort_by);
    an.field("sort_descending", a.sort_descending);
    an.field("filter_role", a.filter_role);
    an.field("filter_layer", a.filter_layer);
    an.field("thresholds_edited", a.thresholds_edited);
    an.field("positional_threshold", a.positional_threshold);
    an.field("rare_threshold", a.rare_threshold);
    an.field("syntactic_margin", a.syntactic_margin);
    an.field("measure_thresholds", a.measure_thresholds);
    an.field("lrp_enabled", a.lrp_enabled);
    an.field("lrp_position", a.lrp_position);
    an.field("lrp_token", a.lrp_token);
    an.field("lrp_shading", a.lrp_shading);
    an.field("syntax_file", a.syntax_file);
    an.field("syntax_index", a.syntax_index);
    an.field("syntax_parse", a.syntax_parse);
    an.field("syntax_parse_file", a.syntax_parse_file);
  });
  io.section("generation", [&](auto& gen) {
    auto& g = s.generation;
    gen.field("prompt", g.settings.prompt);
    gen.field("max_new", g.settings.max_new);
    gen.field("temperature", g.settings.temperature);
    gen.field("top_k", g.settings.top_k);
    gen.field("top_p", g.settings.top_p);
    gen.field("seed", g.settings.seed);
    gen.field("generated", g.generated);
  });
  // The Patching view's settings, and those its last result was measured with.
  auto patching_settings = [](auto& io, auto& settings) {
    io.field("counterfactual", settings.counterfactual);
    io.field("answer", settings.answer);
    io.field("wrong", settings.wrong);
    io.field("metric", settings.metric);
    io.field("site", settings.site);
  };
  io.section("patching", [&](auto& pat) {
    auto& p = s.patching;
    patching_settings(pat, p.settings);
    pat.field("take", p.take);
    pat.field("ran", p.ran);
    pat.section("measured", [&](auto& m) {
      m.field("text", p.measured_text);
      patching_settings(m, p.measured_settings);
      m.field("controls", p.measured_controls);
    });
  });
  io.section("layout", [&](auto& layout) {
    auto& w = s.window;
    layout.field("imgui_ini", w.imgui_ini);
    layout.field("opened", w.opened);
    layout.field("closed", w.closed);
    layout.section("attention_map", [&](auto& map) {
      map.field("zoom", w.attention_map.zoom);
      map.field("col0", w.attention_map.col0);
      map.field("row0", w.attention_map.row0);
      map.field("query_from", w.attention_map.query_from);
      map.field("query_to", w.attention_map.query_to);
    });
    layout.section("head_view", [&](auto& hv) {
      hv.field("hidden", w.head_view.hidden);
      hv.field("centre", w.head_view.centre);
    });
  });
}

}  // namespace

json session_to_json(const SessionState& s) {
  json j = {{"format", "headlab-session"}, {"version", kSessionVersion}, {"controls", controls_to_json(s.controls)}};
  SessionWriter writer{j};
  session_fields(writer, s);
  return j;
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
  if (j.contains("controls")) {
    try {
      s.controls = controls_from_json(j.at("controls"));
    } catch (const std::exception& e) {
      w.push_back(std::string("controls ignored: ") + e.what());
    }
  }
  SessionReader reader{j, w, ""};
  session_fields(reader, s);
  if (!is_colormap_name(s.view.colormap)) {
    w.push_back("view.colormap '" + s.view.colormap + "' ignored: viridis or gray");
    s.view.colormap = ViewSettings{}.colormap;
  }
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
