// HeadControls: what a user does to the heads of one attention layer — gates, ablation and
// mixing matrices. Torch-free plain data, so the GUI and session files can hold it.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace headlab::core {

// Which stages a run keeps (bit flags).
enum Capture : unsigned {
  kCaptureNone = 0,
  kCaptureLogits = 1u << 0,         // J
  kCaptureMixedLogits = 1u << 1,    // L
  kCaptureWeights = 1u << 2,        // W
  kCaptureMixedWeights = 1u << 3,   // U (what multiplies the values)
  kCaptureHeadOutputs = 1u << 4,    // O_i
  kCaptureResidual = 1u << 5,       // residual stream per layer (needed for incremental runs)
  kCaptureAll = (1u << 6) - 1,      // every stage the views show
  // What activation patching takes from a run (core/model/patch.h) beyond the stages above: each
  // layer's queries, keys and values as the scores read them, and its FFN's output.
  kCapturePatchSites = 1u << 6,
};

// The attentions of a model a head can belong to: the encoder's self-attention, the decoder's
// self-attention (a causal LM's only one), and the decoder's cross-attention over the encoder's
// output. Written "encoder", "decoder", "cross" in model files, sessions, scripts and reports.
enum class Stack { Encoder = 0, Decoder = 1, Cross = 2 };
inline constexpr Stack kStacks[] = {Stack::Encoder, Stack::Decoder, Stack::Cross};
const char* stack_name(Stack stack);              // "encoder", "decoder", "cross"
Stack stack_from_name(const std::string& name);   // throws std::invalid_argument naming the three
// The stack whose layers run an attention: the decoder's for its cross-attention.
inline Stack layers_of(Stack stack) { return stack == Stack::Cross ? Stack::Decoder : stack; }

// The stages of one attention call, in the order the engine computes them: J the heads' logits
// q·kᵀ/√d, L the logits after the model's and the user's logit mixing, W the softmax weights, U the
// weights after weight mixing and gates — what multiplies the values.
enum class Stage { J = 0, L = 1, W = 2, U = 3 };
inline constexpr int kStageCount = 4;
const char* stage_name(Stage stage);       // "J", "L", "W", "U"
Stage stage_from_name(const std::string& name);  // throws std::invalid_argument naming the choices
Capture capture_of(Stage stage);           // the flag a run needs to keep the stage

// Write the names above (messages, test output).
std::ostream& operator<<(std::ostream& out, Stack stack);
std::ostream& operator<<(std::ostream& out, Stage stage);


// What a head's output is replaced by as its gate closes.
enum class Ablation {
  Zero,  // Voita et al. 2019: Concat_i(g_i·head_i) W_O
  Mean,  // g_i·head_i + (1−g_i)·mean_i, mean_i the head's mean output (over this input's positions
         // unless `mean_outputs` gives a dataset mean)
};

struct HeadControls {
  std::vector<float> gates;  // [output_heads]; empty = all 1
  Ablation ablation = Ablation::Zero;
  std::vector<float> mean_outputs;  // [output_heads * value_size], optional dataset means
  // User mixing matrices, row-major, identity when empty. pre_mix [h, h] is applied to the logits
  // after the model's own P_l (L ← L·M, over the head axis, before the mask and softmax);
  // post_mix [h_v, h_v] to the weights after P_w (U ← U·M). Any model becomes a talking-heads one.
  std::vector<float> pre_mix;
  std::vector<float> post_mix;

  bool is_default() const;
  float gate(int head) const { return head < static_cast<int>(gates.size()) ? gates[head] : 1.0f; }
  bool operator==(const HeadControls& other) const;
  bool operator!=(const HeadControls& other) const { return !(*this == other); }
};

// Controls for every attention layer of a model. Vectors are indexed by layer; missing = default.
struct ModelControls {
  std::vector<HeadControls> encoder_self;
  std::vector<HeadControls> decoder_self;
  std::vector<HeadControls> decoder_cross;

  // Mutable access that grows the vector as needed.
  HeadControls& at(Stack stack, int layer);
  const HeadControls& get(Stack stack, int layer) const;  // default when absent
  // Every layer's controls of one stack.
  std::vector<HeadControls>& layers(Stack stack);
  const std::vector<HeadControls>& layers(Stack stack) const;
  bool is_default() const;
};

// Parses "L.H=V" (e.g. "2.5=0"): gate of head H in layer L. Throws std::invalid_argument.
struct GateSpec {
  int layer = 0;
  int head = 0;
  float value = 1.0f;
};
GateSpec parse_gate_spec(const std::string& text);

}  // namespace headlab::core
