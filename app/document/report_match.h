// Which model a head report belongs to. A report is measured on one model's weights; the window
// applies it to the open model's heads only when it was measured on that model, never by position
// on another model's heads.
#pragma once

#include "analysis/head_report.h"
#include "app/work/workbench_engine.h"

#include <string>

namespace headlab::app {

// "" when `report` was measured on `model`; otherwise why not, for the user ("measured on
// /models/bert (the open model is /models/gpt2)"). The weights decide when both say which they are
// (HeadReport::model_weights, ModelSummary::weights_hash); else the folder, compared as canonical
// paths. Either way the report's stacks, layers and heads must be the model's.
std::string report_mismatch(const analysis::HeadReport& report, const ModelSummary& model);

}  // namespace headlab::app
