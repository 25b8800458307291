// A head measure of `headlab analyze`: one implementation of this interface and one line in
// analysis/measures/registry.cpp make a measure everywhere — the analysis loop, the report's JSON
// (its values and the statistics shards merge), head_report.csv and the window's Head table, the
// Markdown, the figures and the window's Head detail. The built-in measures (confidence, positional,
// rare, syntactic, lrp, importance, spectra) are the examples; analysis/README.md says how to add one.
#pragma once

#include "analysis/head_report.h"
#include "analysis/report_columns.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace at {
class Tensor;
}
namespace headlab::core {
struct Model;
class Tokenizer;
}

namespace headlab::analysis {

struct AnalyzeOptions;
struct DatasetSentence;
struct SentenceLayout;
struct TokenizedSentence;

// One measured sentence, as the measures see it.
// A measure's per-head statistics in head_report.json's "stats", named once for writing and reading
// alike (Measure::head_stats): the report's writer puts each field into the file, its reader takes
// it back (every field is required: a report missing one is refused, naming it).
class StatsFields {
 public:
  virtual ~StatsFields() = default;
  virtual void real(const char* key, double& value) = 0;
  virtual void count(const char* key, int64_t& value) = 0;
  virtual void offsets(const char* key, std::map<int, int64_t>& value) = 0;  // offset → queries
  // A statistic of a measure added after reports were first written: a report without it was made
  // before the measure existed and reads as 0 (nothing measured).
  virtual void added_real(const char* key, double& value) = 0;
};

struct SentenceWork {
  core::Model& model;
  const DatasetSentence& sentence;
  const TokenizedSentence& tokens;
  SentenceLayout& layout;                // words, arcs and rare positions: each measure's prepare fills its part
  const std::vector<int64_t>& decoder_ids;  // an encoder-decoder reads the sentence on both sides
};

// Each query row's maximum of one layer's maps, found once for every measure that reads maps:
// over non-special keys (ties: the lowest index) and over every key.
struct RowMaxima {
  int64_t heads = 0, queries = 0;
  std::vector<int> best;             // [heads × queries] key index of the maximum, −1 for none
  std::vector<float> best_value;     // [heads × queries]
  std::vector<float> all_keys_max;   // [heads × queries]
  // [heads × queries] the row is a probability distribution: no weight below 0 and a sum of 1, each
  // to float32's rounding of a softmax (mixed weights U need not be one)
  std::vector<bool> distribution;
  std::vector<bool> counted;         // [queries] a non-special query
  size_t at(int64_t head, int64_t query) const { return size_t(head * queries + query); }
};

// A layer × head grid figure of one value per head (figures/grid_KEY.svg).
struct GridFigureSpec {
  std::string key;        // file name part: "confidence" → grid_confidence.svg
  std::string title;
  std::string role_note;  // what an outlined cell means
  bool unit = false;      // a share: colours over [0, 1]
  std::function<std::optional<double>(const HeadEntry&)> value;
  std::function<std::string(const HeadEntry&)> detail;  // a second line in big cells ("" = none)
  std::function<bool(const HeadEntry&)> role;           // outlined
};

// One piece of a head's evidence for the Head detail view and its figure: a line of text, a bar
// chart (series over categories, an optional threshold line) or a cumulative curve with markers.
struct Evidence {
  enum class Kind { text, bars, curve };
  Kind kind = Kind::text;
  std::string text;                          // text: the line; charts: the title
  std::string x_label, y_label;
  std::vector<std::string> categories;       // bars
  std::vector<std::string> series;           // bars: one name per series ("head", "baseline")
  std::vector<std::vector<double>> values;   // bars: [series][category]; curve: [0] the curve
  std::vector<std::string> notes;            // bars: a mark per category ("*" = a role), may be empty
  std::optional<std::pair<double, std::string>> threshold;  // bars: a horizontal line and its label
  std::vector<std::pair<double, std::string>> markers;      // curve: vertical lines at x and their labels
  std::optional<Spectrum> spectrum;          // curve: the spectrum drawn (for the figure's ticks)
  double y_max = 1;                          // the y axis goes from 0 to this
  std::string description;                   // the figure's text alternative
};

// A role threshold a measure declares: kept in the report's settings (`value`), changed on the
// command line, shown as a slider in the window's Head table (which re-derives the roles from the
// stored statistics) and kept in sessions under `key`.
struct RoleThreshold {
  const char* key;      // "induction_threshold": the settings' and the session's name
  const char* label;    // "induction ≥"
  const char* tooltip;  // what the slider's value is
  double lo, hi;
  double ReportSettings::*value;
};

class Measure {
 public:
  virtual ~Measure() = default;
  // The name --metrics and the report use ("confidence"), and its definition with its citation.
  virtual const char* name() const = 0;
  virtual const char* definition() const = 0;

  // ---- measuring (analysis/analyze.cpp; only the measures a report holds) ----
  // Whether it measures a dataset; false for a measure of the weights or of a probe of its own, which
  // `analyze` runs without --data.
  virtual bool needs_data() const { return true; }
  // Reads each layer's maps (add_layer); the analysis runs the model for the measures that do.
  virtual bool reads_maps() const { return false; }
  // Before the data (work on the weights, settings the report records).
  virtual void begin(HeadReport& /*report*/, core::Model& /*model*/, const AnalyzeOptions& /*options*/) {}
  // The pass that counts the dataset before measuring: every sentence of every shard.
  virtual void read_sentence(const core::Tokenizer& /*tokenizer*/, const std::string& /*text*/) {}
  // Once the counting pass is over, before the first sentence.
  virtual void after_reading(HeadReport& /*report*/, const core::Tokenizer& /*tokenizer*/) {}
  // Before a sentence runs: what the measure needs of its layout.
  virtual void prepare(HeadReport& /*report*/, SentenceWork& /*work*/) {}
  // One layer's maps ([heads, T, S], the stage the report reads) of a sentence, with their row maxima.
  virtual void add_layer(HeadReport& /*report*/, core::Stack /*stack*/, int /*layer*/, int /*heads_per_layer*/,
                         const at::Tensor& /*maps*/, const RowMaxima& /*rows*/, const SentenceLayout& /*layout*/) {}
  // After a stack's layers of a sentence.
  virtual void add_stack(HeadReport& /*report*/, core::Stack /*stack*/, int /*heads_in_stack*/,
                         const SentenceLayout& /*layout*/) {}
  // The sentence's passes of its own (LRP, gradients).
  virtual void add_sentence(HeadReport& /*report*/, SentenceWork& /*work*/) {}
  // After the data.
  virtual void end(HeadReport& /*report*/) {}

  // ---- the report ----
  // Derives the measure's values and roles from the statistics (HeadReport::finalize runs every
  // measure's, in the registry's order, after clearing the roles).
  virtual void finalize(HeadReport& /*report*/) const {}
  // Adds another shard's statistics of this measure.
  virtual void merge(HeadReport& /*into*/, const HeadReport& /*other*/) const {}
  // One head's statistics under "stats" (always, whatever the report holds, so shards merge),
  // described once for writing and reading; when writing, `head` is only read.
  virtual void head_stats(StatsFields& /*fields*/, HeadEntry& /*head*/) const {}
  // One head's values under its entry, only when the report holds the measure: derived from the
  // statistics by finalize(), so written for the file's readers and not read back …
  virtual void write_values(const HeadReport& /*report*/, const HeadEntry& /*head*/, nlohmann::json& /*entry*/) const {}
  // … except what no statistic holds (the spectra), read back here.
  virtual void read_values(const nlohmann::json& /*entry*/, HeadEntry& /*head*/) const {}
  // The report's own fields of this measure (per stack or per layer), and reading them back.
  virtual void write_report(const HeadReport& /*report*/, nlohmann::json& /*out*/) const {}
  virtual void read_report(const nlohmann::json& /*in*/, HeadReport& /*report*/) const {}
  // Its columns of head_report.csv and the Head table, in order.
  virtual std::vector<ReportColumn> columns() const { return {}; }
  // Markdown: its lines about the data and the thresholds, its role lines for one head, its columns
  // of the per-head table (names and one head's cells) and a section of its own.
  virtual std::vector<std::string> markdown_data(const HeadReport& /*report*/) const { return {}; }
  virtual std::vector<std::string> markdown_thresholds(const ReportSettings& /*settings*/) const { return {}; }
  virtual std::vector<std::string> markdown_roles(const HeadEntry& /*head*/) const { return {}; }
  virtual std::vector<std::string> markdown_columns() const { return {}; }
  virtual std::vector<std::string> markdown_cells(const HeadEntry& /*head*/) const { return {}; }
  virtual std::string markdown_section(const HeadReport& /*report*/) const { return {}; }
  // The thresholds of its roles (beyond the window's built-in positional, rare and syntactic ones).
  virtual std::vector<RoleThreshold> role_thresholds() const { return {}; }
  // Its layer × head grid figures.
  virtual std::vector<GridFigureSpec> grids(const ReportSettings& /*settings*/) const { return {}; }
  // The evidence of one head for the Head detail view and its figure.
  virtual std::vector<Evidence> evidence(const HeadEntry& /*head*/, const ReportSettings& /*settings*/) const { return {}; }
};

// Every measure, in the order reports list them (analysis/measures/registry.cpp).
const std::vector<const Measure*>& measures();
// The measure of that name, or null.
const Measure* find_measure(const std::string& name);
// The measures `settings` selects, in the registry's order.
std::vector<const Measure*> measures_of(const ReportSettings& settings);
// Adds a measure after the built-in ones (an extension, a test): `make` gives a fresh instance for
// each analysis (and one kept to answer the report's questions). Its name must be new.
void register_measure(std::function<std::unique_ptr<Measure>()> make);

// A fresh set of measures for one analysis: the ones that keep state while measuring (the rare-word
// measure's frequency counts) are per run.
std::vector<std::unique_ptr<Measure>> measures_for_run(const ReportSettings& settings);

}  // namespace headlab::analysis
