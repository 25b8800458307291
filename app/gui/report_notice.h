// What the Analyse views show in place of a head report measured on another model: whose report
// it is and why it is not applied, with the way back (open its model, or close it).
#pragma once

namespace headlab::app {

class Workbench;

// Draws the notice when a report of another model is open; true when it drew one (the caller shows
// no heads of it).
bool foreign_report_notice(Workbench& wb);

}  // namespace headlab::app
