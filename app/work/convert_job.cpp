#include "app/work/convert_job.h"

#include "app/tasks/task_track.h"
#include "core/cancelled.h"
#include "core/model/convert.h"
#include "core/model/device.h"
#include "core/memory_budget.h"
#include "core/model/model.h"
#include "core/model/model_store.h"

#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace headlab::app {
namespace {

std::string describe(const ConvertRequest& r) { return core::conversion_label(r.to, r.groups, r.key_dim); }

// What a finished conversion says: the summary of what it did and the folder it wrote.
struct Converted {
  std::string summary, out;
};

std::shared_ptr<const Converted> convert(Task& task, const ConvertRequest& r, core::ModelStore& models) {
  try {
    task.phase("loading the model");
    // The weights are read on the CPU, whatever the view's device; the CP-ALS sweeps run on that device.
    const auto model = models.get(r.model_folder, "cpu");
    if (model->config.kind == core::StackKind::EncoderDecoder)
      throw std::runtime_error("conversion turns the self-attention of encoders or decoders; this is an encoder-decoder");
    std::shared_ptr<core::Model> converted;
    auto out = std::make_shared<Converted>();
    char line[160];
    if (r.to == "collaborative") {
      auto cp = core::conversion_cp_options(r.iterations);
      cp.device = core::parse_device(r.device);
      auto result = core::convert_to_collaborative(*model, r.key_dim, cp, [&](int layer, int layers, int sweep, double e) {
        task.check();  // within one ALS sweep of a Stop
        std::snprintf(line, sizeof line, "fitting layer %d of %d: sweep %d, relative error %.4f", layer + 1, layers,
                      sweep, e);
        task.phase(line);
        // Progress in thousandths of the layers fitted.
        const double fraction = (layer + std::min(1.0, sweep / double(std::max(1, r.iterations)))) / layers;
        task.progress(static_cast<int64_t>(fraction * 1000), 1000);
      });
      out->summary = "relative error of W_Q^i W_K^i^T per layer:" + core::layer_errors_text(result);
      converted = result.model;
    } else {
      converted = core::convert_to_gqa(*model, r.to == "mqa" ? 1 : r.groups);
      std::snprintf(line, sizeof line, "KV cache a token: %lld → %lld bytes",
                    static_cast<long long>(core::kv_cache_bytes_per_token(model->config)),
                    static_cast<long long>(core::kv_cache_bytes_per_token(converted->config)));
      out->summary = model->config.decoder ? line : "key/value heads mean-pooled into groups";
    }
    task.check();  // a Stop before writing writes nothing; from here the folder is written whole
    task.phase("writing");
    core::save_converted_model(*converted, *model, r.model_folder, r.out, describe(r));
    out->out = r.out;
    task.progress(1000, 1000);
    return out;
  } catch (const core::Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error("converting " + r.model_folder + " to " + describe(r) + ": " + e.what());
  }
}

}  // namespace

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
  if (track().busy()) throw std::runtime_error("a conversion is already running");
  TaskOptions o;
  o.name = "converting to " + describe(request);
  o.lane = "convert";
  o.kind = "convert";
  launch<Converted>(o, [request, models = models_](Task& task) { return convert(task, request, *models); });
}

ConvertJobStatus ConvertJob::status() const {
  ConvertJobStatus s;
  const auto& task = newest();
  if (!task) return s;
  const Task::Status t = task->status();  // read once: every field below describes the same moment
  s.running = t.active();
  s.elapsed_seconds = t.elapsed_s;
  s.fraction = t.fraction;
  s.serial = finished_count(s.running);
  // A Stop that came while the folder was being written did not stop the writing (nothing checks it
  // there): the conversion published its result and is done, the folder complete.
  const auto converted = task->result<Converted>();
  const TaskState state = t.state == TaskState::Stopped && converted ? TaskState::Done : t.state;
  switch (state) {
    case TaskState::Queued: s.phase = "loading the model"; break;
    case TaskState::Running: s.phase = t.phase; break;
    case TaskState::Stopped: s.phase = "stopped"; break;
    case TaskState::Failed:
      s.phase = "failed";
      s.error = t.error;
      break;
    case TaskState::Done:
      s.phase = "done";
      s.fraction = 1.0;
      if (converted) s.summary = converted->summary, s.out = converted->out;
      break;
  }
  return s;
}

}  // namespace headlab::app
