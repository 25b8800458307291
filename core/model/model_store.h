// One copy of each model's weights in memory, shared read-only by whoever runs it: the window's
// live engine and every background task ask the store, and a folder already loaded (with the same
// weights on disk) is handed out again rather than read a second time. A model nobody holds any
// more is freed. Per-run controls (gates, mixing) travel with each core::RunRequest and are never
// written into a shared model. Torch-free header.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace headlab::core {

struct Model;

class ModelStore {
 public:
  // The model in `folder`, loaded on first use (core::load_model; errors name the folder). Two
  // callers asking at once get one load: the second waits for the first.
  // On a card (set_device) each folder is kept once per device.
  std::shared_ptr<Model> get(const std::string& folder);
  // The same on a device named here ("cpu", "cuda:N"), whatever the store's device: for a task that
  // must run where it says (conversion works on the CPU).
  std::shared_ptr<Model> get(const std::string& folder, const std::string& device);
  // The device the models handed out from now on run on: "cpu" (the default), "cuda" or "cuda:N"
  // (core/model/device.h), kept by its full name ("cuda" is "cuda:0"). Models handed out before stay
  // where they are; get() throws std::invalid_argument for a device this process cannot use.
  void set_device(const std::string& device);
  std::string device() const;
  // Folders read so far (a second get of a loaded folder does not count): for tests and the bench.
  int64_t loads() const;
  // How many models are alive in the store now.
  int64_t resident() const;

 private:
  struct Entry {
    std::mutex loading;        // held while the folder is read
    std::weak_ptr<Model> model;
    std::string identity;      // the weights' identity when loaded (core/file_hash.h)
  };
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;  // by canonical folder and device
  std::string device_ = "cpu";
  int64_t loads_ = 0;
};

}  // namespace headlab::core
