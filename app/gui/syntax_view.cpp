#include "app/gui/syntax_view.h"

#include "analysis/head_stats.h"
#include "app/export/analysis_figures.h"
#include "app/gui/draw_util.h"
#include "app/gui/export_actions.h"
#include "app/gui/workbench.h"
#include "app/layout/arc_layout.h"

#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

namespace headlab::app {
namespace {

constexpr ImU32 kGoldColour = IM_COL32(150, 170, 210, 255);
constexpr ImU32 kFoundColour = IM_COL32(70, 200, 110, 255);
constexpr ImU32 kMissedColour = IM_COL32(235, 85, 80, 255);
constexpr ImU32 kUnscoredColour = IM_COL32(130, 130, 130, 255);

ImVec4 to_vec4(ImU32 c) { return ImGui::ColorConvertU32ToFloat4(c); }

// An arc from word x `from` to word x `to` on the line y = `base`, peaking `height` above (dir −1)
// or below (dir +1), with an arrowhead at `to` (the head).
void draw_arc(ImDrawList* list, float from, float to, float base, float height, float dir, ImU32 colour) {
  const float control = base + dir * height * 4.0f / 3.0f;  // a cubic's peak is 3/4 of its control height
  list->AddBezierCubic(ImVec2(from, base), ImVec2(from, control), ImVec2(to, control), ImVec2(to, base), colour, 1.5f);
  const float a = 4.0f;
  list->AddTriangleFilled(ImVec2(to, base), ImVec2(to - a, base + dir * a * 1.6f), ImVec2(to + a, base + dir * a * 1.6f),
                          colour);
}

// The sentence's scored words (analysis::scored_arcs: root and punct left out).
std::set<int> scored_dependents(const SyntaxResult& r) {
  std::set<int> out;
  for (const auto& arc : analysis::scored_arcs(r.heads, r.relations, false, r.word_has_token)) out.insert(arc.dependent);
  return out;
}

void relation_table(const std::vector<RelationAccuracy>& rows, float height) {
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("relations", 3, flags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("relation", ImGuiTableColumnFlags_WidthStretch, 2.0f);
  ImGui::TableSetupColumn("found", ImGuiTableColumnFlags_WidthStretch, 1.0f);
  ImGui::TableSetupColumn("accuracy", ImGuiTableColumnFlags_WidthStretch, 1.0f);
  ImGui::TableHeadersRow();
  int count = 0, correct = 0;
  auto row = [](const std::string& name, int found, int of) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(name.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%d / %d", found, of);
    ImGui::TableNextColumn();
    const ImU32 colour = found == of ? kFoundColour : found == 0 ? kMissedColour : ImGui::GetColorU32(ImGuiCol_Text);
    ImGui::TextColored(to_vec4(colour), "%.0f%%", of ? 100.0 * found / of : 0.0);
  };
  for (const auto& r : rows) {
    row(r.relation, r.correct, r.count);
    count += r.count;
    correct += r.correct;
  }
  if (!rows.empty()) row("all scored", correct, count);
  ImGui::EndTable();
}

// The typed input with its parse rather than a file's sentence.
bool on_input(const AnalysisChoices& a) { return !a.syntax_parse.empty() || !a.syntax_parse_file.empty(); }

}  // namespace

void SyntaxView::drawParsePopup(Workbench& wb) {
  if (!ImGui::BeginPopup("syntax-parse")) return;
  const float font = ImGui::GetFontSize();
  ImGui::TextUnformatted("The parse of the text in the Input view, as CoNLL-U (10 tab-separated columns):");
  ImGui::InputTextMultiline("##conllu", &parse_edit_, ImVec2(font * 36, font * 10), ImGuiInputTextFlags_AllowTabInput);
  ImGui::TextUnformatted("or a CoNLL-U file holding a sentence whose words spell the input:");
  ImGui::SetNextItemWidth(font * 36);
  ImGui::InputText("##parse-file", &parse_file_edit_);
  ImGui::TextDisabled("The words must match the input in order; whitespace between them is free.");
  const bool one = parse_edit_.empty() != parse_file_edit_.empty();
  ImGui::BeginDisabled(!one);
  if (ImGui::Button("Show the input with this parse")) {
    cmd::SetParse c;
    c.conllu = parse_edit_;
    c.file = parse_file_edit_;
    wb.apply(c);
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
  if (!one && !parse_edit_.empty()) ImGui::TextDisabled("paste a parse or name a file, not both");
  ImGui::EndPopup();
}

void SyntaxView::drawPicker(Workbench& wb) {
  const auto& doc = wb.doc();
  const auto& a = doc.session.analysis;
  auto open_parse = [&] {
    parse_edit_ = a.syntax_parse;
    parse_file_edit_ = a.syntax_parse_file;
    ImGui::OpenPopup("syntax-parse");
  };
  // The head whose arcs are drawn, where the sentence comes from, and the exports.
  auto status = [&] {
    const auto& sel = doc.session.selection;
    char head[128];
    std::snprintf(head, sizeof head, "%s L%d H%d%s", core::stack_name(sel.stack), sel.layer, sel.head,
                  doc.syntax_job.running ? " · running…" : "");
    same_line_if_fits(ImGui::CalcTextSize(head).x);  // wraps rather than being cut at the window's edge
    ImGui::TextDisabled("%s", head);
    if (!doc.syntax) return;
    if (!doc.syntax->on_input) {
      const std::string source = std::filesystem::path(doc.syntax->source).filename().string();
      same_line_if_fits(ImGui::CalcTextSize(source.c_str()).x);
      ImGui::TextDisabled("%s", source.c_str());
    }
    export_buttons_same_line(wb, "syntax", title());
  };
  if (on_input(a)) {
    ImGui::TextUnformatted("The typed input, parsed by");
    ImGui::SameLine();
    ImGui::TextDisabled("%s", a.syntax_parse_file.empty() ? "the pasted CoNLL-U"
                                                           : std::filesystem::path(a.syntax_parse_file).filename().string().c_str());
    ImGui::SameLine();
    if (ImGui::Button("Parse…")) open_parse();
    if (!syntax_file_of(a).empty()) {
      ImGui::SameLine();
      if (ImGui::Button("File sentences")) {
        cmd::SelectSentence c;
        c.index = a.syntax_index;
        wb.apply(c);
      }
    }
    drawParsePopup(wb);
    status();
    return;
  }
  const int index = doc.session.analysis.syntax_index;
  const int count = doc.syntax ? doc.syntax->sentence_count : 0;
  auto select = [&](int i) {
    cmd::SelectSentence c;
    c.index = std::max(0, count > 0 ? std::min(i, count - 1) : i);
    wb.apply(c);
  };
  if (ImGui::ArrowButton("##previous", ImGuiDir_Left) && index > 0) select(index - 1);
  ImGui::SameLine();
  int edit = index + 1;  // shown 1-based, as a reader counts sentences
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4);
  if (ImGui::InputInt("##sentence", &edit, 0, 0, ImGuiInputTextFlags_EnterReturnsTrue)) select(edit - 1);
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next", ImGuiDir_Right) && (count == 0 || index + 1 < count)) select(index + 1);
  ImGui::SameLine();
  if (count > 0) {
    ImGui::Text("of %d", count);
    ImGui::SameLine();
  }
  if (ImGui::Button("File…")) {
    file_edit_ = doc.session.analysis.syntax_file;
    ImGui::OpenPopup("syntax-file");
  }
  if (ImGui::BeginPopup("syntax-file")) {
    ImGui::TextUnformatted("CoNLL-U file (empty = the dataset's first)");
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 24);
    if (ImGui::InputText("##file", &file_edit_, ImGuiInputTextFlags_EnterReturnsTrue)) {
      cmd::SelectSentence c;
      c.file = file_edit_;
      c.index = 0;
      wb.apply(c);
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Parse of the input…")) open_parse();
  drawParsePopup(wb);
  if (doc.syntax && !doc.syntax->on_input) {
    ImGui::SameLine();
    // The maps, relevance and output views then show the same sentence.
    if (ImGui::Button("Use as input")) {
      cmd::SetText c;
      c.text = doc.syntax->text;
      wb.apply(c);
    }
  }
  status();
}

void SyntaxView::drawContent(Workbench& wb) {
  const auto& doc = wb.doc();
  const auto& a = doc.session.analysis;
  if (syntax_file_of(a).empty() && !on_input(a)) {
    ImGui::TextWrapped(
        "No CoNLL-U sentence: run a dataset on a CoNLL-U file (Dataset view), pick a file here, or give the parse "
        "of the text you typed (Parse of the input…).");
    drawPicker(wb);
    return;
  }
  drawPicker(wb);
  if (!doc.syntax_job.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kMissedColour);
    ImGui::TextWrapped("%s", doc.syntax_job.error.c_str());
    ImGui::PopStyleColor();
  }
  // A sentence measured on another model (the one open before) is never drawn as this model's.
  const bool stale = doc.syntax && doc.model && doc.syntax->model_folder != doc.model->folder;
  if (!doc.syntax || stale) {
    if (doc.model && doc.model->folder.empty())
      ImGui::TextDisabled("the Syntax view reads a model folder's tokenizer; this model has random weights and none");
    else if (doc.syntax_job.error.empty() || stale)
      ImGui::TextDisabled("running the sentence on %s…", model_title(wb).c_str());
    return;
  }
  const SyntaxResult& r = *doc.syntax;
  const auto& sel = doc.session.selection;
  const std::vector<int>* predicted = r.predicted(sel.stack, sel.layer, sel.head);
  ImGui::TextColored(to_vec4(kGoldColour), "gold tree");
  ImGui::SameLine();
  ImGui::TextDisabled("above, argmax below:");
  ImGui::SameLine();
  ImGui::TextColored(to_vec4(kFoundColour), "gold head");
  ImGui::SameLine();
  ImGui::TextColored(to_vec4(kMissedColour), "other");
  ImGui::SameLine();
  ImGui::TextColored(to_vec4(kUnscoredColour), "not scored");

  const std::vector<Arc> gold = tree_arcs(r.heads, r.relations);
  const std::vector<Arc> below = predicted ? argmax_arcs(*predicted) : std::vector<Arc>{};
  const float font = ImGui::GetFontSize();
  std::vector<float> widths;
  for (size_t w = 0; w < r.words.size(); ++w) {
    // A word's slot also fits its relation's label, which sits over the arc next to it.
    const float label = w < r.relations.size() ? ImGui::CalcTextSize(r.relations[w].c_str()).x * 0.8f : 0.0f;
    widths.push_back(std::max(ImGui::CalcTextSize(r.words[w].c_str()).x, label));
  }
  const float spacing = font * 1.2f, margin = font * 0.8f;
  const ArcLayout layout = layout_arcs(widths, spacing, gold, below);

  const std::vector<RelationAccuracy> accuracy =
      predicted ? sentence_relation_accuracy(r.heads, r.relations, *predicted, ArcDirection::DependentToHead, false,
                                             r.word_has_token)
                : std::vector<RelationAccuracy>{};
  const float row_h = ImGui::GetTextLineHeightWithSpacing();
  const float avail = ImGui::GetContentRegionAvail().y;
  const float table_h = std::min(row_h * (float(accuracy.size()) + 2.6f), std::max(row_h * 4, avail * 0.4f));
  const float figure_h = std::max(font * 8, avail - table_h - ImGui::GetStyle().ItemSpacing.y);
  const float word_h = font + 6, label_h = font + 2, arrow_pad = font * 0.6f;
  const int levels = std::max(1, layout.above_max_level + layout.below_max_level);
  const float scrollbar = ImGui::GetStyle().ScrollbarSize;
  // Deep trees get at least this much per level and scroll vertically rather than squeeze labels together.
  const float level_h = std::clamp((figure_h - word_h - label_h - arrow_pad - scrollbar - 8) / float(levels), font * 0.75f,
                                   font * 1.4f);
  const float above_h = label_h + level_h * float(layout.above_max_level);
  const float content_h = above_h + word_h + level_h * float(layout.below_max_level) + arrow_pad;

  ImGui::BeginChild("arcs", ImVec2(0, figure_h), false, ImGuiWindowFlags_HorizontalScrollbar);
  // A new sentence opens scrolled to its words (the bottom) when it is taller than the window.
  if (shown_ != doc.syntax.get()) shown_ = doc.syntax.get(), scroll_frames_ = 2;
  if (scroll_frames_ > 0) {
    ImGui::SetScrollY(ImGui::GetScrollMaxY());
    ImGui::SetScrollX(0);
    --scroll_frames_;
  }
  markFigure(ImGui::GetWindowPos(), ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowSize().x,
                                           ImGui::GetWindowPos().y + ImGui::GetWindowSize().y));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(layout.width + 2 * margin, content_h));
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float x0 = origin.x + margin;
  const float top = origin.y + above_h, bottom = top + word_h;
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 label_bg = ImGui::GetColorU32(ImGuiCol_WindowBg);
  for (size_t w = 0; w < r.words.size(); ++w) {
    const float tw = ImGui::CalcTextSize(r.words[w].c_str()).x;
    list->AddText(ImVec2(x0 + layout.word_x[w] - tw / 2, top + 3), text, r.words[w].c_str());
  }
  const std::set<int> scored = scored_dependents(r);
  // Gold arcs above; a relation the head finds gets its label in the found colour.
  for (size_t i = 0; i < gold.size(); ++i) {
    const int level = layout.above_levels[i];
    if (level <= 0) continue;
    const Arc& arc = gold[i];
    const float from = x0 + layout.word_x[size_t(arc.dependent)], to = x0 + layout.word_x[size_t(arc.head)];
    const float height = level_h * float(level);
    draw_arc(list, from, to, top, height, -1.0f, kGoldColour);
  }
  // Labels after every arc, so no arc runs through one.
  for (size_t i = 0; i < gold.size(); ++i) {
    const int level = layout.above_levels[i];
    if (level <= 0) continue;
    const Arc& arc = gold[i];
    const float from = x0 + layout.word_x[size_t(arc.dependent)], to = x0 + layout.word_x[size_t(arc.head)];
    const float height = level_h * float(level);
    const bool found = predicted && scored.count(arc.dependent) && (*predicted)[size_t(arc.dependent)] == arc.head;
    const ImVec2 size = ImGui::CalcTextSize(arc.label.c_str());
    const ImVec2 at((from + to) / 2 - size.x / 2, top - height - size.y / 2);
    list->AddRectFilled(at, ImVec2(at.x + size.x, at.y + size.y), label_bg);
    list->AddText(at, found ? kFoundColour : scored.count(arc.dependent) ? text : kUnscoredColour, arc.label.c_str());
  }
  // Argmax arcs below: green when the word attends most to its gold head, red otherwise.
  for (size_t i = 0; i < below.size(); ++i) {
    const int level = layout.below_levels[i];
    if (level <= 0) continue;
    const Arc& arc = below[i];
    const size_t d = size_t(arc.dependent);
    const ImU32 colour = !scored.count(arc.dependent) ? kUnscoredColour
                         : r.heads[d] == arc.head     ? kFoundColour
                                                      : kMissedColour;
    draw_arc(list, x0 + layout.word_x[d], x0 + layout.word_x[size_t(arc.head)], bottom, level_h * float(level), 1.0f,
             colour);
  }
  ImGui::EndChild();

  if (!predicted) {
    ImGui::TextDisabled("the sentence has no %s layer %d head %d", core::stack_name(sel.stack), sel.layer, sel.head);
    return;
  }
  relation_table(accuracy, table_h);
}

bool SyntaxView::exportFile(Workbench& wb, const std::string& path) {
  if (!is_vector_path(path)) return false;
  const auto& doc = wb.doc();
  if (!doc.syntax) throw std::runtime_error("export " + path + ": no sentence has been run in the Syntax view yet");
  const SyntaxResult& r = *doc.syntax;
  const auto& sel = doc.session.selection;
  const std::vector<int>* predicted = r.predicted(sel.stack, sel.layer, sel.head);
  const std::string sentence = r.on_input ? std::string("the input")
                                          : "sentence " + std::to_string(r.index + 1) + " of " +
                                                std::filesystem::path(r.file).filename().string();
  const std::string title = model_title(wb) + " — " + sentence + ", " + core::stack_name(sel.stack) + " layer " +
                            std::to_string(sel.layer) + " head " + std::to_string(sel.head);
  wb.start_export(path, [syntax = doc.syntax, path, title, predicted = predicted ? *predicted : std::vector<int>{}] {
    write_syntax_figure(path, title, syntax->words, syntax->heads, syntax->relations, predicted, syntax->word_has_token);
  });
  return true;
}

}  // namespace headlab::app
