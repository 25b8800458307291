// Input: the text (run on Enter; masked-LM models take [MASK]) and its tokens with ids.
#pragma once

#include "app/gui/view.h"

namespace headlab::app {

class InputView : public View {
 public:
  InputView() : View("Input") {}

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.0f, 0.40f, 0.24f, 0.25f}; }
};

}  // namespace headlab::app
