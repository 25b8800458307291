// Key-query spectra (Cordonnier et al. 2020 Fig. 1), from the weights, no data needed: the singular
// values of each head's key-query form W_Q^i W_K^iᵀ (GQA: with its shared key head; talking heads:
// Σ_k P_l[k,h] W_Q^k W_K^kᵀ; collaborative: W̃_Q diag(m_i) W̃_Kᵀ), their cumulative energy and the
// ranks holding 90/95/99% of it; per layer the same for the concatenated W_Q, W_K and their product.
#include "analysis/analyze.h"
#include "analysis/measure.h"
#include "analysis/measure_kit.h"
#include "analysis/spectra.h"
#include "analysis/spectrum_curves.h"
#include "core/json_integer.h"
#include "core/model/model.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

namespace headlab::analysis {
namespace {

std::string ranks_text(const Spectrum& s) {
  return "90% of the energy at rank " + std::to_string(s.rank90) + ", 95% at " + std::to_string(s.rank95) + ", 99% at " +
         std::to_string(s.rank99);
}

// A head whose form exists and is not zero or negligible beside its layer's others: its ranks mean
// something. A negligible form's ranks describe rounding noise (σ_1 of 4e-10 beside the layer's 8.6
// still has a "rank 2"), so the columns, the Markdown and the Head detail leave them out.
bool usable(const HeadEntry& h) { return h.spectrum && h.spectrum->applicable && !h.spectrum->negligible; }

std::string sigma_text(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3g", v);
  return s;
}

// The largest σ_1 among the heads of each (stack, layer) with a form.
std::map<std::pair<core::Stack, int>, double> layer_tops(const HeadReport& report) {
  std::map<std::pair<core::Stack, int>, double> top;
  for (const auto& h : report.heads)
    if (h.spectrum && h.spectrum->applicable) {
      double& t = top[{h.stack, h.layer}];
      t = std::max(t, largest_singular_value(*h.spectrum));
    }
  return top;
}

class SpectraMeasure : public Measure {
 public:
  bool needs_data() const override { return false; }
  const char* name() const override { return "spectra"; }
  const char* definition() const override {
    return "Cordonnier et al. 2020 Fig. 1: singular values of each head's key-query form W_Q^i W_K^iᵀ, cumulative "
           "energy and the ranks holding 90/95/99% of it; per layer the same for the concatenated W_Q, W_K and their "
           "product. With RoPE the form is the one at offset 0. No data needed";
  }

  void begin(HeadReport& report, core::Model& model, const AnalyzeOptions& options) override {
    // Per layer: progress, and Stop between layers (a stopped analysis's report is partial anyway).
    const auto layers = key_query_spectra(model, [&](int done, int total) {
      if (options.cancel && options.cancel->load()) return false;
      return !options.preparing || options.preparing("key-query spectra", done, total);
    });
    for (const auto& layer : layers) {
      report.layers.push_back(LayerEntry{layer.stack, layer.layer, layer.query, layer.key, layer.product});
      for (size_t h = 0; h < layer.heads.size(); ++h)
        if (HeadEntry* e = report.find(layer.stack, layer.layer, static_cast<int>(h))) e->spectrum = layer.heads[h];
    }
    // What the forms leave out, once per kind of layer (latent, disentangled attention); a latent
    // layer's note covers its decoupled RoPE part, so the RoPE note speaks of the other layers.
    std::vector<std::string> layer_notes;
    bool plain_layers = false;
    for (const auto& layer : layers) {
      if (layer.note.empty()) plain_layers = true;
      else if (std::find(layer_notes.begin(), layer_notes.end(), layer.note) == layer_notes.end())
        layer_notes.push_back(layer.note);
    }
    const auto pos = model.config.positions;
    if (plain_layers && (pos == core::PositionKind::Rope || pos == core::PositionKind::RopeLearned))
      report.notes.push_back("spectra: with RoPE a head's scores are x_tᵀ W_Q R(s − t) W_Kᵀ x_s; the spectrum is the "
                             "form at offset 0 (no rotation), W_Q W_Kᵀ");
    for (const auto& note : layer_notes) report.notes.push_back("spectra: " + note);
    for (const auto& h : report.heads)
      if (h.spectrum && !h.spectrum->applicable) {
        report.notes.push_back("spectra: additive scoring has no bilinear key-query form; its heads have no spectrum");
        break;
      }
  }

  // Which forms are negligible beside their layer's (on a fresh, merged or read report alike).
  void finalize(HeadReport& report) const override {
    const auto top = layer_tops(report);
    for (auto& h : report.heads)
      if (h.spectrum && h.spectrum->applicable)
        h.spectrum->negligible = negligible_form(*h.spectrum, top.at({h.stack, h.layer}));
  }

  void merge(HeadReport& into, const HeadReport& other) const override {
    for (size_t i = 0; i < into.heads.size(); ++i)
      if (!into.heads[i].spectrum && other.heads[i].spectrum) into.heads[i].spectrum = other.heads[i].spectrum;
    if (into.layers.empty()) into.layers = other.layers;
  }

  void write_values(const HeadReport& report, const HeadEntry& h, nlohmann::json& entry) const override {
    if (!report.settings.has(name())) return;
    entry["spectrum"] = h.spectrum ? kit::spectrum_json(*h.spectrum) : nlohmann::json(nullptr);
    if (h.spectrum && h.spectrum->negligible) entry["spectrum"]["negligible"] = true;
  }
  void read_values(const nlohmann::json& entry, HeadEntry& h) const override {
    if (entry.contains("spectrum") && !entry["spectrum"].is_null()) h.spectrum = kit::spectrum_from(entry["spectrum"]);
  }


  void write_report(const HeadReport& r, nlohmann::json& out) const override {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& l : r.layers)
      layers.push_back({{"stack", core::stack_name(l.stack)},
                        {"layer", l.layer},
                        {"spectrum",
                         {{"query", kit::spectrum_json(l.query)},
                          {"key", kit::spectrum_json(l.key)},
                          {"product", kit::spectrum_json(l.product)}}}});
    out["layers"] = layers;
  }
  void read_report(const nlohmann::json& in, HeadReport& r) const override {
    for (const auto& e : in.at("layers")) {
      LayerEntry l;
      l.stack = core::stack_from_name(e.at("stack").get<std::string>());
      l.layer = core::get_integer<int>(e.at("layer"));
      l.query = kit::spectrum_from(e.at("spectrum").at("query"));
      l.key = kit::spectrum_from(e.at("spectrum").at("key"));
      l.product = kit::spectrum_from(e.at("spectrum").at("product"));
      r.layers.push_back(std::move(l));
    }
  }

  std::vector<ReportColumn> columns() const override {
    using H = const HeadEntry&;
    return {{"spectrum_rank90", "spectra", true, false, [](H h) { return usable(h) ? kit::integer(h.spectrum->rank90) : ReportCell{}; }},
            {"spectrum_rank95", "spectra", true, false, [](H h) { return usable(h) ? kit::integer(h.spectrum->rank95) : ReportCell{}; }},
            {"spectrum_rank99", "spectra", true, false, [](H h) { return usable(h) ? kit::integer(h.spectrum->rank99) : ReportCell{}; }}};
  }

  std::string markdown_section(const HeadReport& report) const override {
    std::string md = "## Key-query spectra\n\n";
    md += "Energy ranks: the smallest k whose singular values hold 90 / 95 / 99% of Σσ² of W_Q W_Kᵀ.\n\n";
    md += "Per head:\n\n";
    md += kit::md_header({"stack", "layer", "head", "rank90", "rank95", "rank99", "singular values"});
    for (const auto& h : report.heads) {
      if (!h.spectrum) continue;
      if (!h.spectrum->applicable) {
        md += kit::md_row({core::stack_name(h.stack), std::to_string(h.layer), std::to_string(h.head), "", "", "", "no bilinear form"});
        continue;
      }
      if (h.spectrum->negligible) {
        md += kit::md_row({core::stack_name(h.stack), std::to_string(h.layer), std::to_string(h.head), "", "", "",
                           "zero or negligible form (σ_1 = " + sigma_text(largest_singular_value(*h.spectrum)) + ")"});
        continue;
      }
      md += kit::md_row({core::stack_name(h.stack), std::to_string(h.layer), std::to_string(h.head), std::to_string(h.spectrum->rank90),
                         std::to_string(h.spectrum->rank95), std::to_string(h.spectrum->rank99),
                         std::to_string(h.spectrum->singular_values.size())});
    }
    md += "\n";
    if (!report.layers.empty()) {
      md += "Per layer (W_Q, W_K and W_Q W_Kᵀ over the layer's heads; ranks 90 / 95 / 99):\n\n";
      md += kit::md_header({"stack", "layer", "query", "key", "product"});
      auto ranks = [](const Spectrum& sp) {
        return std::to_string(sp.rank90) + " / " + std::to_string(sp.rank95) + " / " + std::to_string(sp.rank99);
      };
      for (const auto& l : report.layers)
        md += kit::md_row({core::stack_name(l.stack), std::to_string(l.layer), ranks(l.query), ranks(l.key), ranks(l.product)});
      md += "\n";
    }
    return md;
  }

  std::vector<Evidence> evidence(const HeadEntry& h, const ReportSettings& /*settings*/) const override {
    if (h.spectrum && h.spectrum->applicable && h.spectrum->negligible) {
      Evidence e;
      e.text = "Key-query spectrum: none — W_Q W_Kᵀ is zero or negligible beside its layer's forms (σ_1 = " +
               sigma_text(largest_singular_value(*h.spectrum)) +
               "): its query or key weights are (nearly) zero, so its scores come from the bias terms alone";
      return {e};
    }
    if (!usable(h) || h.spectrum->singular_values.empty()) return {};
    Evidence e;
    e.kind = Evidence::Kind::curve;
    e.text = "Key-query spectrum: cumulative energy Σ_{j≤k} σ_j² / Σ σ²";
    e.x_label = "rank";
    e.y_label = "energy";
    e.values = {drawn_energy(*h.spectrum)};
    e.markers = {{h.spectrum->rank90, "90%"}, {h.spectrum->rank99, "99%"}};
    e.spectrum = *h.spectrum;
    e.y_max = 1.02;
    e.description = "spectrum: " + ranks_text(*h.spectrum);
    return {e};
  }
};

}  // namespace

std::unique_ptr<Measure> make_spectra_measure() { return std::make_unique<SpectraMeasure>(); }

}  // namespace headlab::analysis
