// The window's figure exports as tasks of the window's task system: a figure of every head of an
// 8B model (1,024 maps) takes seconds to write, and the window keeps drawing meanwhile. The write
// function holds what it draws (the snapshot's buffers, shared); exports run one at a time in a lane
// of their own, and a second one asked for while one is written is refused with a message.
// Torch-free header: GUI translation units include it.
#pragma once

#include "app/work/job.h"

#include <functional>
#include <memory>
#include <string>

namespace headlab::app {

struct ExportJobStatus {
  bool running = false;
  std::string path;     // the file being written, or the last one
  std::string error;    // why the last export failed ("" after a success)
  unsigned serial = 0;  // increments when an export finishes (written or failed)
};

class ExportJob : public Job {
 public:
  explicit ExportJob(std::shared_ptr<TaskManager> tasks = nullptr, std::shared_ptr<core::ModelStore> models = nullptr)
      : Job(std::move(tasks), std::move(models)) {}

  // Queues `write`, which writes `path` (and throws, naming it, when it cannot); throws
  // std::runtime_error while another export is being written.
  void start(const std::string& path, std::function<void()> write);
  ExportJobStatus status() const;
};

}  // namespace headlab::app
