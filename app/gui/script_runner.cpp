#include "app/gui/script_runner.h"

#include "app/gui/export_actions.h"
#include "app/gui/view.h"
#include "app/gui/views.h"
#include "app/gui/workbench.h"
#include "app/state/controls_edit.h"
#include "app/state/run_mapping.h"

#include <iostream>

namespace headlab::app {
namespace {

// Window titles by the names scripts use.
std::string window_of(const std::string& view) {
  if (view == "attention-map" || view == "attention_map") return "Attention map";
  if (view == "heads-grid" || view == "heads_grid") return "Heads grid";
  if (view == "head-view" || view == "head_view") return "Head view";
  if (view == "window" || view.empty()) return "";
  return view;
}

std::string figure_of(const std::string& view) {
  std::string f = view;
  for (char& c : f)
    if (c == '_') c = '-';
  return f;
}

MixPreset preset_of(const std::string& name) {
  if (name == "uniform") return MixPreset::Uniform;
  if (name == "swap") return MixPreset::Swap;
  if (name == "blend") return MixPreset::Blend;
  if (name == "identity") return MixPreset::Identity;
  throw std::runtime_error("unknown preset '" + name + "' (identity, uniform, swap, blend)");
}

}  // namespace

ScriptRunner::ScriptRunner(std::vector<ScriptAction> actions, std::string origin)
    : actions_(std::move(actions)), origin_(std::move(origin)), waiting_since_(std::chrono::steady_clock::now()) {}

void ScriptRunner::step(Workbench& wb, const std::vector<std::unique_ptr<View>>& views) {
  if (wb.quit) return;
  if (done()) {
    if (wb.captures.empty()) wb.quit = true;
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  const bool waiting = !wb.settled() || !wb.captures.empty();
  if (waiting || wait_frames_ > 0) {
    if (wait_frames_ > 0 && !waiting) --wait_frames_;
    if (now - waiting_since_ > std::chrono::seconds(180)) {
      std::cerr << "headlab gui: " << origin_ << ": timed out waiting before action " << actions_[next_].index
                << (wb.last_error.empty() ? "" : " (" + wb.last_error + ")") << "\n";
      exit_code_ = 1;
      wb.quit = true;
    }
    return;
  }
  const ScriptAction& a = actions_[next_++];
  try {
    execute(a, wb, views);
  } catch (const std::exception& e) {
    std::cerr << "headlab gui: " << origin_ << ": action " << a.index << " (" << a.kind << "): " << e.what() << "\n";
    exit_code_ = 1;
    wb.quit = true;
  }
  wb.frames_since_change = 0;
  waiting_since_ = now;
}

void ScriptRunner::execute(const ScriptAction& a, Workbench& wb, const std::vector<std::unique_ptr<View>>& views) {
  const auto& j = a.args;
  auto& sel = wb.session.selection;
  const std::string stack = j.value("stack", sel.stack);
  auto heads_of = [&](const std::string& which) {
    const AttentionSummary* att = wb.model ? wb.model->find(stack) : nullptr;
    if (!att) throw std::runtime_error("the model has no '" + stack + "' attention");
    return which == "pre" ? att->softmax_heads : att->output_heads;
  };
  if (a.kind == "open_model") {
    wb.open_model(j.at("folder").get<std::string>());
  } else if (a.kind == "set_text") {
    wb.session.text = j.at("text").get<std::string>();
    wb.session.decoder_text = j.value("decoder_text", wb.session.decoder_text);
    wb.request_run();
  } else if (a.kind == "run") {
    wb.request_run();
  } else if (a.kind == "select_head") {
    sel.stack = stack;
    sel.layer = j.at("layer").get<int>();
    sel.head = j.at("head").get<int>();
    sel.mixer_layer = sel.layer;
    if (j.contains("stage")) {
      const std::string s = j.at("stage").get<std::string>();
      sel.stage = s == "J" ? Stage::J : s == "L" ? Stage::L : s == "W" ? Stage::W : Stage::U;
      if (sel.stage == Stage::J || sel.stage == Stage::L) wb.request_run();
    }
    if (wb.model) clamp_selection(sel, *wb.model, wb.snapshot.get());
  } else if (a.kind == "select_token") {
    sel.query = j.value("query", -1);
    sel.key = j.value("key", -1);
  } else if (a.kind == "set_gate") {
    set_gate(wb.session.controls, stack, j.at("layer").get<int>(), j.at("head").get<int>(), j.at("value").get<float>(),
             heads_of("post"));
    wb.controls_changed();
  } else if (a.kind == "set_ablation") {
    wb.session.controls.at(stack, j.at("layer").get<int>()).ablation =
        j.at("mode").get<std::string>() == "mean" ? core::Ablation::Mean : core::Ablation::Zero;
    canonicalize(wb.session.controls);
    wb.controls_changed();
  } else if (a.kind == "set_mix") {
    const std::string which = j.at("which").get<std::string>();
    if (which != "pre" && which != "post") throw std::runtime_error("which must be \"pre\" or \"post\"");
    const int heads = heads_of(which);
    std::vector<float> m = j.contains("matrix") ? j.at("matrix").get<std::vector<float>>()
                                                : mix_preset(preset_of(j.value("preset", "identity")), heads, j.value("a", 0),
                                                             j.value("b", 1), j.value("alpha", 0.5f));
    if (m.size() != static_cast<size_t>(heads) * heads)
      throw std::runtime_error("matrix must have " + std::to_string(heads * heads) + " entries");
    set_mix(wb.session.controls, stack, j.at("layer").get<int>(), which, m, heads);
    wb.controls_changed();
  } else if (a.kind == "reset") {
    if (j.contains("layer"))
      reset_layer(wb.session.controls, stack, j.at("layer").get<int>());
    else
      wb.session.controls = {};
    wb.controls_changed();
  } else if (a.kind == "set_view") {
    auto& v = wb.session.view;
    v.colormap = j.value("colormap", v.colormap);
    v.log_scale = j.value("log_scale", v.log_scale);
    v.fixed_range = j.value("fixed_range", v.fixed_range);
  } else if (a.kind == "save_session") {
    wb.save_session(j.at("path").get<std::string>());
  } else if (a.kind == "open_session") {
    wb.open_session(j.at("path").get<std::string>());
  } else if (a.kind == "export") {
    const std::string view = j.at("view").get<std::string>();
    const std::string path = j.at("path").get<std::string>();
    const bool png = path.size() > 4 && path.substr(path.size() - 4) == ".png";
    std::string window = png ? window_of(view) : "";
    if (png && !window.empty() && !find_view(views, window)) throw std::runtime_error("no view '" + view + "'");
    if (png && window.empty()) {
      wb.captures.push_back({path, "", j.value("scale", 1)});
    } else {
      export_figure(wb, figure_of(view), window, path, j.value("scale", 1));
    }
  } else if (a.kind == "screenshot") {
    wb.captures.push_back({j.at("path").get<std::string>(), "", j.value("scale", 1)});
  } else if (a.kind == "show_view") {
    View* v = find_view(views, window_of(j.at("view").get<std::string>()));
    if (!v) throw std::runtime_error("no view '" + j.at("view").get<std::string>() + "'");
    v->open() = j.value("open", true);
  } else if (a.kind == "wait_frames") {
    wait_frames_ = j.at("frames").get<int>();
  } else if (a.kind == "quit") {
    next_ = actions_.size();
  }
}

}  // namespace headlab::app
