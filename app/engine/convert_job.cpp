#include "app/engine/convert_job.h"

#include "core/convert.h"
#include "core/memory_budget.h"
#include "core/model.h"
#include "core/system_info.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace headlab::app {
namespace {

struct Stopped {};

std::string describe(const ConvertRequest& r) { return core::conversion_label(r.to, r.groups, r.key_dim); }

}  // namespace

ConvertJob::~ConvertJob() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

void ConvertJob::start(const ConvertRequest& request) {
  if (request.model_folder.empty())
    throw std::runtime_error("conversion needs a model folder (this model has random weights and no folder)");
  if (request.to != "gqa" && request.to != "mqa" && request.to != "collaborative")
    throw std::runtime_error("convert to '" + request.to + "': use gqa, mqa or collaborative");
  if (request.to == "gqa" && request.groups <= 0) throw std::runtime_error("GQA needs a number of key/value groups ≥ 1");
  if (request.to == "collaborative" && request.key_dim <= 0)
    throw std::runtime_error("collaborative attention needs a shared key size D̃k ≥ 1");
  if (request.out.empty()) throw std::runtime_error("give a folder for the converted model");
  if (std::filesystem::exists(std::filesystem::path(request.out) / "config.json"))
    throw std::runtime_error(request.out + " already holds a model; choose another folder");
  std::lock_guard<std::mutex> lock(mutex_);
  if (status_.running) throw std::runtime_error("a conversion is already running");
  if (thread_.joinable()) thread_.join();  // the previous one has finished
  const unsigned serial = status_.serial;
  status_ = ConvertJobStatus{};
  status_.serial = serial;
  status_.running = true;
  status_.phase = "loading the model";
  cancel_ = false;
  thread_ = std::thread(&ConvertJob::run, this, request);
}

void ConvertJob::cancel() { cancel_ = true; }

ConvertJobStatus ConvertJob::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

void ConvertJob::run(ConvertRequest r) {
  core::use_interactive_threads();  // one intra-op thread: the window and the live worker need the other core
  const auto start = std::chrono::steady_clock::now();
  auto update = [&](auto&& change) {
    std::lock_guard<std::mutex> lock(mutex_);
    change(status_);
    status_.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::string summary, error, phase = "done";
  try {
    auto model = core::load_model(r.model_folder);
    if (model->config.kind == core::StackKind::EncoderDecoder)
      throw std::runtime_error("conversion turns the self-attention of encoders or decoders; this is an encoder-decoder");
    std::shared_ptr<core::Model> converted;
    char line[160];
    if (r.to == "collaborative") {
      const auto cp = core::conversion_cp_options(r.iterations);
      auto result = core::convert_to_collaborative(*model, r.key_dim, cp, [&](int layer, int layers, int sweep, double e) {
        if (cancel_) throw Stopped{};
        std::snprintf(line, sizeof line, "fitting layer %d of %d: sweep %d, relative error %.4f", layer + 1, layers,
                      sweep, e);
        update([&](ConvertJobStatus& s) {
          s.phase = line;
          s.fraction = (layer + std::min(1.0, sweep / double(std::max(1, r.iterations)))) / layers;
        });
      });
      summary = "relative error of W_Q^i W_K^i^T per layer:" + core::layer_errors_text(result);
      converted = result.model;
    } else {
      converted = core::convert_to_gqa(*model, r.to == "mqa" ? 1 : r.groups);
      std::snprintf(line, sizeof line, "KV cache a token: %lld → %lld bytes",
                    static_cast<long long>(core::kv_cache_bytes_per_token(model->config)),
                    static_cast<long long>(core::kv_cache_bytes_per_token(converted->config)));
      summary = model->config.decoder ? line : "key/value heads mean-pooled into groups";
    }
    if (cancel_) throw Stopped{};
    update([](ConvertJobStatus& s) { s.phase = "writing"; });
    core::save_converted_model(*converted, *model, r.model_folder, r.out, describe(r));
  } catch (const Stopped&) {
    phase = "stopped";
  } catch (const std::exception& e) {
    phase = "failed";
    error = "converting " + r.model_folder + " to " + describe(r) + ": " + e.what();
  }
  update([&](ConvertJobStatus& s) {
    s.running = false;
    s.phase = phase;
    s.summary = summary;
    s.error = error;
    s.fraction = phase == "done" ? 1.0 : s.fraction;
    if (phase == "done") s.out = r.out;
    ++s.serial;
  });
}

}  // namespace headlab::app
