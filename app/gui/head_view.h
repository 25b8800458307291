// Head view (BertViz-style): lines from each query token to the key tokens of the selected layer,
// one colour per head, the weight as opacity. Long inputs show a readable window of queries around
// the hovered or selected one, the other tokens compressed and faded.
#pragma once

#include "app/gui/view.h"

#include <optional>
#include <vector>

namespace headlab::app {

class HeadView : public View {
 public:
  HeadView() : View("Head view") {}

 protected:
  void drawContent(Workbench& wb) override;
  bool exportFile(Workbench& wb, const std::string& path) override;
  std::string exportFormats() const override { return ".svg, .pdf"; }
  ImVec4 defaultRect() const override { return {0.64f, 0.52f, 0.36f, 0.48f}; }
  void keep_state(WindowState& window) const override;
  void restore_state(const WindowState& window, uint64_t after_generation) override;

 private:
  std::vector<char> hidden_heads_;  // UI-only: heads switched off in this view
  int window_centre_ = 0;           // UI-only: the query the readable window is centred on
  int followed_query_ = -1;         // the selection last followed
  // A loaded session's hidden heads and centre, waiting for the session's own run (a snapshot
  // generation newer than restore_after_).
  std::optional<HeadViewState> restore_;
  uint64_t restore_after_ = 0;
};

}  // namespace headlab::app
