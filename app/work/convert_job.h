// The Model view's conversion: `headlab convert` (core/model/convert.h) as a task of the window's task
// system — a model folder turned into grouped-query / multi-query attention or collaborative
// attention and written as a new folder, with progress (per ALS sweep for collaborative), Stop (it
// writes nothing then) and the reconstruction errors. The model comes from the model store.
// Torch-free header: GUI translation units include it.
#pragma once

#include <memory>
#include <string>

namespace headlab::core {
class ModelStore;
}

namespace headlab::app {

class TaskManager;
class TaskTrack;

struct ConvertRequest {
  std::string model_folder;  // the model to convert (native or Hugging Face)
  std::string to;            // "gqa", "mqa" or "collaborative"
  int groups = 0;            // gqa: key/value heads after conversion
  int key_dim = 0;           // collaborative: shared key size D̃k
  int iterations = 200;      // collaborative: ALS sweeps at most
  std::string out;           // the new model folder (must not hold a model)
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

class ConvertJob {
 public:
  // On its own task system and model store (tests) …
  ConvertJob();
  // … or on the window's, shared with its other work.
  ConvertJob(std::shared_ptr<TaskManager> tasks, std::shared_ptr<core::ModelStore> models);
  ~ConvertJob();  // stops a conversion in flight
  ConvertJob(const ConvertJob&) = delete;
  ConvertJob& operator=(const ConvertJob&) = delete;

  // Starts a conversion; throws std::runtime_error while another runs or when the request is
  // incomplete (the message says what to give).
  void start(const ConvertRequest& request);
  void cancel();  // stops after the current ALS sweep; nothing is written
  ConvertJobStatus status() const;

 private:
  std::shared_ptr<TaskManager> tasks_;
  std::shared_ptr<core::ModelStore> models_;
  std::unique_ptr<TaskTrack> track_;
  mutable const void* counted_ = nullptr;  // the conversion last counted as finished
  mutable unsigned finished_ = 0;
};

}  // namespace headlab::app
