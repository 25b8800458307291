// What quitting the window would stop: the user's own work under way — a dataset analysis, a
// generation, patching, a conversion, a figure being written — never the live model's loads and
// runs (the next start redoes those) or the Syntax view's one sentence. The window asks before it
// quits while any is there (app/gui/quit_prompt.h). Torch-free.
#pragma once

#include "app/tasks/task.h"

#include <memory>
#include <string>
#include <vector>

namespace headlab::app {

// One line per such task among `active` (TaskManager::active()), with its progress:
// "analysing the dataset — 33 of 12544 (0%)".
std::vector<std::string> work_stopped_by_quit(const std::vector<std::shared_ptr<Task>>& active);

}  // namespace headlab::app
