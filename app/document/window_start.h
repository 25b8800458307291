// What the window starts with: the model or session to open, a script to run, a screenshot to take.
// The command line fills it (`headlab gui …`, plain `headlab --model DIR`) and the window reads it.
#pragma once

#include <string>

namespace headlab::app {

// What `headlab gui` (or plain `headlab [--model DIR] [--session FILE]`) asks the window for.
struct GuiOptions {
  std::string model;       // model folder ("" = the newest in assets/models, else random weights)
  std::string session;     // session file to open
  std::string script;      // JSON list of actions to run in the window
  std::string screenshot;  // PNG written once the first run (or the script) is drawn; then exit
  bool force = false;      // --force: the screenshot may replace an existing file
};

}  // namespace headlab::app
