// Every kind of task the window runs stops when its Stop in the status bar is pressed (Task::stop on
// the task the task system lists), within one unit of its work, and publishes nothing half-done:
// the live model's run (within one layer; no snapshot), the Syntax view's sentence (no result), a
// dataset run (the sentences complete so far, marked partial), a generation (the steps made,
// marked "cancelled") and a conversion (nothing written). All run on one task system and one
// model store, as in the window.
#include "test_common.h"

#include "app/tasks/task.h"
#include "app/tasks/task_manager.h"
#include "app/work/convert_job.h"
#include "app/work/dataset_job.h"
#include "app/work/generation_job.h"
#include "app/work/syntax_job.h"
#include "app/work/worker.h"
#include "core/config.h"
#include "core/model/model.h"
#include "core/model/model_store.h"
#include "core/model/system_info.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

using namespace headlab;
using namespace headlab::app;
using headlab::test::TempDir;

namespace {

const std::string kDefault = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
const std::string kUd = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu";

// A deep, narrow causal model with the default model's tokenizer: 48 layers, so one run is long
// enough to be stopped in the middle and a layer is a small part of it.
std::string deep_model(const TempDir& dir) {
  auto c = core::load_model_config(kDefault + "/config.json");
  c.kind = core::StackKind::Decoder;
  c.objective = "causal";
  c.decoder = c.encoder;
  c.encoder.reset();
  // The default's layer 3 has no positions and its layer 4 a sliding window; this model is uniform.
  c.decoder->nope_layers.clear();
  c.decoder->local.reset();
  c.hidden_size = 128;
  c.ffn.inner_size = 512;
  c.max_positions = 1024;
  c.positions = core::PositionKind::Learned;  // a collaborative conversion needs absolute positions
  c.rope_dim = 0;                              // (the default's partial RoPE goes with its rotary positions)
  c.rope_interleaved = false;
  c.decoder->layers = 48;
  c.decoder->attention.key_size = c.decoder->attention.value_size = 128 / c.decoder->attention.heads;
  const std::string folder = dir.str("deep");
  core::save_model(*core::make_random_model(c, 7), folder, "F32", kDefault + "/tokenizer.json");
  return folder;
}

// `words` words of plain English, and the same as one CoNLL-U sentence (each word's head is the
// word before it).
const char* kWords[] = {"the", "old", "house", "stood", "near", "a", "quiet", "river", "and", "people"};

std::string long_text(int words) {
  std::string text;
  for (int i = 0; i < words; ++i) text += (i ? " " : "") + std::string(kWords[i % 10]);
  return text;
}
std::string long_parse(int words) {
  std::string conllu = "# text = " + long_text(words) + "\n";
  for (int i = 1; i <= words; ++i)
    conllu += std::to_string(i) + "\t" + kWords[(i - 1) % 10] + "\t_\tX\t_\t_\t" + std::to_string(i - 1) + "\t" +
              (i == 1 ? "root" : "dep") + "\t_\t_\n";
  return conllu + "\n";
}

template <class Pred>
bool wait_for(Pred pred, int seconds = 120) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

// A generation far longer than a test waits for: it is still writing when Stop comes.
GenerationRequest long_generation(const std::string& folder) {
  GenerationRequest request;
  request.model_folder = folder;
  request.settings.prompt = "the old house";
  request.settings.max_new = 800;
  return request;
}

struct Stopped {
  std::shared_ptr<Task> task;
  Task::Status at_stop, at_end;
};

// Waits until the status bar lists a running task of `kind` that has done at least `min_done`
// units (and shows `phase`, when given), presses its Stop, and waits for it to end.
Stopped stop_when_running(TaskManager& tasks, const std::string& kind, int64_t min_done,
                          const std::string& phase = {}) {
  Stopped s;
  const bool found = wait_for([&] {
    for (const auto& t : tasks.active()) {
      const auto st = t->status();
      if (t->options().kind == kind && st.state == TaskState::Running && st.done >= min_done &&
          (phase.empty() || st.phase == phase)) {
        s.task = t;
        return true;
      }
    }
    return false;
  });
  INFO("waiting for a running task of kind " << kind);
  REQUIRE(found);
  s.at_stop = s.task->status();
  s.task->stop();
  REQUIRE(wait_for([&] { return s.task->finished(); }));
  s.at_end = s.task->status();
  return s;
}

}  // namespace

TEST_CASE("every kind of task stops from the status bar and publishes nothing half-done", "[app][tasks][stop]") {
  TempDir dir("task-stop");
  const std::string folder = deep_model(dir);
  auto tasks = std::make_shared<TaskManager>([](int threads) { core::use_interactive_threads(threads); });
  auto models = std::make_shared<core::ModelStore>();

  SECTION("the live model's run stops within one layer and shows no snapshot") {
    WorkbenchWorker worker(tasks, models);
    worker.request_load({folder, "", 0});
    REQUIRE(wait_for([&] { return worker.idle(); }));
    REQUIRE(worker.status().load_error.empty());
    RunInput in;
    in.text = long_text(400);
    worker.request_run(in);
    const Stopped s = stop_when_running(*tasks, "run", 2);
    CHECK(s.at_end.state == TaskState::Stopped);
    CHECK(s.at_end.total == 48);
    // At most the layer under way when Stop was pressed is finished after it.
    CHECK(s.at_end.done <= s.at_stop.done + 1);
    CHECK(s.at_end.done < s.at_end.total);
    REQUIRE(wait_for([&] { return worker.idle(); }));
    CHECK_FALSE(worker.snapshot());
    CHECK(worker.status().runs_done == 0);
    CHECK(worker.status().run_error.empty());
  }

  SECTION("a model's load stopped before it opens leaves the model open before, and says so") {
    WorkbenchWorker worker(tasks, models);
    worker.request_load({kDefault, "", 0});
    REQUIRE(wait_for([&] { return worker.idle(); }));
    REQUIRE(worker.model());
    REQUIRE(worker.model()->folder == kDefault);
    // A task ahead of it in the model's lane holds the load in the queue, where Stop reaches it.
    std::atomic<bool> release{false};
    TaskOptions hold;
    hold.name = "holding the lane";
    hold.lane = "model";
    hold.kind = "hold";
    tasks->start_typed<int>(hold, [&release](Task&) {
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return std::make_shared<const int>(0);
    });
    worker.request_load({folder, "", 0});
    worker.stop();
    release = true;
    REQUIRE(wait_for([&] { return worker.idle() && tasks->idle(); }));
    // The opening ended: counted as finished (the window stops waiting for it), with the reason.
    CHECK(worker.status().loads_done == 2);
    CHECK_THAT(worker.status().load_error, Catch::Contains("stopped loading " + folder));
    CHECK(worker.model()->folder == kDefault);
  }

  SECTION("a job's discarded work shows nothing, the next run shows again") {
    GenerationJob job(tasks, models);
    GenerationRequest request = long_generation(folder);
    job.start(request);
    REQUIRE(wait_for([&] {
      const auto r = job.result();
      return r && r->steps.size() >= 2;
    }));
    job.discard();  // a session opened: this generation is not its
    REQUIRE(wait_for([&] { return !job.status().running; }));
    CHECK_FALSE(job.result());
    request.settings.max_new = 2;
    job.start(request);
    REQUIRE(wait_for([&] { return !job.status().running; }));
    REQUIRE(job.result());
    CHECK(job.result()->steps.size() == 2);

    // A dataset run's partial report, published as the discard stops it, is not taken either.
    DatasetJob dataset(tasks, models);
    DatasetRequest data;
    data.model_folder = folder;
    data.files = {kUd};
    data.metrics = {"confidence"};
    dataset.start(data);
    REQUIRE(wait_for([&] { return dataset.status().done >= 1; }));
    const uint64_t serial = dataset.result_serial();
    dataset.discard();
    REQUIRE(wait_for([&] { return !dataset.status().running; }));
    CHECK(dataset.result_serial() == serial);
    CHECK_FALSE(dataset.result());
    CHECK(dataset.status().phase.empty());  // not "stopped": the run is no longer the window's
  }

  SECTION("the Syntax view's sentence stops between layers and gives no result") {
    SyntaxJob job(tasks, models);
    SyntaxRequest request;
    request.model_folder = folder;
    request.text = long_text(400);
    request.parse = long_parse(400);
    job.start(request);
    // Stopped while the model runs the sentence, not while it loads.
    const Stopped s = stop_when_running(*tasks, "sentence", 0, "running the input with its parse");
    CHECK(s.at_end.state == TaskState::Stopped);
    CHECK(s.at_end.published == 0);
    REQUIRE(wait_for([&] { return !job.status().running; }));
    CHECK_FALSE(job.result());
    CHECK(job.status().error.empty());
  }

  SECTION("a dataset run keeps the sentences complete so far, marked partial") {
    // The UD sample ten times over: more sentences than the run reaches before Stop.
    const std::string data = dir.str("long.conllu");
    {
      std::ifstream in(kUd);
      const std::string sample((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::ofstream out(data);
      for (int i = 0; i < 10; ++i) out << sample;
    }
    DatasetJob job(tasks, models);
    DatasetRequest request;
    request.model_folder = folder;
    request.files = {data};
    request.metrics = {"confidence", "positional"};
    job.start(request);
    const Stopped s = stop_when_running(*tasks, "analyse", 2);
    CHECK(s.at_end.state == TaskState::Stopped);
    REQUIRE(wait_for([&] { return !job.status().running; }));
    const auto st = job.status();
    CHECK(st.phase == "stopped");
    CHECK(st.partial);
    const auto report = job.result();
    REQUIRE(report);
    CHECK(report->partial);
    CHECK(report->sentences >= 2);
    CHECK(report->sentences + report->skipped <= s.at_stop.done + 1);
    CHECK(report->sentences < 1000);
  }

  SECTION("a generation keeps the steps made, marked cancelled") {
    GenerationJob job(tasks, models);
    GenerationRequest request = long_generation(folder);
    job.start(request);
    const Stopped s = stop_when_running(*tasks, "generate", 2);
    REQUIRE(wait_for([&] { return !job.status().running; }));
    const auto result = job.result();
    REQUIRE(result);
    CHECK(result->stopped == "cancelled");
    CHECK(result->steps.size() >= 2);
    CHECK(result->steps.size() <= static_cast<size_t>(s.at_stop.done + 1));
    CHECK(job.status().error.empty());
  }

  SECTION("a conversion writes nothing") {
    ConvertJob job(tasks, models);
    ConvertRequest request;
    request.model_folder = folder;
    request.to = "collaborative";
    request.key_dim = 8;
    request.iterations = 100000;
    request.out = dir.str("converted");
    job.start(request);
    const Stopped s = stop_when_running(*tasks, "convert", 0);
    INFO(s.at_end.error);
    CHECK(s.at_end.state == TaskState::Stopped);
    REQUIRE(wait_for([&] { return !job.status().running; }));
    CHECK(job.status().phase == "stopped");
    CHECK_FALSE(std::filesystem::exists(dir.str("converted") + "/config.json"));
    CHECK_FALSE(std::filesystem::exists(dir.str("converted") + "/model.safetensors"));
  }

  CHECK(tasks->wait_idle(std::chrono::seconds(30)));
}
