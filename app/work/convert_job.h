// The Model view's conversion: `headlab convert` (core/model/convert.h) as a task of the window's task
// system — a model folder turned into grouped-query / multi-query attention or collaborative
// attention and written as a new folder, with progress (per ALS sweep for collaborative), Stop (it
// writes nothing then) and the reconstruction errors. The model comes from the model store.
// Torch-free header: GUI translation units include it.
#pragma once

#include "app/work/job.h"

#include <memory>
#include <string>

namespace headlab::app {

struct ConvertRequest {
  std::string model_folder;  // the model to convert (native or Hugging Face)
  std::string to;            // "gqa", "mqa" or "collaborative"
  int groups = 0;            // gqa: key/value heads after conversion
  int key_dim = 0;           // collaborative: shared key size D̃k
  int iterations = 200;      // collaborative: ALS sweeps at most
  std::string out;           // the new model folder (must not hold a model)
  std::string device = "cpu";  // collaborative: where the CP-ALS sweeps run (the Model view's device)
};

struct ConvertJobStatus {
  bool running = false;
  std::string phase;      // "loading the model", "fitting layer 2 of 5", "writing", "done", "stopped", "failed"
  double fraction = 0;    // of the layers fitted (collaborative), else 0 or 1
  std::string summary;    // what the conversion did: KV cache, or each layer's relative error
  std::string out;        // the folder written ("" until done)
  std::string error;      // why the last conversion failed ("" after a success)
  double elapsed_seconds = 0;
  unsigned serial = 0;    // increments when a conversion finishes (done, stopped or failed)
};

// Its status() says more than a Job's: the phase, the fraction fitted, the summary and the folder
// written, and a serial of finished conversions.
class ConvertJob : public Job {
 public:
  // Null `tasks` or `models`: a task system and model store of its own (tests); the window passes
  // its own. Destroying the job stops a conversion in flight.
  explicit ConvertJob(std::shared_ptr<TaskManager> tasks = nullptr, std::shared_ptr<core::ModelStore> models = nullptr)
      : Job(std::move(tasks), std::move(models)) {}

  // Starts a conversion; throws std::runtime_error while another runs or when the request is
  // incomplete (the message says what to give). stop() ends it after the current ALS sweep, and
  // nothing is written.
  void start(const ConvertRequest& request);
  ConvertJobStatus status() const;
};

}  // namespace headlab::app
