#include "app/document/commands.h"
#include "core/json_integer.h"

#include <stdexcept>

namespace headlab::app {
namespace {

using nlohmann::json;

// One description of each command's fields serves both directions: a Reader fills a command from
// an action's JSON (checking presence and types), a Writer turns it back into JSON.
struct Reader {
  const json& j;
  std::string action;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw std::runtime_error(action + ": \"" + field + "\" " + what);
  }
  void read(const char* name, std::string& v) const { v = as<std::string>(name); }
  void read(const char* name, bool& v) const { v = as<bool>(name); }
  void read(const char* name, int& v) const { v = as<int>(name); }
  void read(const char* name, int64_t& v) const { v = as<int64_t>(name); }
  void read(const char* name, float& v) const { v = as<float>(name); }
  void read(const char* name, double& v) const { v = as<double>(name); }
  void read(const char* name, std::vector<std::string>& v) const { v = as<std::vector<std::string>>(name); }
  void read(const char* name, std::vector<float>& v) const { v = as<std::vector<float>>(name); }
  void read(const char* name, std::vector<int>& v) const {
    if (!j.at(name).is_array()) fail(name, "must be a list of integers");
    v.clear();
    for (const auto& item : j.at(name)) {
      try {
        v.push_back(core::get_integer<int>(item));
      } catch (const json::exception&) {
        fail(name, "must be a list of integers");
      }
    }
  }
  void read(const char* name, Stage& v) const {
    try {
      v = stage_from_name(as<std::string>(name));
    } catch (const std::invalid_argument& e) {
      fail(name, e.what());
    }
  }
  void read(const char* name, core::Stack& v) const {
    try {
      v = core::stack_from_name(as<std::string>(name));
    } catch (const std::invalid_argument& e) {
      fail(name, e.what());
    }
  }
  void read(const char* name, core::Ablation& v) const {
    const std::string mode = as<std::string>(name);
    if (mode != "zero" && mode != "mean") fail(name, "must be \"zero\" or \"mean\"");
    v = mode == "mean" ? core::Ablation::Mean : core::Ablation::Zero;
  }
  template <class V>
  V as(const char* name) const {
    try {
      return core::get_value<V>(j.at(name));
    } catch (const json::exception&) {
      fail(name, "has the wrong type (" + std::string(j.at(name).type_name()) + ")");
    }
  }
  template <class V>
  void required(const char* name, V& v) const {
    if (!j.contains(name)) fail(name, "is missing");
    read(name, v);
  }
  template <class V>
  void optional(const char* name, V& v) const {
    if (j.contains(name)) read(name, v);
  }
  template <class V>
  void optional(const char* name, std::optional<V>& v) const {
    if (!j.contains(name)) return;
    V value{};
    read(name, value);
    v = value;
  }
};

struct Writer {
  json& j;
  static json value(const Stage& s) { return stage_name(s); }
  static json value(const core::Stack& s) { return core::stack_name(s); }
  static json value(const core::Ablation& a) { return a == core::Ablation::Mean ? "mean" : "zero"; }
  template <class V>
  static json value(const V& v) { return v; }
  template <class V>
  void required(const char* name, const V& v) { j[name] = value(v); }
  template <class V>
  void optional(const char* name, const V& v) { j[name] = value(v); }
  template <class V>
  void optional(const char* name, const std::optional<V>& v) {
    if (v) j[name] = value(*v);
  }
};

// The fields of each command, for Reader and Writer alike.
template <class Io, class C>
void fields(Io& io, C& c);

template <class Io> void fields(Io& io, cmd::OpenModel& c) { io.required("folder", c.folder); }
template <class Io> void fields(Io& io, cmd::SetText& c) {
  io.required("text", c.text);
  io.optional("decoder_text", c.decoder_text);
  io.optional("run", c.run);
}
template <class Io> void fields(Io&, cmd::Run&) {}
template <class Io> void fields(Io& io, cmd::TrimInput& c) {
  io.optional("keep", c.keep);
  io.optional("centre", c.centre);
}
template <class Io> void fields(Io&, cmd::CloseReport&) {}
template <class Io> void fields(Io& io, cmd::SetOutputPosition& c) { io.required("position", c.position); }
template <class Io> void fields(Io& io, cmd::SelectHead& c) {
  io.required("layer", c.layer);
  io.required("head", c.head);
  io.optional("stack", c.stack);
  io.optional("stage", c.stage);
}
template <class Io> void fields(Io& io, cmd::SelectAttention& c) {
  io.optional("stack", c.stack);
  io.optional("stage", c.stage);
  io.optional("mixer_layer", c.mixer_layer);
}
template <class Io> void fields(Io& io, cmd::SelectToken& c) {
  io.optional("query", c.query);
  io.optional("key", c.key);
}
template <class Io> void fields(Io& io, cmd::SetGate& c) {
  io.required("layer", c.layer);
  io.required("head", c.head);
  io.required("value", c.value);
  io.optional("stack", c.stack);
}
template <class Io> void fields(Io& io, cmd::SetAblation& c) {
  io.required("layer", c.layer);
  io.required("mode", c.mode);
  io.optional("stack", c.stack);
}
template <class Io> void fields(Io& io, cmd::SetMix& c) {
  io.required("layer", c.layer);
  io.required("which", c.which);
  io.optional("stack", c.stack);
  io.optional("preset", c.preset);
  io.optional("a", c.a);
  io.optional("b", c.b);
  io.optional("alpha", c.alpha);
  io.optional("matrix", c.matrix);
}
template <class Io> void fields(Io& io, cmd::Reset& c) {
  io.optional("stack", c.stack);
  io.optional("layer", c.layer);
}
template <class Io> void fields(Io& io, cmd::SetView& c) {
  io.optional("colormap", c.colormap);
  io.optional("log_scale", c.log_scale);
  io.optional("auto_range", c.auto_range);
  io.optional("thumbnail_size", c.thumbnail_size);
  io.optional("top_k", c.top_k);
  io.optional("export_scale", c.export_scale);
  io.optional("export_dir", c.export_dir);
  io.optional("grid_measure", c.grid_measure);
  io.optional("workspace", c.workspace);
  io.optional("logit_spectra", c.logit_spectra);
}
template <class Io> void fields(Io& io, cmd::DatasetChoices& c) {
  io.required("files", c.files);
  io.optional("metrics", c.metrics);
  io.optional("limit", c.limit);
}
template <class Io> void fields(Io& io, cmd::RunDataset& c) { fields(io, static_cast<cmd::DatasetChoices&>(c)); }
template <class Io> void fields(Io& io, cmd::SetDatasetChoices& c) { fields(io, static_cast<cmd::DatasetChoices&>(c)); }
template <class Io> void fields(Io&, cmd::StopDataset&) {}
template <class Io> void fields(Io& io, cmd::Generate& c) {
  io.required("prompt", c.settings.prompt);
  io.optional("max_new", c.settings.max_new);
  io.optional("temperature", c.settings.temperature);
  io.optional("top_k", c.settings.top_k);
  io.optional("top_p", c.settings.top_p);
  io.optional("seed", c.settings.seed);
  io.optional("keep", c.keep);
}
template <class Io> void fields(Io&, cmd::StopGeneration&) {}
template <class Io> void fields(Io& io, cmd::SetPatching& c) {
  io.optional("counterfactual", c.counterfactual);
  io.optional("answer", c.answer);
  io.optional("wrong", c.wrong);
  io.optional("metric", c.metric);
  io.optional("site", c.site);
}
template <class Io> void fields(Io&, cmd::RunPatching&) {}
template <class Io> void fields(Io&, cmd::StopPatching&) {}
template <class Io> void fields(Io& io, cmd::TakeFromCounterfactual& c) {
  io.optional("layer", c.layer);
  io.optional("head", c.head);
  io.optional("weight", c.weight);
  io.optional("reset", c.reset);
}
template <class Io> void fields(Io& io, cmd::SetDevice& c) { io.required("device", c.device); }
template <class Io> void fields(Io& io, cmd::SetPrecision& c) { io.required("precision", c.precision); }
template <class Io> void fields(Io& io, cmd::ConvertModel& c) {
  io.required("to", c.to);
  io.optional("groups", c.groups);
  io.optional("key_dim", c.key_dim);
  io.required("out", c.out);
  io.optional("open", c.open);
}
template <class Io> void fields(Io&, cmd::StopConvert&) {}
template <class Io> void fields(Io& io, cmd::SelectSentence& c) {
  io.optional("file", c.file);
  io.required("index", c.index);
}
template <class Io> void fields(Io& io, cmd::SetParse& c) {
  io.optional("conllu", c.conllu);
  io.optional("file", c.file);
}
template <class Io> void fields(Io& io, cmd::OpenReport& c) { io.required("path", c.path); }
template <class Io> void fields(Io& io, cmd::SortHeads& c) {
  io.required("by", c.by);
  io.optional("descending", c.descending);
}
template <class Io> void fields(Io& io, cmd::FilterHeads& c) {
  io.optional("role", c.role);
  io.optional("layer", c.layer);
}
template <class Io> void fields(Io& io, cmd::SetThresholds& c) {
  io.optional("positional", c.positional);
  io.optional("rare", c.rare);
  io.optional("syntactic_margin", c.syntactic_margin);
  io.optional("reset", c.reset);
  io.optional("measure", c.measure);
  io.optional("measure_value", c.measure_value);
}
template <class Io> void fields(Io& io, cmd::SetLrpTarget& c) {
  io.required("position", c.position);
  io.optional("token", c.token);
  io.optional("enabled", c.enabled);
  io.optional("shading", c.shading);
}
template <class Io> void fields(Io& io, cmd::SaveSession& c) { io.required("path", c.path); }
template <class Io> void fields(Io& io, cmd::OpenSession& c) { io.required("path", c.path); }
template <class Io> void fields(Io& io, cmd::Export& c) {
  io.required("view", c.view);
  io.required("path", c.path);
  io.optional("scale", c.scale);
  io.optional("figure_only", c.figure_only);
  io.optional("overwrite", c.overwrite);
  io.optional("ask", c.ask);
}
template <class Io> void fields(Io& io, cmd::Screenshot& c) {
  io.required("path", c.path);
  io.optional("scale", c.scale);
  io.optional("overwrite", c.overwrite);
}
template <class Io> void fields(Io& io, cmd::ShowView& c) {
  io.required("view", c.view);
  io.optional("open", c.open);
}
template <class Io> void fields(Io& io, cmd::SelectView& c) { io.required("view", c.view); }
template <class Io> void fields(Io& io, cmd::WaitFrames& c) { io.required("frames", c.frames); }
template <class Io> void fields(Io& io, cmd::SetMapView& c) {
  io.required("zoom", c.zoom);
  io.optional("query_from", c.query_from);
  io.optional("query_to", c.query_to);
}
template <class Io> void fields(Io& io, cmd::SetHeadView& c) { io.optional("hidden", c.hidden); }
template <class Io> void fields(Io&, cmd::Quit&) {}
template <class Io> void fields(Io& io, cmd::ExpectError& c) { io.optional("contains", c.contains); }
template <class Io> void fields(Io& io, cmd::AnswerDialog& c) { io.required("button", c.button); }

// A default-constructed command of the variant's alternative `index`.
template <size_t I = 0>
Command make_alternative(size_t index) {
  if constexpr (I < std::variant_size_v<Command>) {
    if (index == I) return Command(std::in_place_index<I>);
    return make_alternative<I + 1>(index);
  } else {
    throw std::logic_error("command index out of range");
  }
}

}  // namespace

const std::vector<std::string>& command_names() {
  static const std::vector<std::string> names{
      "open_model",   "set_text",      "run",         "set_output_position", "select_head",   "select_attention",
      "select_token", "set_gate",      "set_ablation", "set_mix",            "reset",         "set_view",
      "run_dataset",  "set_dataset",   "stop_dataset", "select_sentence",    "set_parse",     "open_report",
      "sort_heads",   "filter_heads",  "set_thresholds",
      "set_lrp_target", "save_session", "open_session", "export",            "screenshot",    "show_view",
      "select_view",  "wait_frames",   "set_map_view", "quit",          "expect_error",
      "answer_dialog", "generate", "stop_generation", "convert_model", "stop_convert", "trim_input", "close_report",
      "set_patching", "run_patching", "stop_patching", "take_from_counterfactual", "set_device",
      "set_precision", "set_head_view"};
  static_assert(std::variant_size_v<Command> == 46, "one name per command");
  return names;
}

std::string command_name(const Command& command) { return command_names().at(command.index()); }

bool is_window_command(const Command& command) {
  return std::holds_alternative<cmd::Export>(command) || std::holds_alternative<cmd::Screenshot>(command) ||
         std::holds_alternative<cmd::ShowView>(command) || std::holds_alternative<cmd::SelectView>(command) ||
         std::holds_alternative<cmd::WaitFrames>(command) || std::holds_alternative<cmd::SetMapView>(command) ||
         std::holds_alternative<cmd::SetHeadView>(command) ||
         std::holds_alternative<cmd::Quit>(command) || std::holds_alternative<cmd::ExpectError>(command) ||
         std::holds_alternative<cmd::AnswerDialog>(command);
}

Command command_from_json(const json& action) {
  if (!action.is_object() || !action.contains("action") || !action.at("action").is_string())
    throw std::runtime_error("expected an object with an \"action\" string");
  const std::string name = action.at("action").get<std::string>();
  const auto& names = command_names();
  size_t index = 0;
  while (index < names.size() && names[index] != name) ++index;
  if (index == names.size()) throw std::runtime_error("unknown action '" + name + "'");
  Command command = make_alternative(index);
  const Reader reader{action, name};
  std::visit([&](auto& c) { fields(reader, c); }, command);
  return command;
}

json command_to_json(const Command& command) {
  json j = {{"action", command_name(command)}};
  Writer writer{j};
  std::visit([&](const auto& c) { fields(writer, const_cast<std::decay_t<decltype(c)>&>(c)); }, command);
  return j;
}

}  // namespace headlab::app
