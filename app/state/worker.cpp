#include "app/state/worker.h"

#include "core/error_context.h"
#include "core/cancelled.h"
#include "core/system_info.h"

namespace headlab::app {

WorkbenchWorker::WorkbenchWorker() : thread_([this] { loop(); }) {}

WorkbenchWorker::~WorkbenchWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
    pending_load_.reset();
    pending_run_.reset();
    cancel_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void WorkbenchWorker::request_load(const ModelSource& source) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_load_ = source;
    pending_run_.reset();
    if (running_) cancel_ = true;
  }
  wake_.notify_all();
}

void WorkbenchWorker::request_run(const RunInput& input) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_run_ = input;
    // A load in flight is not cancelled: the run waits for its model.
    if (running_ && task_ == "running the model") cancel_ = true;
  }
  wake_.notify_all();
}

void WorkbenchWorker::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_run_.reset();
  if (running_) cancel_ = true;
}

std::shared_ptr<const ModelSummary> WorkbenchWorker::model() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return model_;
}

std::shared_ptr<const RunSnapshot> WorkbenchWorker::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return snapshot_;
}

uint64_t WorkbenchWorker::model_serial() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return model_serial_;
}

TaskStatus WorkbenchWorker::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  TaskStatus s;
  s.busy = running_ || pending_load_ || pending_run_;
  s.task = running_ ? task_ : (s.busy ? "queued" : "");
  s.progress = progress_.load();
  s.loads_done = loads_done_;
  s.runs_done = runs_done_;
  s.load_error = load_error_;
  s.run_error = run_error_;
  s.refused = refused_;
  return s;
}

bool WorkbenchWorker::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !running_ && !pending_load_ && !pending_run_;
}

void WorkbenchWorker::loop() {
  int threads = threads_.load();
  core::use_interactive_threads(threads);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return quit_ || pending_load_ || pending_run_; });
    if (quit_) return;
    std::optional<ModelSource> load;
    std::optional<RunInput> run;
    if (pending_load_) {
      load.swap(pending_load_);
      task_ = "loading " + (load->folder.empty() ? "a random-weight model" : load->folder);
    } else {
      run.swap(pending_run_);
      task_ = "running the model";
    }
    if (threads_.load() != threads) {
      threads = threads_.load();
      core::use_interactive_threads(threads);  // per thread: set here, on the worker
    }
    running_ = true;
    cancel_ = false;
    progress_ = 0;
    lock.unlock();

    std::string error;
    bool cancelled = false;
    std::optional<RefusedInput> refused;
    std::shared_ptr<const ModelSummary> summary;
    std::shared_ptr<const RunSnapshot> snapshot;
    try {
      if (load) {
        summary = std::make_shared<const ModelSummary>(
            load->folder.empty() ? engine_.load_random(load->random_config, load->seed) : engine_.load(load->folder));
      } else if (engine_.loaded()) {
        snapshot = engine_.run(*run, &cancel_, [this](int done, int total) {
          progress_ = total > 0 ? static_cast<float>(done) / static_cast<float>(total) : 1.0f;
          return !cancel_.load();
        });
      }
    } catch (const core::Cancelled&) {
      cancelled = true;  // superseded or stopped on purpose: not an error, and nothing finished
    } catch (const InputRefused& e) {
      error = e.what();
      refused = RefusedInput{run->text, e.what(), e.tokens, e.limit};
    } catch (const std::exception& e) {
      if (load) {
        error = core::in_context("opening " + (load->folder.empty() ? load->random_config : load->folder), e.what());
      } else {
        error = std::string("running the model: ") + e.what();
        refused = RefusedInput{run->text, e.what(), 0, 0};
      }
    }

    lock.lock();
    running_ = false;
    progress_ = 1;
    if (load && !cancelled) {
      ++loads_done_;
      load_error_ = error;
      if (summary) {
        model_ = summary;
        snapshot_.reset();
        refused_.reset();
        run_error_.clear();
        ++model_serial_;
      }
    } else if (run && !cancelled && (snapshot || !error.empty())) {
      ++runs_done_;
      run_error_ = error;
      refused_ = refused;
      if (snapshot) snapshot_ = snapshot;
    }
  }
}

}  // namespace headlab::app
