#include "app/work/dataset_job.h"

#include "analysis/analyze.h"
#include "app/tasks/task_track.h"
#include "core/cancelled.h"
#include "core/model/model.h"
#include "core/model/model_store.h"
#include "core/tokenizer_files.h"

#include <stdexcept>

namespace headlab::app {
namespace {

// The analysis as a task: the report, or null when stopped before the first sentence (nothing to
// show; the previous report stays).
std::shared_ptr<const analysis::HeadReport> analyse(Task& task, const DatasetRequest& request, core::ModelStore& models) {
  std::string doing = "loading the model " + request.model_folder;
  try {
    task.phase("loading the model");
    if (request.model_folder.empty())
      throw std::runtime_error("the dataset runs need a model folder with a tokenizer (a random-weight model has none)");
    if (request.files.empty()) throw std::runtime_error("no data: give plain-text or CoNLL-U files");
    const auto model = models.get(request.model_folder);
    if (!model->tokenizer)
      throw std::runtime_error(core::no_tokenizer(request.model_folder) +
                               ": the dataset runs need a model folder with a tokenizer");
    task.check();
    doing = "measuring the dataset";
    task.phase("reading the dataset");
    analysis::AnalyzeOptions o;
    o.data = request.files;
    o.freq_files = request.freq_files;
    o.settings.metrics = request.metrics;
    o.settings.limit = request.limit;
    o.examples = 0;  // the window draws its own maps
    o.cancel = task.stop_flag();
    o.progress = [&task](int64_t done, int64_t total) {
      task.phase("measuring heads");
      task.progress(done, total);
      return !task.interrupted();
    };
    auto result = analysis::analyze(*model, o);
    if (result.report.partial && result.report.sentences == 0 && result.report.skipped == 0) return nullptr;
    return std::make_shared<const analysis::HeadReport>(std::move(result.report));
  } catch (const core::Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error(doing + ": " + e.what());
  }
}

}  // namespace

void DatasetJob::start(const DatasetRequest& request) {
  TaskOptions o;
  o.name = "analysing the dataset";
  o.lane = "dataset";
  o.kind = "analyse";
  o.replaces = {"analyse"};
  // The work holds the store, not this job: it may outlive the job by the sentence under way.
  launch<analysis::HeadReport>(o, [request, models = models_](Task& task) { return analyse(task, request, *models); });
}

void DatasetJob::take_result() const {
  const auto& task = newest();
  if (!task || discarded(*task)) return;
  auto report = task->result<analysis::HeadReport>();
  if (report && report.get() != taken_) {
    taken_ = report.get();
    result_ = std::move(report);
    ++result_serial_;
  }
}

DatasetJobStatus DatasetJob::status() const {
  DatasetJobStatus s;
  const auto& task = newest();
  if (!task) return s;
  take_result();
  const Task::Status t = task->status();
  // A run discarded (a session opened) is not this window's run: once it has ended, nothing to say.
  if (discarded(*task) && !t.active()) return s;
  s.done = t.done;
  s.total = t.total;
  s.elapsed_seconds = t.elapsed_s;
  s.eta_seconds = t.eta_s;
  switch (t.state) {
    case TaskState::Queued:
      s.running = true;
      s.phase = track().older_busy() ? "waiting for the previous run to stop" : "starting";
      break;
    case TaskState::Running:
      s.running = true;
      s.phase = t.phase;
      break;
    case TaskState::Done:
    case TaskState::Stopped: {
      const auto report = task->result<analysis::HeadReport>();
      s.partial = report && report->partial;
      s.phase = t.state == TaskState::Done && !s.partial ? "done" : "stopped";
      s.eta_seconds = -1;
      break;
    }
    case TaskState::Failed:
      s.phase = "failed";
      s.error = t.error;
      s.eta_seconds = -1;
      break;
  }
  return s;
}

std::shared_ptr<const analysis::HeadReport> DatasetJob::result() const {
  take_result();
  return result_;
}

uint64_t DatasetJob::result_serial() const {
  take_result();
  return result_serial_;
}

std::shared_ptr<const analysis::HeadReport> DatasetJob::open_report(const std::string& path) {
  try {
    return std::make_shared<const analysis::HeadReport>(analysis::read_head_report(path));
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw std::runtime_error(what.find(path) != std::string::npos ? "opening a head report: " + what
                                                                  : "opening a head report " + path + ": " + what);
  }
}

}  // namespace headlab::app
