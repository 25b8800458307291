// The Generate view's run: a causal model (or an encoder-decoder) writes from a prompt as a task of
// the window's task system, with the window's head controls, each step published as it is made —
// the token, its alternatives, every head's attention row of the new query and the KV cache's size
// (core/model/generate.h). The model comes from the model store; Stop ends the run after the step under
// way. Torch-free header: GUI translation units include it.
#pragma once

#include "app/work/job.h"
#include "core/controls.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace headlab::app {

// What the user asks of a generation: the prompt and how to draw. The Generate command, the session
// and the job all hold it.
struct GenerationSettings {
  std::string prompt;
  int max_new = 20;
  float temperature = 0;  // 0 = greedy
  int top_k = 0;          // 0 = every token
  float top_p = 1;
  int64_t seed = 0;
  bool operator==(const GenerationSettings& o) const {
    return prompt == o.prompt && max_new == o.max_new && temperature == o.temperature && top_k == o.top_k &&
           top_p == o.top_p && seed == o.seed;
  }
  bool operator!=(const GenerationSettings& o) const { return !(*this == o); }
};

struct GenerationRequest {
  std::string model_folder;  // a causal LM or an encoder-decoder (without a tokenizer the prompt is token ids)
  GenerationSettings settings;
  core::ModelControls controls;
  std::vector<int64_t> keep;  // the first tokens, kept as written before (core::GenerateRequest::forced)
};

struct GeneratedStep {
  int64_t id = 0;
  std::string token;                               // as the vocabulary spells it
  std::vector<std::pair<std::string, float>> top;  // the five most probable tokens and their p
  // With heads gated or mixed, the same tokens' p without the controls, at the same prefix (filled
  // once the text is complete); empty otherwise.
  std::vector<float> top_base;
  bool kept = false;  // written before and kept (GenerationRequest::keep), not drawn this time
  // The new query's attention row: [layer] → heads × keys, row-major (U, what multiplies the values).
  std::vector<std::vector<float>> rows;
  // With learned sinks: [layer] → that query's share of the sink per softmax head (empty in a layer
  // without sinks); the head's row sums to 1 minus it.
  std::vector<std::vector<float>> sinks;
  int heads = 0, keys = 0;
  int64_t cache_bytes = 0;
};

struct GenerationResult {
  std::string model_folder;
  core::ModelControls controls;            // the gates and mixing it was written with
  bool prompt_is_ids = false;              // the model has no tokenizer: the prompt was token ids
  std::vector<std::string> prompt_tokens;  // the decoder's tokens before the first step
  std::vector<GeneratedStep> steps;
  std::string text;                        // the generated text, decoded
  int64_t bytes_per_token = 0;             // the cache's cost per token (core::kv_cache_bytes_per_token)
  int64_t mha_bytes_per_token = 0;         // the same for MHA with the same heads
  std::string stopped;                     // "" while running; "end of sequence", "max_new", "cancelled"
  std::vector<std::string> notes;          // core::Generation::notes (steps recomputed, not cached)
};

// status() says whether a run is under way and why the last one failed.
class GenerationJob : public Job {
 public:
  // Null `tasks` or `models`: a task system and model store of its own (tests); the window passes its own.
  explicit GenerationJob(std::shared_ptr<TaskManager> tasks = nullptr, std::shared_ptr<core::ModelStore> models = nullptr)
      : Job(std::move(tasks), std::move(models)) {}

  // Starts a run; one in flight is stopped and its steps are dropped. Stop ends it within one layer
  // of the step under way; the steps made stay on show.
  void start(const GenerationRequest& request);
  // The run so far (every step published), null before any run and after a failure.
  std::shared_ptr<const GenerationResult> result() const { return shown<GenerationResult>(); }
};

}  // namespace headlab::app
