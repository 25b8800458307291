// Model: the architecture summary, an in-app folder browser with recent folders, and conversion of
// the open model into GQA/MQA or collaborative attention (`headlab convert`, off the UI thread).
#pragma once

#include "app/gui/view.h"

#include <string>
#include <vector>

namespace headlab::app {

class ModelView : public View {
 public:
  ModelView() : View("Model") {}

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.0f, 0.0f, 0.24f, 0.40f}; }

 private:
  void drawSummary(Workbench& wb);
  void drawBrowser(Workbench& wb);
  void drawConvert(Workbench& wb);
  void listDirectory();
  // Browser state is UI-only (not a user choice a session keeps).
  std::string browse_dir_;
  char path_[1024] = {};
  struct Entry {
    std::string name;
    bool is_model = false;
  };
  std::vector<Entry> entries_;
  std::string listed_dir_;
  std::string last_click_;       // the entry clicked last, and when (a second click opens a model)
  double last_click_time_ = -1;
  // The Convert tab's choices (UI state until the Convert button sends them).
  int convert_kind_ = 0;  // 0 GQA, 1 MQA, 2 collaborative
  int convert_groups_ = 2, convert_key_dim_ = 0;
  char convert_out_[1024] = {};
  std::string convert_source_;  // the model the output folder was proposed for
  bool convert_running_ = false;  // as last drawn
};

}  // namespace headlab::app
