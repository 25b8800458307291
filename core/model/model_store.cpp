#include "core/model/model_store.h"

#include "core/file_hash.h"
#include "core/model/device.h"
#include "core/model/model.h"

#include <filesystem>
#include <vector>

namespace fs = std::filesystem;

namespace headlab::core {

std::shared_ptr<Model> ModelStore::get(const std::string& folder) { return get(folder, device()); }

std::shared_ptr<Model> ModelStore::get(const std::string& folder, const std::string& device_text) {
  const torch::Device device = parse_device(device_text);  // before anything: a refusal costs nothing
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(fs::absolute(folder, ec), ec);
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = entries_[(ec ? folder : canonical.string()) + "\n" + device_name(device)];
    if (!slot) slot = std::make_shared<Entry>();
    entry = slot;
  }
  std::lock_guard<std::mutex> loading(entry->loading);
  // The same weights as when it was loaded: hand it out again. Weights rewritten since (a model
  // trained or converted into the same folder) are read afresh.
  std::string identity;
  try {
    identity = weights_identity(folder);
  } catch (const std::exception&) {
    identity.clear();  // load_model below names what is wrong with the folder
  }
  if (auto model = entry->model.lock(); model && entry->identity == identity && !identity.empty()) return model;
  auto model = load_model(folder);
  move_to_device(*model, device);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++loads_;
  }
  entry->model = model;
  entry->identity = identity;
  return model;
}

void ModelStore::set_device(const std::string& device) {
  std::string name = device.empty() ? "cpu" : device;
  try {
    name = device_name(parse_device(name));
  } catch (const std::invalid_argument&) {
    // kept as given: get() names what is wrong with it
  }
  std::lock_guard<std::mutex> lock(mutex_);
  device_ = name;
}

std::string ModelStore::device() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return device_;
}

int64_t ModelStore::loads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return loads_;
}

int64_t ModelStore::resident() const {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, entry] : entries_) entries.push_back(entry);
  }
  // Each entry under its own lock, taken after the store's (as get() takes them: no inversion).
  int64_t n = 0;
  for (const auto& entry : entries) {
    std::lock_guard<std::mutex> loading(entry->loading);
    if (!entry->model.expired()) ++n;
  }
  return n;
}

}  // namespace headlab::core
