#include "app/work/worker.h"

#include "app/tasks/task_manager.h"
#include "app/work/job.h"
#include "core/cancelled.h"
#include "core/error_context.h"
#include "core/model/model_store.h"

#include <algorithm>

namespace headlab::app {
namespace {

// A run's end: the snapshot, or the input the model refused (a refusal is an answer, not a failure
// of the task).
struct RunOutcome {
  std::shared_ptr<const RunSnapshot> snapshot;
  std::optional<RefusedInput> refused;
  std::string error;  // "running the model: …" when the run failed (the views keep the last input)
};

}  // namespace

WorkbenchWorker::WorkbenchWorker(std::shared_ptr<TaskManager> tasks, std::shared_ptr<core::ModelStore> models)
    : tasks_(tasks_or_own(std::move(tasks))),
      models_(models_or_own(std::move(models))),
      engine_(std::make_shared<WorkbenchEngine>()) {}

WorkbenchWorker::~WorkbenchWorker() {
  for (const auto& t : open_) t->stop();
}

void WorkbenchWorker::request_load(const ModelSource& source) {
  TaskOptions o;
  o.name = "loading " + (source.folder.empty() ? std::string("a random-weight model") : source.folder);
  o.lane = "model";
  o.kind = "load";
  o.replaces = {"load", "run"};
  o.threads = threads_;
  open_.push_back(tasks_->start_typed<ModelSummary>(o, [source, engine = engine_, models = models_](Task& task) {
    try {
      // A Stop before the engine switches leaves the model open before in place; once it has
      // switched, the load publishes its summary and counts as done (refresh()), so the window
      // never names one model while the engine runs another.
      if (source.folder.empty()) {
        task.check();
        return std::make_shared<const ModelSummary>(engine->load_random(source.random_config, source.seed));
      }
      auto model = models->get(source.folder, source.device);
      task.check();
      // The store's device for every task from here on, once the model opened there.
      models->set_device(source.device);
      return std::make_shared<const ModelSummary>(engine->use(std::move(model), source.folder));
    } catch (const core::Cancelled&) {
      throw;  // stopped, not failed
    } catch (const std::exception& e) {
      throw std::runtime_error(
          core::in_context("opening " + (source.folder.empty() ? source.random_config : source.folder), e.what()));
    }
  }));
}

void WorkbenchWorker::request_run(const RunInput& input) {
  TaskOptions o;
  o.name = "running the model";
  o.lane = "model";
  o.kind = "run";
  o.replaces = {"run"};  // a load in flight goes on: the run waits for its model
  o.threads = threads_;
  open_.push_back(tasks_->start_typed<RunOutcome>(o, [input, engine = engine_](Task& task) {
    auto out = std::make_shared<RunOutcome>();
    if (!engine->loaded()) return std::shared_ptr<const RunOutcome>(out);
    try {
      out->snapshot = engine->run(input, task.stop_flag(), [&task](int done, int total) {
        task.progress(done, total);
        return !task.interrupted();
      });
    } catch (const InputRefused& e) {
      out->refused = RefusedInput{input.text, e.what(), e.tokens, e.limit};
    } catch (const core::Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      out->error = std::string("running the model: ") + e.what();
      out->refused = RefusedInput{input.text, e.what(), 0, 0};
    }
    return std::shared_ptr<const RunOutcome>(out);
  }));
}

void WorkbenchWorker::stop() {
  for (const auto& t : open_) t->stop();
}

void WorkbenchWorker::refresh() const {
  while (!open_.empty()) {
    const auto& task = open_.front();
    const Task::Status s = task->status();
    if (s.active()) break;  // in order: wait for it
    const bool load = task->options().kind == "load";
    // A load that switched the engine published its summary: done, even when a Stop came after.
    const bool switched = load && task->result<ModelSummary>() != nullptr;
    if (s.state == TaskState::Stopped && !switched) {
      // Superseded (a later load is queued: it finishes the opening) or stopped on purpose. A load
      // stopped on purpose ends the opening: the model open before stays, and the window hears so.
      const bool superseded =
          std::any_of(open_.begin() + 1, open_.end(), [](const auto& t) { return t->options().kind == "load"; });
      if (load && !superseded) {
        ++loads_done_;
        load_error_ = "stopped " + task->options().name + " before it finished";
      }
    } else if (load) {
      ++loads_done_;
      load_error_ = s.state == TaskState::Failed ? s.error : std::string();
      if (s.state == TaskState::Done || switched) {
        model_ = task->result<ModelSummary>();
        snapshot_.reset();
        refused_.reset();
        run_error_.clear();
        ++model_serial_;
      }
    } else {
      const auto outcome = task->result<RunOutcome>();
      if (s.state == TaskState::Failed || (outcome && (outcome->snapshot || outcome->refused))) {
        ++runs_done_;
        refused_.reset();
        run_error_.clear();
        if (s.state == TaskState::Failed) {
          run_error_ = "running the model: " + s.error;
        } else if (outcome->refused) {
          run_error_ = outcome->error.empty() ? outcome->refused->reason : outcome->error;
          refused_ = outcome->refused;
        } else {
          snapshot_ = outcome->snapshot;
        }
      }
    }
    open_.pop_front();
  }
}

std::shared_ptr<const ModelSummary> WorkbenchWorker::model() const {
  refresh();
  return model_;
}

std::shared_ptr<const RunSnapshot> WorkbenchWorker::snapshot() const {
  refresh();
  return snapshot_;
}

uint64_t WorkbenchWorker::model_serial() const {
  refresh();
  return model_serial_;
}

TaskStatus WorkbenchWorker::status() const {
  refresh();
  TaskStatus st;
  st.busy = !open_.empty();
  for (const auto& t : open_) {
    const Task::Status s = t->status();
    if (s.state == TaskState::Running) {
      st.task = s.name;
      st.progress = static_cast<float>(s.fraction);
      break;
    }
    if (st.task.empty()) st.task = "queued";
  }
  st.loads_done = loads_done_;
  st.runs_done = runs_done_;
  st.load_error = load_error_;
  st.run_error = run_error_;
  st.refused = refused_;
  return st;
}

bool WorkbenchWorker::idle() const {
  refresh();
  return open_.empty();
}

}  // namespace headlab::app
