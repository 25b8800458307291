// Syntax: one CoNLL-U sentence (or the typed input with its parse) with its gold dependency tree drawn above the words and the selected
// head's word-level argmax arcs below them (each word to the word it attends to most, as the head
// report's syntactic measure reads it, Clark et al. 2019 §4), coloured by whether they find the
// gold head, and the head's accuracy per relation on this sentence.
#pragma once

#include "app/gui/view.h"

#include <string>

namespace headlab::app {

class SyntaxView : public View {
 public:
  SyntaxView() : View("Syntax", false) {}
  std::string workspace() const override { return "Analyse"; }
  // Its figure as .svg or .pdf (app/export/analysis_figures.h).
  bool exportFile(Workbench& wb, const std::string& path) override;
  std::string exportFormats() const override { return ".svg, .pdf"; }

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.28f, 0.5f, 0.42f, 0.5f}; }

 private:
  void drawPicker(Workbench& wb);
  void drawParsePopup(Workbench& wb);
  std::string file_edit_;        // the file being typed in the picker's popup
  std::string parse_edit_;       // CoNLL-U being pasted in the parse popup
  std::string parse_file_edit_;  // or the CoNLL-U file that holds the input's parse
  const void* shown_ = nullptr;  // the result drawn last frame: a new one resets the scroll
  int scroll_frames_ = 0;
};

}  // namespace headlab::app
