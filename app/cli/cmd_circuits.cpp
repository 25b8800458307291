// `headlab circuits --model DIR --out DIR`: a model's weight circuits, no data needed
// (analysis/composition.h): Q-, K- and V-composition scores between every head and every head of a
// later layer, each head's OV eigenvalues and copying score. Writes circuits.json and one
// composition heatmap per kind.
#include "analysis/composition.h"
#include "analysis/composition_figures.h"
#include "app/cli/cli.h"
#include "app/cli/cli_args.h"
#include "app/cli/cli_checks.h"
#include "app/cli/progress.h"
#include "core/asset_paths.h"
#include "core/atomic_file.h"
#include "core/model/model.h"
#include "core/model/system_info.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <tuple>

namespace headlab::app {
namespace {

struct CircuitsOptions {
  std::string device;  // --device
  std::string model, out;
  int top = 5;
  bool force = false;
};

nlohmann::json table_json(const analysis::CompositionTable& t) {
  if (t.empty()) return nullptr;
  return t;
}

// The `top` largest scores of a table: (score, layer1, head1, layer2, head2).
std::vector<std::tuple<double, int, int, int, int>> largest(const analysis::CompositionTable& t, int top) {
  std::vector<std::tuple<double, int, int, int, int>> all;
  for (size_t l1 = 0; l1 < t.size(); ++l1)
    for (size_t h1 = 0; h1 < t[l1].size(); ++h1)
      for (size_t l2 = l1 + 1; l2 < t[l1][h1].size(); ++l2)
        for (size_t h2 = 0; h2 < t[l1][h1][l2].size(); ++h2)
          all.emplace_back(t[l1][h1][l2][h2], int(l1), int(h1), int(l2), int(h2));
  const size_t n = std::min(all.size(), size_t(std::max(top, 0)));
  std::partial_sort(all.begin(), all.begin() + n, all.end(), std::greater<>());
  all.resize(n);
  return all;
}

int circuits_command(const CircuitsOptions& o) {
  check_output_folder("--out", o.out, {"circuits.json"}, o.force);
  core::use_batch_threads();
  auto model = load_model_on(o.model, o.device);
  Progress progress("composition", "layers");
  const auto composition = analysis::composition_scores(
      *model, [&progress](int64_t done, int64_t total) { return progress(done, total); });
  progress.finish();
  std::filesystem::create_directories(o.out);
  // A model measured before in this folder (--force): its figures go, so none stays beside the new
  // circuits.json that this model does not draw.
  for (const char* kind : {"q", "k", "v"})
    for (const char* ext : {".svg", ".png"}) {
      std::error_code ec;
      std::filesystem::remove(std::filesystem::path(o.out) / (std::string("composition_") + kind + ext), ec);
    }
  const auto figures = analysis::write_composition_figures(composition, o.model, o.out);
  nlohmann::json j;
  j["format"] = "headlab-circuits";
  j["model"] = o.model;
  j["stack"] = core::stack_name(composition.stack);
  j["q"] = table_json(composition.q);
  j["k"] = table_json(composition.k);
  j["v"] = table_json(composition.v);
  // copying [layer][head] and ov_eigenvalues [layer][head][[re, im], …], null where undefined.
  nlohmann::json copying = nlohmann::json::array(), eigenvalues = nlohmann::json::array();
  for (const auto& head : composition.ov.heads) {
    while (int(copying.size()) <= head.layer) copying.push_back(nlohmann::json::array()), eigenvalues.push_back(nlohmann::json::array());
    copying[head.layer].push_back(head.copying ? nlohmann::json(*head.copying) : nlohmann::json(nullptr));
    nlohmann::json values = nlohmann::json::array();
    for (const auto& z : head.eigenvalues) values.push_back({z.real(), z.imag()});
    eigenvalues[head.layer].push_back(values);
  }
  j["copying"] = copying;
  j["ov_eigenvalues"] = eigenvalues;
  // The composition's notes name what was folded or left out for every circuit, the OV ones included.
  std::vector<std::string> notes = composition.notes;
  if (model->module->layer_count(composition.stack) < 2)
    notes.push_back("no composition scores: composition reads one head's output in a head of a later layer, and "
                    "this model has one layer");
  j["notes"] = notes;
  j["figures"] = figures;
  core::write_file_atomic(o.out + "/circuits.json", j.dump(1) + "\n");
  for (const auto& [name, table] : {std::pair{"Q", &composition.q}, {"K", &composition.k}, {"V", &composition.v}}) {
    const auto top = largest(*table, o.top);
    if (top.empty()) continue;
    std::printf("%s-composition, largest:", name);
    for (const auto& [score, l1, h1, l2, h2] : top) std::printf("  L%d H%d → L%d H%d %.3f", l1, h1, l2, h2, score);
    std::printf("\n");
  }
  for (const auto& note : notes) std::printf("note: %s\n", note.c_str());
  std::printf("wrote %s/circuits.json", o.out.c_str());
  for (const auto& f : figures) std::printf(", %s", f.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace

void add_circuits_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<CircuitsOptions>();
  auto* cmd = app.add_subcommand("circuits", command_description("circuits"));
  cmd->add_option("--model", o->model, "Model folder (default: the shipped default model)");
  add_device_option(cmd, o->device);
  cmd->add_option("--out", o->out, "Output folder (circuits.json, composition_{q,k,v}.svg/.png)")->required();
  cmd->add_option("--top", o->top, "How many of the largest scores of each kind to print")->check(non_negative());
  cmd->add_flag("--force", o->force, "Replace an existing circuits.json");
  cmd->callback([&action, o] {
    action = [o] {
      if (o->model.empty()) o->model = core::default_model_or_throw();
      return circuits_command(*o);
    };
  });
}

}  // namespace headlab::app
