// The Controller owns the document and the work behind it (the model worker, the dataset job) and
// is the one place that changes the document: views, the script runner and the session loader all
// call execute()/apply() with a named command (app/document/commands.h). No ImGui, no torch: tests
// drive it headless.
#pragma once

#include "app/document/commands.h"
#include "app/document/document.h"
#include "app/tasks/task_manager.h"
#include "app/work/job.h"
#include "app/work/worker.h"
#include "core/model/model_store.h"
#include "core/precision.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace headlab::app {

class DatasetJob;

// The Syntax view's CoNLL-U file: the one chosen, else the dataset's first CoNLL-U file ("" = none).
std::string syntax_file_of(const AnalysisChoices& analysis);

class Controller {
 public:
  Controller();
  virtual ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  const Document& doc() const { return doc_; }

  // Applies a document command; throws std::runtime_error with the reason when it cannot (a bad
  // argument, a missing file). Window commands are refused here (the window applies them).
  void execute(const Command& command);
  // The same for views: a failure becomes the status bar's error instead of an exception.
  void apply(const Command& command);

  // Start-up: a session file, else a model folder, else the newest assets/models folder, else a
  // random-weight model with a banner.
  void start(const std::string& model_folder, const std::string& session_path);
  // Picks up the workers' results (UI thread, once per frame before the views). Returns true when
  // the document changed.
  bool poll();
  // Nothing running or queued (model runs, dataset runs, the Syntax view's sentence) and a result is there.
  bool idle() const;

  // Messages for the user.
  void notice(const std::string& text) { doc_.notices.push_back(text); }
  void clear_notices() { doc_.notices.clear(); }
  // What failed, by kind (Document::errors): a new error replaces the one of its kind; the next
  // success of that kind clears it.
  void set_error(const std::string& kind, const std::string& text);
  void clear_error(const std::string& kind);
  void dismiss_newest_error();  // the status bar's close button, a script's expect_error

  // Every background task (the live model's loads and runs, the dataset run, the Syntax view's
  // sentence, a generation, a conversion), for the status bar.
  const TaskManager& tasks() const { return *tasks_; }
  // The one copy of each model's weights that every task shares.
  const core::ModelStore& models() const { return *models_; }
  TaskStatus task_status() const { return worker_.status(); }
  bool worker_idle() const { return worker_.idle(); }
  // Intra-op threads for live re-runs (see live_threads_for_renderer).
  void set_live_threads(int threads) { worker_.set_threads(threads); }
  void stop_run() { worker_.stop(); }
  // Writes a figure as a task (app/work/export_job.h): "wrote PATH" as a notice when done, an
  // "export" error when it fails; throws while another figure is being written.
  void start_export(const std::string& path, std::function<void()> write);

  // When the newest run was requested, if it has not been shown yet (for latency statistics).
  std::optional<std::chrono::steady_clock::time_point> take_unshown_request();
  void autosave_if_due();
  const std::string& assets_dir() const { return assets_dir_; }

 protected:
  // The window keeps its layout and views' state in the session: it hands them over before a save.
  virtual WindowState window_for_save() const { return {}; }
  // A loaded session brings them back to the window.
  virtual void restore_window(const WindowState& /*window*/) {}

 private:
  void dispatch(const Command& command);  // execute() without its bookkeeping: the handler below
  // One handler per document command (app/document/commands.h).
  void on(const cmd::OpenModel& c);
  void on(const cmd::SetText& c);
  void on(const cmd::Run& c);
  void on(const cmd::TrimInput& c);
  void on(const cmd::SetOutputPosition& c);
  void on(const cmd::SelectHead& c);
  void on(const cmd::SelectAttention& c);
  void on(const cmd::SelectToken& c);
  void on(const cmd::SetGate& c);
  void on(const cmd::SetAblation& c);
  void on(const cmd::SetMix& c);
  void on(const cmd::Reset& c);
  void on(const cmd::SetView& c);
  void on(const cmd::RunDataset& c);
  void on(const cmd::SetDatasetChoices& c);
  void on(const cmd::StopDataset& c);
  void on(const cmd::Generate& c);
  void on(const cmd::ConvertModel& c);
  void on(const cmd::StopConvert& c);
  void on(const cmd::StopGeneration& c);
  void on(const cmd::SelectSentence& c);
  void on(const cmd::SetParse& c);
  void on(const cmd::OpenReport& c);
  void on(const cmd::CloseReport& c);
  void on(const cmd::SortHeads& c);
  void on(const cmd::FilterHeads& c);
  void on(const cmd::SetThresholds& c);
  void on(const cmd::SetLrpTarget& c);
  void on(const cmd::SetPatching& c);
  void on(const cmd::RunPatching& c);
  void on(const cmd::StopPatching& c);
  void on(const cmd::TakeFromCounterfactual& c);
  void on(const cmd::SetDevice& c);
  void on(const cmd::SetPrecision& c);
  // The loaded session's precision made the process's: an unknown one, or one a running task would
  // not finish at, keeps the window's (with a notice), as does a session saved before the choice.
  void apply_session_precision();
  // Makes `precision` the process's and the session's, and refreshes what was computed at another one.
  void set_precision(core::Precision precision);
  std::string task_blocking_precision() const;
  void on(const cmd::SaveSession& c);
  void on(const cmd::OpenSession& c);
  // The window's commands (export, screenshot, …) reach the Controller only by mistake.
  template <class WindowCommand>
  void on(const WindowCommand&) {
    throw std::runtime_error("a window command, applied by the window");
  }
  void select(const std::optional<core::Stack>& stack, const std::optional<Stage>& stage);  // SelectHead, SelectAttention
  core::Stack current_stack(const std::optional<core::Stack>& stack) const;  // none: the selected one
  void open_model(const std::string& folder);
  // `why` is the banner's reason (e.g. the folder that failed to open).
  void open_random_model(const std::string& why = "no trained model found");
  void request_run();
  // True when the snapshot holds the selected layer as thumbnails and no run has asked for it
  // whole since (RunInput::open_layer).
  bool selected_layer_missing() const;
  void save_session(const std::string& path);
  void open_session(const std::string& path);
  void apply_loaded_session(SessionLoad loaded, const std::string& path);
  void open_report(const std::string& path);
  void set_report(std::shared_ptr<const analysis::HeadReport> report);
  // Re-applies thresholds to the raw report, and shows it as the open model's report or keeps it
  // apart as another model's (app/document/report_match.h).
  void refresh_report();
  void close_report();
  // The frame's poll, a part each (controller.cpp, controller_jobs.cpp).
  void poll_model(bool& changed);
  void poll_snapshot(bool& changed);
  void poll_outcomes(bool& changed);
  void run_dataset(const cmd::RunDataset& c);
  void poll_dataset(bool& changed);
  void restore_report_of_session();
  // A report made in the window goes into the session: embedded, or beside the session state when large.
  void keep_report_for_sessions(const analysis::HeadReport& report);
  // The Syntax view's sentence: what the session asks for (none without a model folder or a
  // CoNLL-U file), started when it differs from the last request, and its result picked up.
  std::optional<SyntaxRequest> syntax_request() const;
  void sync_syntax();
  void poll_syntax(bool& changed);
  const AttentionSummary& attention_of(core::Stack stack) const;

  Document doc_;
  // Declared before everything that starts tasks: destroyed last, after they have stopped them.
  std::shared_ptr<TaskManager> tasks_;
  std::shared_ptr<core::ModelStore> models_;
  WorkbenchWorker worker_;
  std::unique_ptr<DatasetJob> dataset_;
  uint64_t dataset_serial_ = 0;
  // The session's generation settings with its controls on the model in `folder` (a session's, while
  // it is still opening); `keep`: the first tokens, as written before.
  void start_generation(const std::string& folder, const std::vector<int64_t>& keep = {});
  void poll_generation(bool& changed);
  std::unique_ptr<GenerationJob> generation_;  // app/work/generation_job.h (via document.h)
  uint64_t generation_serial_ = 0;
  // Starts a sweep and records in the session what it measures with (PatchingChoices::measured_*).
  void start_patching(PatchingRequest request);
  void poll_patching(bool& changed);
  std::unique_ptr<PatchingJob> patching_;  // app/work/patching_job.h (via document.h)
  uint64_t patching_serial_ = 0;
  void convert_model(const cmd::ConvertModel& c);
  void poll_convert(bool& changed);
  std::unique_ptr<ConvertJob> convert_;  // app/work/convert_job.h (via document.h)
  void poll_export(bool& changed);
  std::unique_ptr<ExportJob> export_;  // app/work/export_job.h (via document.h)
  bool open_converted_ = false;          // open the converted model when it is written
  std::unique_ptr<SyntaxJob> syntax_;  // declared in app/work/syntax_job.h (via document.h)
  std::unique_ptr<SyntaxRequest> syntax_requested_;  // the last request started; null = none
  uint64_t syntax_serial_ = 0;
  std::string ran_text_;  // the input text of the last run requested (the Syntax view's typed input)
  std::shared_ptr<const analysis::HeadReport> raw_report_;  // as measured or read, thresholds untouched
  std::string assets_dir_;
  std::chrono::steady_clock::time_point last_autosave_, requested_at_;
  bool unshown_request_ = false;
  std::pair<core::Stack, int> requested_open_{core::Stack::Encoder, -1};  // the open layer last asked for
  bool pending_model_run_ = false;
  uint64_t model_serial_ = 0;
  uint64_t loads_done_ = 0, runs_done_ = 0;  // the worker's finished loads and runs seen
  std::string expected_hash_;
  bool loading_session_ = false;
  // A load that failed with nothing open falls back to the shipped default model, then to random
  // weights; the failure's message stays on the status bar through the fallback's load.
  int fallback_loads_ = 0;
  std::string random_reason_ = "no trained model found";
};

}  // namespace headlab::app
