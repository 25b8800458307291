// The window's question before it quits with the user's work under way (Workbench::request_quit):
// what would stop, and Quit or Keep working.
#pragma once

namespace headlab::app {

class Workbench;

// Draws the "Quit HeadLab?" dialog while Workbench::quit_question holds work; its list follows the
// tasks (work that ends meanwhile leaves it, and with none left the window quits).
void draw_quit_prompt(Workbench& wb);

}  // namespace headlab::app
