// How runs compute: exactly (the default) or fast. A process-wide choice, as torch's own float32
// matmul precision is: `headlab --precision fast COMMAND`, or the window's Model view.
//
//   exact  Every product in float32: a stored BF16/F16 weight is upcast block by block
//          (core/model/linear.h) and a card's float32 products run without TF32, so results match
//          a float32 reference, and the CPU's, within float32 rounding.
//   fast   A BF16 weight kept as stored multiplies in BF16, as transformers runs a BF16 model:
//          its input (and bias) rounded to BF16, float32 accumulation, the result rounded to BF16
//          and returned as float32. A card's float32 products may use TF32. Softmax, norms,
//          residuals and every captured map stay float32, so maps and logits move by about 1e-2
//          relative. F16 weights compute exactly (F16's range could overflow), as do float32 ones
//          on the CPU (small folders load as float32 copies: core/model/model.h) and, on the CPU,
//          a product of at most 8 rows (a generation step, a short input: the exact kernel reads
//          BF16 faster there). LRP's conservation loosens to ~1e-3 · |f| (a fast analysis judges it at 2e-2).
//
// Reports made in fast mode say so (settings.precision), and shards of different precisions do not
// merge. Training and head pruning always compute exactly.
// The choice lives here, without LibTorch, so the front end's option parsing can set it; the products
// read it (core/model/linear.cpp, which also sets torch's float32 matmul precision to match).
#pragma once

#include <string>

namespace headlab::core {

enum class Precision { exact, fast };

// "exact" or "fast" → the choice; std::invalid_argument in one line otherwise.
Precision parse_precision(const std::string& text);
const char* precision_name(Precision precision);

// What a report records of the process's choice: "fast", or "" for exact (reports leave the field
// out then, so every report made before fast precision existed reads as exact).
std::string recorded_precision();

// The process's choice (exact until set). Runs read it per product: change it between runs, not
// during one.
void set_precision(Precision precision);
Precision current_precision();

// Sets a precision for a scope and restores the previous one after (tests, one-off measurements).
class PrecisionScope {
 public:
  explicit PrecisionScope(Precision precision) : previous_(current_precision()) { set_precision(precision); }
  ~PrecisionScope() { set_precision(previous_); }
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  Precision previous_;
};

}  // namespace headlab::core
