#include "app/document/report_match.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace fs = std::filesystem;

namespace headlab::app {
namespace {

std::string canonical(const std::string& folder) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(folder, ec), ec);
  return ec ? folder : p.lexically_normal().string();
}

// The report's heads per stack: layers and heads (one past the largest index).
std::map<core::Stack, std::pair<int, int>> shape_of(const analysis::HeadReport& r) {
  std::map<core::Stack, std::pair<int, int>> shape;
  for (const auto& h : r.heads) {
    auto& s = shape[h.stack];
    s.first = std::max(s.first, h.layer + 1);
    s.second = std::max(s.second, h.head + 1);
  }
  return shape;
}

}  // namespace

std::string report_mismatch(const analysis::HeadReport& report, const ModelSummary& model) {
  const std::string open = model.folder.empty() ? model.name + " (random weights)" : model.folder;
  const std::string measured = "measured on " + (report.model.empty() ? std::string("an unnamed model") : report.model);
  if (!report.model_weights.empty() && !model.weights_hash.empty()) {
    if (report.model_weights != model.weights_hash)
      return measured + (canonical(report.model) == canonical(model.folder)
                             ? ", whose weights have changed since (the open model's weights differ)"
                             : " (the open model is " + open + ")");
  } else if (model.folder.empty() || report.model.empty() || canonical(report.model) != canonical(model.folder)) {
    return measured + " (the open model is " + open + ")";
  }
  for (const auto& [stack, size] : shape_of(report)) {
    const AttentionSummary* att = model.find(stack);
    const int heads = att ? std::max(att->output_heads, att->softmax_heads) : 0;
    if (!att || att->layers != size.first || heads != size.second)
      return measured + ", with " + std::to_string(size.first) + " × " + std::to_string(size.second) + " " + core::stack_name(stack) +
             " heads; the open model has " +
             (att ? std::to_string(att->layers) + " × " + std::to_string(heads) : std::string("no ") + core::stack_name(stack) + " attention");
  }
  return {};
}

}  // namespace headlab::app
