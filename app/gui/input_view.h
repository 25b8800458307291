// Input: the text (run on Enter; masked-LM models take [MASK]) and its tokens with ids. A text the
// model refuses is marked, with offers to cut a long one to the model's positions.
#pragma once

#include "app/gui/view.h"

namespace headlab::app {

class InputView : public View {
 public:
  InputView() : View("Input") {}

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.0f, 0.40f, 0.24f, 0.25f}; }

 private:
  void drawRefused(Workbench& wb);
  int trim_centre_ = -1;  // the token a window is kept around; -1 = the refused text's middle
};

}  // namespace headlab::app
