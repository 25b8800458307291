#include "app/gui/model_view.h"

#include "app/gui/draw_util.h"
#include "app/gui/workbench.h"
#include "core/memory_budget.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace fs = std::filesystem;

namespace headlab::app {
namespace {

std::string with_commas(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

void row(const char* key, const std::string& value) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextDisabled("%s", key);
  ImGui::TableNextColumn();
  ImGui::TextWrapped("%s", value.c_str());
}

}  // namespace

void ModelView::drawContent(Workbench& wb) {
  if (ImGui::BeginTabBar("model_tabs")) {
    if (ImGui::BeginTabItem("Architecture")) {
      drawSummary(wb);
      ImGui::EndTabItem();
    }
    if (ImGui::BeginTabItem("Open folder")) {
      drawBrowser(wb);
      ImGui::EndTabItem();
    }
    // A conversion that starts (from this tab or a script) brings its tab forward once.
    const bool started = wb.doc().convert.running && !convert_running_;
    convert_running_ = wb.doc().convert.running;
    if (ImGui::BeginTabItem("Convert", nullptr, started ? ImGuiTabItemFlags_SetSelected : 0)) {
      drawConvert(wb);
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
}

void ModelView::drawSummary(Workbench& wb) {
  const auto& m = wb.doc().model;
  if (!m) {
    ImGui::TextDisabled("loading…");
    return;
  }
  if (ImGui::BeginTable("arch", 2, ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_RowBg)) {
    ImGui::TableSetupColumn("k", ImGuiTableColumnFlags_WidthFixed);
    ImGui::TableSetupColumn("v", ImGuiTableColumnFlags_WidthStretch);
    row("name", m->name);
    row("folder", m->folder.empty() ? "(in memory: random weights)" : m->folder);
    row("kind", m->kind + " · " + m->family + " · objective " + m->objective);
    row("parameters", with_commas(m->parameters) + " (" + m->weights_dtype + ")");
    if (m->mapped_bytes > 0)
      row("in memory", core::format_bytes(m->mapped_bytes) + " of weights mapped from the files as stored; " +
                              (wb.doc().session.precision == "fast" && m->weights_dtype == "BF16" ? "multiplied as stored (fast)"
                                                                                           : "computed in float32"));
    // Where the model runs; another choice opens it again there (cmd::SetDevice).
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    ImGui::TextDisabled("device");
    ImGui::TableSetColumnIndex(1);
    if (m->folder.empty() || m->devices.size() < 2) {
      ImGui::TextWrapped("%s (%s)", m->device.c_str(),
                         m->folder.empty() ? "a random-weight model runs on the CPU" : m->no_card.c_str());
    } else {
      ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
      if (ImGui::BeginCombo("##device", m->device.c_str())) {
        for (const auto& d : m->devices)
          if (ImGui::Selectable(d.c_str(), d == m->device) && d != m->device) wb.apply(cmd::SetDevice{d});
        ImGui::EndCombo();
      }
    }
    // How runs compute (cmd::SetPrecision; core/precision.h).
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    ImGui::TextDisabled("precision");
    ImGui::TableSetColumnIndex(1);
    const std::string& precision = wb.doc().session.precision;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    if (ImGui::BeginCombo("##precision", precision.c_str())) {
      for (const char* p : {"exact", "fast"})
        if (ImGui::Selectable(p, precision == p) && precision != p) wb.apply(cmd::SetPrecision{p});
      ImGui::EndCombo();
    }
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("exact: every product in float32 (TF32 off on a card).\n"
                        "fast: BF16 weights kept as stored multiply in BF16, TF32 on a card;\n"
                        "maps and logits move by ~1e-2. Float32 weights on the CPU compute the same either way.");
    // On the CPU fast precision changes only BF16 weights kept as stored (core/precision.h).
    if (precision == "fast" && m->device == "cpu" && !(m->mapped_bytes > 0 && m->weights_dtype == "BF16")) {
      const std::string why = m->mapped_bytes > 0 ? m->weights_dtype + " weights compute in float32 in either precision"
                                                  : std::string("the weights are float32 copies");
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
      ImGui::TextWrapped("the same as exact here: %s", why.c_str());
      ImGui::PopStyleColor();
    }
    row("sizes", "hidden " + std::to_string(m->hidden_size) +
                     (m->ffn_size > 0 ? " · ffn " + std::to_string(m->ffn_size) : std::string(" · no FFN")) + " · vocab " +
                     std::to_string(m->vocab_size) + " · max " + std::to_string(m->max_positions) + " tokens");
    row("positions / norm", m->positions + " · " + m->norm);
    row("tokenizer", m->tokenizer_kind);
    for (const auto& a : m->attentions) {
      std::string heads = std::to_string(a.layers) + " layers × " + std::to_string(a.output_heads) + " heads · " + a.variant +
                          " · q/kv " + std::to_string(a.logit_heads) + "/" + std::to_string(a.kv_heads) + " · d_k " +
                          std::to_string(a.key_size) + ", d_v " + std::to_string(a.value_size);
      if (a.talking_heads)
        heads += " · h_k/h/h_v " + std::to_string(a.logit_heads) + "/" + std::to_string(a.softmax_heads) + "/" +
                 std::to_string(a.output_heads);
      row(a.title.c_str(), heads);
    }
    if (!m->weights_hash.empty()) row("weights hash", m->weights_hash);
    ImGui::EndTable();
  }
  if (!m->description.empty()) ImGui::TextWrapped("%s", m->description.c_str());
}

void ModelView::listDirectory() {
  entries_.clear();
  listed_dir_ = browse_dir_;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(browse_dir_, fs::directory_options::skip_permission_denied, ec)) {
    if (!e.is_directory(ec)) continue;
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    entries_.push_back({name, fs::is_regular_file(e.path() / "config.json", ec)});
  }
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
}

void ModelView::drawBrowser(Workbench& wb) {
  if (browse_dir_.empty()) {
    const std::string models = wb.assets_dir().empty() ? "" : (fs::path(wb.assets_dir()) / "models").string();
    std::error_code ec;
    browse_dir_ = !models.empty() && fs::is_directory(models, ec) ? models : fs::current_path(ec).string();
    std::snprintf(path_, sizeof path_, "%s", browse_dir_.c_str());
  }
  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 4);
  if (ImGui::InputText("##path", path_, sizeof path_, ImGuiInputTextFlags_EnterReturnsTrue)) {
    std::error_code ec;
    if (fs::is_regular_file(fs::path(path_) / "config.json", ec))
      wb.apply(cmd::OpenModel{path_});
    else if (fs::is_directory(path_, ec))
      browse_dir_ = path_;
  }
  ImGui::SameLine();
  if (ImGui::Button("Open")) wb.apply(cmd::OpenModel{path_});
  if (listed_dir_ != browse_dir_) listDirectory();
  if (!wb.doc().session.recent_folders.empty() && ImGui::CollapsingHeader("Recent folders", ImGuiTreeNodeFlags_DefaultOpen)) {
    for (const auto& f : wb.doc().session.recent_folders)
      if (ImGui::Selectable(f.c_str())) wb.apply(cmd::OpenModel{f});
  }
  ImGui::TextDisabled("%s", browse_dir_.c_str());
  ImGui::BeginChild("dir", ImVec2(0, -ImGui::GetFrameHeightWithSpacing()), true);
  if (ImGui::Selectable("..")) {
    browse_dir_ = fs::path(browse_dir_).parent_path().string();
    std::snprintf(path_, sizeof path_, "%s", browse_dir_.c_str());
  }
  for (const auto& e : entries_) {
    const std::string label = (e.is_model ? "[model] " : "") + e.name;
    const std::string full = (fs::path(browse_dir_) / e.name).string();
    if (ImGui::Selectable(label.c_str(), full == path_, ImGuiSelectableFlags_AllowDoubleClick)) {
      // A second click on the same model soon after the first opens it, also when both clicks
      // arrive within one frame (ImGui then sees no double-click of its own).
      const double now = ImGui::GetTime();
      const bool again = full == last_click_ && now - last_click_time_ < 2 * ImGui::GetIO().MouseDoubleClickTime;
      last_click_ = full;
      last_click_time_ = now;
      std::snprintf(path_, sizeof path_, "%s", full.c_str());
      if (e.is_model && (ImGui::IsMouseDoubleClicked(0) || again)) {
        wb.apply(cmd::OpenModel{full});
        last_click_.clear();
      } else if (!e.is_model) {
        browse_dir_ = full;
      }
    }
    if (e.is_model && ImGui::IsItemHovered()) ImGui::SetTooltip("double-click to open (or Open above)");
  }
  ImGui::EndChild();
  if (ImGui::Button("Random-weight model (mha.json)")) wb.apply(cmd::OpenModel{""});
}

void ModelView::drawConvert(Workbench& wb) {
  const auto& m = wb.doc().model;
  const auto& job = wb.doc().convert;
  if (!m || m->folder.empty() || m->attentions.empty()) {
    ImGui::TextWrapped("Open a model folder to convert it (a random-weight model has none).");
    return;
  }
  const auto& a = m->attentions.front();
  static const char* kinds[] = {"GQA (mean-pooled key/value groups)", "MQA (one key/value head)",
                                "collaborative (CP decomposition)"};
  static const char* names[] = {"gqa", "mqa", "collaborative"};
  // A fresh model gets a proposed output folder beside it and the paper's third of h·d_k.
  if (convert_source_ != m->folder) {
    convert_source_ = m->folder;
    convert_key_dim_ = std::max(1, a.output_heads * a.key_size / 3);
    convert_groups_ = std::max(1, a.kv_heads / 2);
    convert_out_[0] = 0;
  }
  ImGui::TextWrapped("Turns %s into another attention variant and writes it as a new model folder "
                     "(Ainslie et al. 2023 for GQA/MQA, Cordonnier et al. 2020 §4 for collaborative).",
                     fs::path(m->folder).filename().string().c_str());
  ImGui::BeginDisabled(job.running);
  label_before("variant");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 18);
  ImGui::Combo("##variant", &convert_kind_, kinds, 3);
  if (convert_kind_ == 0) {
    label_before("key/value groups");
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    ImGui::InputInt("##groups", &convert_groups_);
    convert_groups_ = std::clamp(convert_groups_, 1, std::max(1, a.kv_heads));
    ImGui::TextDisabled("divides the %d key/value heads; %d changes nothing", a.kv_heads, a.kv_heads);
  } else if (convert_kind_ == 2) {
    label_before("shared key size");
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    ImGui::InputInt("##key_dim", &convert_key_dim_);
    convert_key_dim_ = std::max(1, convert_key_dim_);
    ImGui::TextDisabled("h·d_k = %d gives the same model; about a third keeps quality (the paper)",
                        a.output_heads * a.key_size);
  }
  const std::string suffix = convert_kind_ == 0 ? "-gqa" + std::to_string(convert_groups_)
                             : convert_kind_ == 1 ? "-mqa"
                                                  : "-collaborative" + std::to_string(convert_key_dim_);
  const std::string proposed = fs::path(m->folder).lexically_normal().string() + suffix;
  if (convert_out_[0] == 0) std::snprintf(convert_out_, sizeof convert_out_, "%s", proposed.c_str());
  label_before("output");
  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 6);
  ImGui::InputText("##output", convert_out_, sizeof convert_out_);
  ImGui::SameLine();
  if (ImGui::SmallButton("default")) std::snprintf(convert_out_, sizeof convert_out_, "%s", proposed.c_str());
  if (ImGui::Button("Convert and open"))
    wb.apply(cmd::ConvertModel{names[convert_kind_], convert_groups_, convert_key_dim_, convert_out_, true});
  ImGui::EndDisabled();
  if (job.running) {
    ImGui::ProgressBar(static_cast<float>(job.fraction), ImVec2(-ImGui::GetFontSize() * 5, 0), job.phase.c_str());
    ImGui::SameLine();
    if (ImGui::Button("Stop")) wb.apply(cmd::StopConvert{});
  } else if (!job.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.9f, 0.3f, 0.3f, 1.0f));
    ImGui::TextWrapped("%s", job.error.c_str());
    ImGui::PopStyleColor();
  } else if (!job.out.empty()) {
    ImGui::TextWrapped("Wrote %s in %.1f s. %s", job.out.c_str(), job.elapsed_seconds, job.summary.c_str());
  } else if (job.phase == "stopped") {
    ImGui::TextDisabled("Stopped; nothing was written.");
  }
}

}  // namespace headlab::app
