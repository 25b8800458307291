// The controller's core: construction, errors, command dispatch, and the commands that change
// the model, the input, the selection, the head controls and the views; start-up; the frame's
// poll of the live model. The background jobs' commands are in controller_jobs.cpp, the head
// report's in controller_report.cpp, sessions in controller_session.cpp.
#include "app/document/controller.h"

#include "app/document/controls_edit.h"
#include "app/document/run_mapping.h"
#include "app/layout/colormap.h"
#include "app/work/dataset_job.h"
#include "core/control_values.h"
#include "core/file_hash.h"
#include "core/model/device.h"
#include "core/precision.h"

#include <filesystem>

namespace fs = std::filesystem;

namespace headlab::app {
namespace {

MixPreset preset_of(const std::string& name) {
  if (name == "uniform") return MixPreset::Uniform;
  if (name == "swap") return MixPreset::Swap;
  if (name == "blend") return MixPreset::Blend;
  if (name == "identity") return MixPreset::Identity;
  throw std::runtime_error("unknown preset '" + name + "' (identity, uniform, swap, blend)");
}

// A command's layer (and head, when given) must name one of the attention's: "layer 9 is not in [0, 5]".
void check_unit(const AttentionSummary& att, int layer, int head = 0, int heads = 1) {
  if (layer < 0 || layer >= att.layers)
    throw std::runtime_error("layer " + std::to_string(layer) + " is not in [0, " + std::to_string(att.layers - 1) +
                             "] (" + att.title + ")");
  if (head < 0 || head >= heads)
    throw std::runtime_error("head " + std::to_string(head) + " is not in [0, " + std::to_string(heads - 1) + "]");
}

}  // namespace

Controller::Controller()
    : tasks_(tasks_or_own(nullptr)),
      models_(models_or_own(nullptr)),
      worker_(tasks_, models_),
      dataset_(std::make_unique<DatasetJob>(tasks_, models_)),
      generation_(std::make_unique<GenerationJob>(tasks_, models_)),
      patching_(std::make_unique<PatchingJob>(tasks_, models_)),
      convert_(std::make_unique<ConvertJob>(tasks_, models_)),
      export_(std::make_unique<ExportJob>(tasks_, models_)),
      syntax_(std::make_unique<SyntaxJob>(tasks_, models_)),
      last_autosave_(std::chrono::steady_clock::now()) {
  assets_dir_ = find_assets_dir();
  doc_.session.precision = core::precision_name(core::current_precision());  // --precision, until a session says
  try {
    doc_.session.recent_folders = load_recent_folders();
  } catch (const std::exception& e) {
    notice(std::string("The recent folders could not be read: ") + e.what());
  }
}

Controller::~Controller() = default;

const AttentionSummary& Controller::attention_of(core::Stack stack) const {
  const AttentionSummary* att = doc_.model ? doc_.model->find(stack) : nullptr;
  if (!att) throw std::runtime_error(std::string("the model has no '") + core::stack_name(stack) + "' attention");
  return *att;
}

void Controller::set_error(const std::string& kind, const std::string& text) {
  clear_error(kind);
  doc_.errors.push_back({kind, text});
}

void Controller::clear_error(const std::string& kind) {
  auto& e = doc_.errors;
  e.erase(std::remove_if(e.begin(), e.end(), [&](const ErrorMessage& m) { return m.kind == kind; }), e.end());
}

void Controller::dismiss_newest_error() {
  if (!doc_.errors.empty()) doc_.errors.pop_back();
}

void Controller::apply(const Command& command) {
  try {
    execute(command);
  } catch (const std::exception& e) {
    set_error(command_name(command), command_name(command) + ": " + e.what());
  }
}

void Controller::execute(const Command& command) {
  dispatch(command);
  // Done: an earlier failure of the same command is history. (A load or a run that the command
  // started clears its own kind, "open_model" or "run", when it finishes.)
  clear_error(command_name(command));
}

void Controller::dispatch(const Command& command) {
  // One handler per command (below); the window's own commands are applied by the window.
  std::visit([this](const auto& c) { on(c); }, command);
}

core::Stack Controller::current_stack(const std::optional<core::Stack>& stack) const {
  return stack.value_or(doc_.session.selection.stack);
}

// ---- the commands, one handler each ----

// ---- the commands, one handler each ----
void Controller::on(const cmd::OpenModel& c) {
  if (c.folder.empty())
    open_random_model();
  else
    open_model(c.folder);
}

void Controller::on(const cmd::SetText& c) {
  auto& s = doc_.session;
  s.text = c.text;
  if (c.decoder_text) s.decoder_text = *c.decoder_text;
  if (c.run) request_run();
}

void Controller::on(const cmd::Run&) {
  request_run();
}

void Controller::on(const cmd::TrimInput& c) {
  if (c.keep != "first" && c.keep != "around")
    throw std::runtime_error("keep must be \"first\" or \"around\"");
  if (!doc_.model) throw std::runtime_error("no model is open");
  RunInput in = make_run_input(doc_.session);
  in.trim = c.keep == "first" ? InputTrim::First : InputTrim::Around;
  in.trim_centre = std::max(0, c.centre);
  worker_.request_run(in);
  requested_open_ = {in.open_stack, in.open_layer};
  ran_text_ = doc_.session.text;
  requested_at_ = std::chrono::steady_clock::now();
  unshown_request_ = true;
}

void Controller::on(const cmd::SetOutputPosition& c) {
  auto& s = doc_.session;
  auto& sel = s.selection;
  const int before = sel.output_position;
  sel.output_position = std::max(-1, c.position);
  // Only the shown positions go through the LM head: another position is a (head-only) run.
  if (before != sel.output_position) request_run();
}

void Controller::on(const cmd::SelectHead& c) {
  auto& sel = doc_.session.selection;
  sel.layer = c.layer;
  sel.head = c.head;
  sel.mixer_layer = c.layer;
  select(c.stack, c.stage);
}

void Controller::on(const cmd::SelectAttention& c) {
  auto& sel = doc_.session.selection;
  if (c.mixer_layer) sel.mixer_layer = *c.mixer_layer;
  select(c.stack, c.stage);
}

void Controller::on(const cmd::SelectToken& c) {
  auto& s = doc_.session;
  auto& sel = s.selection;
  sel.query = c.query;
  sel.key = c.key;
  if (doc_.model) clamp_selection(sel, *doc_.model, doc_.snapshot.get());
}

void Controller::on(const cmd::SetGate& c) {
  auto& s = doc_.session;
  const core::Stack stack = current_stack(c.stack);
  const int heads = attention_of(stack).output_heads;
  check_unit(attention_of(stack), c.layer, c.head, heads);
  try {
    core::check_gate(c.value, "layer " + std::to_string(c.layer) + " head " + std::to_string(c.head));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
  set_gate(s.controls, stack, c.layer, c.head, c.value, heads);
  request_run();
}

void Controller::on(const cmd::SetAblation& c) {
  auto& s = doc_.session;
  const core::Stack stack = current_stack(c.stack);
  check_unit(attention_of(stack), c.layer);
  s.controls.at(stack, c.layer).ablation = c.mode;
  canonicalize(s.controls);
  request_run();
}

void Controller::on(const cmd::SetMix& c) {
  auto& s = doc_.session;
  if (c.which != "pre" && c.which != "post") throw std::runtime_error("which must be \"pre\" or \"post\"");
  const core::Stack stack = current_stack(c.stack);
  const AttentionSummary& att = attention_of(stack);
  const int heads = c.which == "pre" ? att.softmax_heads : att.output_heads;
  check_unit(att, c.layer);
  std::vector<float> m = c.matrix ? *c.matrix : mix_preset(preset_of(c.preset), heads, c.a, c.b, c.alpha);
  if (m.size() != static_cast<size_t>(heads) * heads)
    throw std::runtime_error("matrix must have " + std::to_string(heads * heads) + " entries");
  try {
    core::check_finite_values(m, "set_mix", c.which == "pre" ? "pre_mix" : "post_mix");
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
  set_mix(s.controls, stack, c.layer, c.which, m, heads);
  request_run();
}

void Controller::on(const cmd::Reset& c) {
  auto& s = doc_.session;
  if (c.layer) {
    check_unit(attention_of(current_stack(c.stack)), *c.layer);
    reset_layer(s.controls, current_stack(c.stack), *c.layer);
  }
  else
    s.controls = {};
  request_run();
}

void Controller::on(const cmd::SetView& c) {
  auto& s = doc_.session;
  auto& v = s.view;
  const int top_k = v.top_k;
  if (c.colormap && !is_colormap_name(*c.colormap))
    throw std::runtime_error("unknown colormap '" + *c.colormap + "' (viridis or gray)");
  if (c.colormap) v.colormap = *c.colormap;
  if (c.log_scale) v.log_scale = *c.log_scale;
  if (c.auto_range) v.auto_range = *c.auto_range;
  if (c.thumbnail_size) v.thumbnail_size = std::clamp(*c.thumbnail_size, 16.0f, 512.0f);
  if (c.top_k) v.top_k = std::clamp(*c.top_k, 1, 50);
  if (c.export_scale) v.export_scale = std::clamp(*c.export_scale, 1, 4);
  if (c.export_dir) v.export_dir = *c.export_dir;
  if (c.grid_measure) v.grid_measure = *c.grid_measure;
  if (c.workspace) {
    if (*c.workspace != "Explore" && *c.workspace != "Analyse")
      throw std::runtime_error("unknown workspace '" + *c.workspace + "' (Explore or Analyse)");
    v.workspace = *c.workspace;
  }
  // The Analyse workspace shows the weights' spectra: a run without them (made in Explore)
  // runs again for them (no layer is recomputed; the engine keeps them per model).
  const bool spectra_missing =
      v.workspace == "Analyse" && doc_.snapshot && !doc_.snapshot->input.weight_spectra;
  const bool spectra_changed = c.logit_spectra && *c.logit_spectra != v.logit_spectra;
  if (c.logit_spectra) v.logit_spectra = *c.logit_spectra;
  if (v.top_k != top_k || (spectra_changed && v.logit_spectra) || spectra_missing) request_run();
}

void Controller::select(const std::optional<core::Stack>& stack, const std::optional<Stage>& stage) {
  auto& sel = doc_.session.selection;
  const bool had_logits = sel.stage == Stage::J || sel.stage == Stage::L;
  if (stack) sel.stack = *stack;
  if (stage) sel.stage = *stage;
  if (doc_.model) clamp_selection(sel, *doc_.model, doc_.snapshot.get());
  // J and L are captured only on demand; so is a layer's whole map where the run kept thumbnails.
  if ((!had_logits && (sel.stage == Stage::J || sel.stage == Stage::L)) || selected_layer_missing()) request_run();
}

bool Controller::selected_layer_missing() const {
  const auto& sel = doc_.session.selection;
  const AttentionMaps* maps = doc_.snapshot ? doc_.snapshot->find(sel.stack) : nullptr;
  if (!maps || sel.layer < 0 || sel.layer >= static_cast<int>(maps->layers.size())) return false;
  return maps->layers[static_cast<size_t>(sel.layer)].pooled() && requested_open_ != std::pair{sel.stack, sel.layer};
}

void Controller::start(const std::string& model_folder, const std::string& session_path) {
  if (!session_path.empty()) {
    try {
      open_session(session_path);
      return;
    } catch (const std::exception& e) {
      set_error("open_session", e.what());
      notice(std::string("Could not open the session: ") + e.what());
    }
  }
  if (!model_folder.empty()) {
    open_model(model_folder);
    return;
  }
  const std::string found = find_default_model(assets_dir_);
  if (!found.empty())
    open_model(found);
  else
    open_random_model();
}

void Controller::on(const cmd::SetDevice& c) {
  const std::string device = core::device_name(core::parse_device(c.device));  // throws the reason: nothing changes
  doc_.session.device = device;
  if (doc_.model && !doc_.model->folder.empty() && doc_.model->device != device) open_model(doc_.model->folder);
}

// A task that would finish at another precision than it started with, if the precision changed now:
// any but the live model's load and runs (superseded by the run that follows a change; the engine
// drops traces of another precision) and the Syntax view's sentence (measured again). "" when none.
std::string Controller::task_blocking_precision() const {
  for (const auto& t : tasks_->active()) {
    const std::string& lane = t->options().lane;
    if (lane != "model" && lane != "syntax") return t->status().name;
  }
  return "";
}

void Controller::set_precision(core::Precision precision) {
  doc_.session.precision = core::precision_name(precision);
  if (precision == core::current_precision()) return;
  core::set_precision(precision);
  // What the views show was computed at the other precision: the input runs again (the engine drops
  // its traces of the other precision, app/work/workbench_engine.cpp), the Syntax view's sentence is
  // measured again at the next poll, and a patching result or generation goes (their views run them again).
  request_run();
  syntax_requested_.reset();
  doc_.syntax.reset();
  doc_.patching.reset();
  doc_.generation.reset();
}

void Controller::on(const cmd::SetPrecision& c) {
  const core::Precision precision = core::parse_precision(c.precision);  // throws the reason: nothing changes
  if (precision != core::current_precision()) {
    const std::string blocking = task_blocking_precision();
    if (!blocking.empty())
      throw std::invalid_argument("a task is running (" + blocking +
                                  "); stop it or let it finish first, so that what it measures has one precision");
  }
  set_precision(precision);
}

void Controller::apply_session_precision() {
  const std::string now = core::precision_name(core::current_precision());
  std::string wanted = doc_.session.precision;
  doc_.session.precision = now;
  if (wanted.empty() || wanted == now) return;  // a session from before the choice existed keeps the window's
  core::Precision precision;
  try {
    precision = core::parse_precision(wanted);
  } catch (const std::invalid_argument& e) {
    notice(std::string("Session: precision ") + e.what() + "; runs compute " + now);
    return;
  }
  if (const std::string blocking = task_blocking_precision(); !blocking.empty()) {
    notice("Session: its precision (" + wanted + ") is not applied while a task runs (" + blocking +
           "); runs compute " + now);
    return;
  }
  set_precision(precision);
}

void Controller::open_model(const std::string& folder) {
  doc_.banner.clear();
  // A session saved on a machine with a card, opened on one without: the model opens on the CPU.
  try {
    doc_.session.device = core::device_name(core::parse_device(doc_.session.device));
  } catch (const std::exception& e) {
    set_error("set_device", std::string("set_device: ") + e.what() + "; the model runs on the CPU");
    doc_.session.device = "cpu";
  }
  worker_.request_load({folder, "", 0, doc_.session.device});
  pending_model_run_ = true;
  // A patching sweep measures the model open before; its results would fill the new model's view.
  if (!doc_.model || doc_.model->folder != folder) patching_->discard();
}

void Controller::open_random_model(const std::string& why) {
  const std::string config = doc_.session.random_config.empty()
                                 ? (fs::path(assets_dir_) / "configs" / "mha.json").string()
                                 : doc_.session.random_config;
  random_reason_ = why;
  doc_.banner = "random weights — " + why;
  worker_.request_load({"", config, 0});
  pending_model_run_ = true;
}

void Controller::request_run() {
  if (!doc_.model) return;
  worker_.request_run(make_run_input(doc_.session));
  requested_open_ = {doc_.session.selection.stack, doc_.session.selection.layer};
  ran_text_ = doc_.session.text;
  requested_at_ = std::chrono::steady_clock::now();
  unshown_request_ = true;
}

std::optional<std::chrono::steady_clock::time_point> Controller::take_unshown_request() {
  if (!unshown_request_ || !worker_.idle()) return std::nullopt;
  unshown_request_ = false;
  return requested_at_;
}

bool Controller::poll() {
  bool changed = false;
  poll_model(changed);
  poll_snapshot(changed);
  poll_outcomes(changed);
  poll_dataset(changed);
  poll_syntax(changed);
  poll_generation(changed);
  poll_patching(changed);
  poll_convert(changed);
  poll_export(changed);
  return changed;
}

// A model the worker loaded: the session follows it, its controls are fitted, its input is run.
void Controller::poll_model(bool& changed) {
  auto& session = doc_.session;
  const uint64_t serial = worker_.model_serial();
  if (serial != model_serial_) {
    model_serial_ = serial;
    doc_.model = worker_.model();
    doc_.snapshot.reset();
    doc_.refused.reset();
    clear_error("run");  // the last model's input
    if (const auto& model = doc_.model) {
      const bool same_model = session.model_folder == model->folder;
      if (!model->folder.empty() && !expected_hash_.empty() && model->weights_hash != expected_hash_ &&
          !core::same_weights(model->folder, expected_hash_))
        notice("The weights in " + model->folder + " changed since the session was saved (hash " + expected_hash_ +
               " → " + model->weights_hash + "): the controls were kept.");
      expected_hash_.clear();
      session.model_folder = model->folder;
      session.model_hash = model->weights_hash;
      if (!model->folder.empty()) session.device = model->device;  // where it opened (a random model: the CPU)
      if (model->random_weights) {
        doc_.banner = "random weights — " + random_reason_;
      } else {
        doc_.banner.clear();
        remember_folder(session.recent_folders, model->folder);
        try {
          save_recent_folders(session.recent_folders);
        } catch (const std::exception& e) {
          // A read-only state folder only costs the recent list; the run goes on.
          notice(std::string("The recent folders could not be saved: ") + e.what());
        }
      }
      if (session.text.empty()) session.text = demo_text(*model);
      // A session keeps its controls; a different model opened by hand starts from the defaults.
      if (!same_model && !loading_session_) session.controls = {}, session.patching.take.clear();
      // A patching result is of the model it was measured on.
      if (doc_.patching && doc_.patching->model_folder != model->folder) doc_.patching.reset();
      loading_session_ = false;
      std::string dropped = fit_controls(session.controls, *model);
      if (const std::string take = fit_take(session.patching.take, *model); !take.empty())
        dropped += (dropped.empty() ? "" : "; ") + take;
      if (!dropped.empty()) notice("Controls that do not fit " + model->name + " were dropped: " + dropped + ".");
      clamp_selection(session.selection, *model, nullptr);
      pending_model_run_ = false;
      request_run();
    }
    // The report on screen belongs to the model it was measured on: shown again, or kept apart.
    refresh_report();
    changed = true;
  }
}

// The worker's newest run: the views draw it.
void Controller::poll_snapshot(bool& changed) {
  auto& session = doc_.session;
  auto snap = worker_.snapshot();
  if (snap != doc_.snapshot) {
    doc_.snapshot = snap;
    if (doc_.model && snap) clamp_selection(session.selection, *doc_.model, snap.get());
    // A run asked for before another layer was selected kept that layer as thumbnails: fetch it.
    if (selected_layer_missing()) request_run();
    // A text the model took only cut to its positions: the text is now the part that was run.
    if (snap && !snap->trimmed.empty() && session.text != snap->input.text) {
      session.text = snap->input.text;
      ran_text_ = session.text;
      notice("The input was cut to fit the model: " + snap->trimmed + ".");
    }
    changed = true;
  }
}

// Finished loads and runs: their errors reach the status bar, a success clears its kind.
void Controller::poll_outcomes(bool& changed) {
  const TaskStatus status = worker_.status();
  if (status.loads_done != loads_done_) {
    loads_done_ = status.loads_done;
    changed = true;
    if (status.load_error.empty()) {
      // A fallback's load leaves the failure that led to it on show: the folder asked for did not open.
      if (fallback_loads_ > 0) --fallback_loads_;
      else clear_error("open_model");
    } else {
      set_error("open_model", status.load_error);
      // A failed load with nothing loaded yet: never a blank screen. The shipped default model
      // first (unless it is what failed), then random weights.
      if (!doc_.model && doc_.banner.empty()) {
        const std::string found = find_default_model(assets_dir_);
        const bool default_failed = fallback_loads_ > 0 || found.empty() ||
                                    status.load_error.find(found) != std::string::npos;
        fallback_loads_ = 1;
        if (!default_failed) {
          notice(status.load_error + " — opening the default model " + found + " instead.");
          open_model(found);
        } else {
          notice(status.load_error + " — opening a random-weight model instead.");
          open_random_model("the model asked for did not open (see the status bar)");
        }
      } else {
        // The model open before (if any) stays, where it ran, and nothing is pending any more.
        pending_model_run_ = false;
        if (doc_.model && !doc_.model->folder.empty()) doc_.session.device = doc_.model->device;
      }
    }
  }
  if (status.runs_done != runs_done_) {
    runs_done_ = status.runs_done;
    changed = true;
    doc_.refused = status.refused;
    if (status.run_error.empty())
      clear_error("run");
    else
      set_error("run", status.run_error);
  }
}

}  // namespace headlab::app
