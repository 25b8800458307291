#include "core/train/checkpoint.h"

#include "core/atomic_file.h"

#include <torch/serialize.h>
#include <torch/torch.h>

#include <stdexcept>

namespace headlab::core::train {

void save_checkpoint(const std::string& path, Transformer& model, torch::optim::Optimizer& optimizer,
                     const nlohmann::json& meta) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive weights, optim;
  {
    torch::NoGradGuard no_grad;
    for (const auto& item : model->named_parameters()) weights.write(item.key(), item.value().detach());
  }
  optimizer.save(optim);
  archive.write("model", weights);
  archive.write("optimizer", optim);
  archive.write("meta", c10::IValue(meta.dump()));
  AtomicFile file(path);
  try {
    archive.save_to(file.stream());
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": writing the checkpoint failed: " + e.what());
  }
  file.commit();
}

namespace {

nlohmann::json read_meta(torch::serialize::InputArchive& archive, const std::string& path) {
  c10::IValue value;
  if (!archive.try_read("meta", value) || !value.isString())
    throw std::runtime_error(path + ": not a HeadLab checkpoint (no 'meta' record)");
  try {
    return nlohmann::json::parse(value.toStringRef());
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": the checkpoint's record is not valid JSON (" + e.what() + ")");
  }
}

}  // namespace

nlohmann::json read_checkpoint_meta(const std::string& path) {
  torch::serialize::InputArchive archive;
  try {
    // Onto the CPU: the record is read before the run knows the checkpoint fits its device (a
    // card's checkpoint on a machine without one is refused by its fingerprint, not by torch).
    archive.load_from(path, torch::kCPU);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": cannot read checkpoint: " + e.what());
  }
  return read_meta(archive, path);
}

nlohmann::json load_checkpoint(const std::string& path, Transformer& model, torch::optim::Optimizer& optimizer) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": cannot read checkpoint: " + e.what());
  }
  auto meta = read_meta(archive, path);
  torch::serialize::InputArchive weights, optim;
  if (!archive.try_read("model", weights) || !archive.try_read("optimizer", optim))
    throw std::runtime_error(path + ": checkpoint lacks model or optimizer state");
  {
    torch::NoGradGuard no_grad;
    for (auto& item : model->named_parameters()) {
      torch::Tensor t;
      if (!weights.try_read(item.key(), t))
        throw std::runtime_error(path + ": tensor '" + item.key() + "' is missing (a different config?)");
      if (!t.sizes().equals(item.value().sizes()))
        throw std::runtime_error(path + ": tensor '" + item.key() + "' has another shape (a different config?)");
      item.value().copy_(t);
    }
  }
  try {
    optimizer.load(optim);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": optimizer state does not fit: " + e.what());
  }
  return meta;
}

}  // namespace headlab::core::train
