#include "app/work/export_job.h"

#include "app/tasks/task_track.h"

#include <stdexcept>

namespace headlab::app {
namespace {

struct Written {
  std::string path;
};

// The task's name: the status bar's line, and where status() reads the path back.
const std::string kWriting = "writing ";

}  // namespace

void ExportJob::start(const std::string& path, std::function<void()> write) {
  if (track().busy()) throw std::runtime_error("export " + path + ": " + status().path + " is still being written");
  TaskOptions o;
  o.name = kWriting + path;
  o.lane = "export";
  o.kind = "export";
  launch<Written>(o, [path, write = std::move(write)](Task& task) {
    task.phase(kWriting + path);
    write();
    return std::make_shared<const Written>(Written{path});
  });
}

ExportJobStatus ExportJob::status() const {
  ExportJobStatus s;
  const auto& task = newest();
  if (!task) return s;
  const Task::Status t = task->status();  // read once: the fields below describe the same moment
  s.running = t.active();
  s.path = task->options().name.substr(kWriting.size());
  s.serial = finished_count(s.running);
  if (t.state == TaskState::Failed) s.error = t.error;
  if (t.state == TaskState::Stopped) s.error = "export " + s.path + ": stopped before it was written";
  return s;
}

}  // namespace headlab::app
