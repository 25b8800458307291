// The workbench's document: what the user is looking at — the session's choices, the model, the
// latest run, the head report of a dataset — apart from any view's own UI state (scroll positions,
// text being typed, hover). Views read it; only the Controller's commands change it.
#pragma once

#include "analysis/head_report.h"
#include "app/work/convert_job.h"
#include "app/work/dataset_job.h"
#include "app/work/export_job.h"
#include "app/work/generation_job.h"
#include "app/work/patching_job.h"
#include "app/work/syntax_job.h"
#include "app/work/workbench_engine.h"
#include "app/document/session.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace headlab::app {

// A message for the status bar: what failed, kept until the same kind of action next succeeds
// (a folder that opens clears "open_model", a run that succeeds clears "run") or the user closes it.
struct ErrorMessage {
  std::string kind;  // "open_model", "run", "session", "export", or a command's script name
  std::string text;
};

struct Document {
  SessionState session;
  std::shared_ptr<const ModelSummary> model;
  std::shared_ptr<const RunSnapshot> snapshot;
  // The head report of the last dataset run or opened file, with the session's thresholds applied
  // (roles recomputed from the stored counts); null before any, and null while the open model is
  // not the one the report was measured on — then it is `foreign_report`, shown apart and never
  // applied to the open model's heads (opening its model again brings it back).
  std::shared_ptr<const analysis::HeadReport> report;
  std::shared_ptr<const analysis::HeadReport> foreign_report;
  std::string foreign_reason;  // why foreign_report is not the open model's ("measured on …")
  // Set while the last input was refused (app/work/workbench_engine.h); the snapshot is then the
  // last accepted input's, and the views say so.
  std::optional<RefusedInput> refused;
  // The background jobs as their views show them: each is the job's own status, copied whole once
  // a frame (app/work/job.h).
  DatasetJobStatus dataset;  // the Dataset view's run: phase, progress, ETA, error
  // The Syntax view's sentence with every head's word-level argmax; null before any and after a failure.
  std::shared_ptr<const SyntaxResult> syntax;
  JobStatus syntax_job;  // running, and why the last sentence could not be shown
  // The Generate view's run: every step made so far (null before any and after a failure).
  std::shared_ptr<const GenerationResult> generation;
  JobStatus generation_job;  // running, and why the last run failed
  // The Patching view's run: exact patching filling in, attribution at once, DLA (null before any
  // and after a failure; a previous model's result is dropped when another model opens).
  std::shared_ptr<const PatchingResult> patching;
  JobStatus patching_job;
  // The Model view's conversion (app/work/convert_job.h): its progress, summary and error.
  ConvertJobStatus convert;
  // The figure being written (app/work/export_job.h), and why the last one failed.
  ExportJobStatus exporting;
  std::string banner;                 // "random weights — no trained model found"
  std::vector<std::string> notices;   // messages for the user (session warnings …), newest last
  std::vector<ErrorMessage> errors;   // what failed, newest last, one per kind
  // The newest error's text ("" when none).
  std::string last_error() const { return errors.empty() ? std::string() : errors.back().text; }
};

}  // namespace headlab::app
