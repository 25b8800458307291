// The measures of `headlab analyze`, in the order reports list them. A new measure is a file in this
// folder and one line below (analysis/README.md, "Adding a measure").
#include "analysis/measure.h"

#include <algorithm>
#include <stdexcept>

namespace headlab::analysis {

std::unique_ptr<Measure> make_confidence_measure();
std::unique_ptr<Measure> make_positional_measure();
std::unique_ptr<Measure> make_rare_word_measure();
std::unique_ptr<Measure> make_syntactic_measure();
std::unique_ptr<Measure> make_lrp_measure();
std::unique_ptr<Measure> make_importance_measure();
std::unique_ptr<Measure> make_spectra_measure();
std::unique_ptr<Measure> make_entropy_measure();
std::unique_ptr<Measure> make_distance_measure();
std::unique_ptr<Measure> make_sink_measure();
std::unique_ptr<Measure> make_induction_measure();
std::unique_ptr<Measure> make_copying_measure();

namespace {

struct Entry {
  std::function<std::unique_ptr<Measure>()> make;
  std::unique_ptr<Measure> prototype;  // answers the report's questions (const: no measuring state)
};

// Filled once, before the first use; registrations of extensions happen at start-up, before any
// analysis runs.
struct Registry {
  std::vector<Entry> entries;
  std::vector<const Measure*> view;
  Registry() {
    for (auto make : {make_confidence_measure, make_positional_measure, make_rare_word_measure, make_syntactic_measure,
                      make_entropy_measure, make_distance_measure, make_sink_measure, make_induction_measure,
                      make_copying_measure, make_lrp_measure, make_importance_measure, make_spectra_measure})
      add(make);
  }
  void add(std::function<std::unique_ptr<Measure>()> make) {
    Entry e{make, make()};
    for (const auto& other : entries)
      if (std::string(other.prototype->name()) == e.prototype->name())
        throw std::logic_error(std::string("a measure named '") + e.prototype->name() + "' is registered already");
    view.push_back(e.prototype.get());
    entries.push_back(std::move(e));
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const std::vector<const Measure*>& measures() { return registry().view; }

const Measure* find_measure(const std::string& name) {
  for (const Measure* m : measures())
    if (name == m->name()) return m;
  return nullptr;
}

std::vector<const Measure*> measures_of(const ReportSettings& settings) {
  std::vector<const Measure*> out;
  for (const Measure* m : measures())
    if (settings.has(m->name())) out.push_back(m);
  return out;
}

void register_measure(std::function<std::unique_ptr<Measure>()> make) { registry().add(std::move(make)); }

std::vector<std::unique_ptr<Measure>> measures_for_run(const ReportSettings& settings) {
  std::vector<std::unique_ptr<Measure>> out;
  for (const auto& e : registry().entries)
    if (settings.has(e.prototype->name())) out.push_back(e.make());
  return out;
}

}  // namespace headlab::analysis
