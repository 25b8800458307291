#include "app/engine/dataset_job.h"

#include "analysis/analyze.h"
#include "core/model.h"
#include "core/system_info.h"

#include <stdexcept>

namespace headlab::app {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

DatasetJob::DatasetJob() : thread_([this] { loop(); }) {}

DatasetJob::~DatasetJob() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
    pending_.reset();
    superseded_ = true;  // nobody reads the result any more
    cancel_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void DatasetJob::start(const DatasetRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_ = request;
    if (busy_) {
      superseded_ = true;
      cancel_ = true;
    }
    status_ = DatasetJobStatus{};
    status_.running = true;
    status_.phase = busy_ ? "waiting for the previous run to stop" : "loading the model";
    started_ = std::chrono::steady_clock::now();
  }
  wake_.notify_all();
}

void DatasetJob::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_) {  // queued behind a superseded run: it never starts
    pending_.reset();
    status_.running = false;
    status_.phase = "stopped";
    status_.elapsed_seconds = seconds_since(started_);
  }
  if (busy_ && !superseded_) cancel_ = true;  // the run publishes what is complete
}

DatasetJobStatus DatasetJob::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  DatasetJobStatus s = status_;
  if (s.running) s.elapsed_seconds = seconds_since(started_);
  return s;
}

std::shared_ptr<const analysis::HeadReport> DatasetJob::result() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return result_;
}

uint64_t DatasetJob::result_serial() const {
  std::lock_guard<std::mutex> lock(mutex_);
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

void DatasetJob::loop() {
  core::use_interactive_threads();  // one intra-op thread: the window and the live worker need the other core
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return quit_ || pending_; });
    if (quit_) return;
    const DatasetRequest request = std::move(*pending_);
    pending_.reset();
    busy_ = true;
    superseded_ = false;
    cancel_ = false;
    status_.phase = "loading the model";
    lock.unlock();
    run(request);
    lock.lock();
    busy_ = false;
  }
}

void DatasetJob::run(const DatasetRequest& request) {
  // Status updates of a superseded run would describe the next one: they are dropped.
  auto update = [this](auto&& change) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!superseded_) change(status_);
  };
  std::string error;
  std::shared_ptr<const analysis::HeadReport> report;
  std::string doing = "loading the model " + request.model_folder;
  try {
    if (request.model_folder.empty())
      throw std::runtime_error("the dataset runs need a model folder with a tokenizer (a random-weight model has none)");
    if (request.files.empty()) throw std::runtime_error("no data: give plain-text or CoNLL-U files");
    auto model = core::load_model(request.model_folder);
    if (!model->tokenizer)
      throw std::runtime_error(request.model_folder +
                               " has no tokenizer: the dataset runs need a model folder with a tokenizer");
    doing = "measuring the dataset";
    update([](DatasetJobStatus& s) { s.phase = "reading the dataset"; });
    analysis::AnalyzeOptions o;
    o.data = request.files;
    o.freq_files = request.freq_files;
    o.settings.metrics = request.metrics;
    o.settings.limit = request.limit;
    o.examples = 0;  // the window draws its own maps
    o.cancel = &cancel_;
    // The rate counts from the first sentence measured: the reading pass before it is not measuring.
    std::chrono::steady_clock::time_point first_time;
    int64_t first_done = -1;
    o.progress = [&](int64_t done, int64_t total) {
      if (first_done < 0) {
        first_done = done;
        first_time = std::chrono::steady_clock::now();
      }
      const double seconds = seconds_since(first_time);
      update([&](DatasetJobStatus& s) {
        s.phase = "measuring heads";
        s.done = done;
        s.total = total;
        s.eta_seconds = done > first_done ? seconds / double(done - first_done) * double(total - done) : -1.0;
      });
      return !cancel_.load();
    };
    auto result = analysis::analyze(*model, o);
    report = std::make_shared<const analysis::HeadReport>(std::move(result.report));
  } catch (const std::exception& e) {
    error = doing + ": " + e.what();
  } catch (...) {  // nothing may leave the thread
    error = doing + ": an unknown error";
  }

  std::lock_guard<std::mutex> lock(mutex_);
  if (superseded_) return;
  status_.running = false;
  status_.elapsed_seconds = seconds_since(started_);
  status_.eta_seconds = -1;
  if (!error.empty()) {
    status_.phase = "failed";
    status_.error = error;
    return;
  }
  // Stopped before the first sentence: nothing to show, and the previous report stays.
  if (!report || (report->partial && report->sentences == 0 && report->skipped == 0)) {
    status_.phase = "stopped";
    return;
  }
  status_.phase = report->partial ? "stopped" : "done";
  status_.partial = report->partial;
  result_ = report;
  ++result_serial_;
}

}  // namespace headlab::app
