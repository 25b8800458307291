#include "app/document/controller.h"

#include "app/work/dataset_job.h"
#include "app/document/controls_edit.h"
#include "core/file_hash.h"
#include "app/document/head_table.h"
#include "app/document/report_match.h"
#include "app/document/run_mapping.h"
#include "core/model/system_info.h"

#include <nlohmann/json.hpp>

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

// Above this size a report made in the window is written beside the session state instead of
// being embedded in session files.
constexpr size_t kEmbedLimit = 2u << 20;

bool is_conllu(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return ext == ".conllu" || ext == ".conll" || ext == ".conllx";
}

bool same_request(const SyntaxRequest& a, const SyntaxRequest& b) {
  const auto& x = a.controls;
  const auto& y = b.controls;
  if (a.on_input() != b.on_input()) return false;
  const bool same_sentence = a.on_input()
                                 ? a.text == b.text && a.parse == b.parse && a.parse_file == b.parse_file
                                 : a.file == b.file && a.index == b.index;
  return a.model_folder == b.model_folder && same_sentence &&
         x.encoder_self == y.encoder_self && x.decoder_self == y.decoder_self && x.decoder_cross == y.decoder_cross;
}

}  // namespace

std::string syntax_file_of(const AnalysisChoices& a) {
  if (!a.syntax_file.empty()) return a.syntax_file;
  for (const auto& f : a.dataset_files)
    if (is_conllu(f)) return f;
  return {};
}

Controller::Controller()
    : tasks_(std::make_shared<TaskManager>([](int threads) { core::use_interactive_threads(threads); })),
      models_(std::make_shared<core::ModelStore>()),
      worker_(tasks_, models_),
      dataset_(std::make_unique<DatasetJob>(tasks_, models_)),
      generation_(std::make_unique<GenerationJob>(tasks_, models_)),
      convert_(std::make_unique<ConvertJob>(tasks_, models_)),
      syntax_(std::make_unique<SyntaxJob>(tasks_, models_)),
      last_autosave_(std::chrono::steady_clock::now()) {
  assets_dir_ = find_assets_dir();
  try {
    doc_.session.recent_folders = load_recent_folders();
  } catch (const std::exception& e) {
    notice(std::string("The recent folders could not be read: ") + e.what());
  }
}

Controller::~Controller() = default;

const AttentionSummary& Controller::attention_of(const std::string& stack) const {
  const AttentionSummary* att = doc_.model ? doc_.model->find(stack) : nullptr;
  if (!att) throw std::runtime_error("the model has no '" + stack + "' attention");
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

std::string Controller::current_stack(const std::string& stack) const {
  return stack.empty() ? doc_.session.selection.stack : stack;
}

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

void Controller::on(const cmd::SelectToken& c) {
  auto& s = doc_.session;
  auto& sel = s.selection;
  sel.query = c.query;
  sel.key = c.key;
  if (doc_.model) clamp_selection(sel, *doc_.model, doc_.snapshot.get());
}

void Controller::on(const cmd::SetGate& c) {
  auto& s = doc_.session;
  const std::string stack = current_stack(c.stack);
  set_gate(s.controls, stack, c.layer, c.head, c.value, attention_of(stack).output_heads);
  request_run();
}

void Controller::on(const cmd::SetAblation& c) {
  auto& s = doc_.session;
  const std::string stack = current_stack(c.stack);
  attention_of(stack);
  s.controls.at(stack, c.layer).ablation = c.mode;
  canonicalize(s.controls);
  request_run();
}

void Controller::on(const cmd::SetMix& c) {
  auto& s = doc_.session;
  if (c.which != "pre" && c.which != "post") throw std::runtime_error("which must be \"pre\" or \"post\"");
  const std::string stack = current_stack(c.stack);
  const AttentionSummary& att = attention_of(stack);
  const int heads = c.which == "pre" ? att.softmax_heads : att.output_heads;
  std::vector<float> m = c.matrix ? *c.matrix : mix_preset(preset_of(c.preset), heads, c.a, c.b, c.alpha);
  if (m.size() != static_cast<size_t>(heads) * heads)
    throw std::runtime_error("matrix must have " + std::to_string(heads * heads) + " entries");
  set_mix(s.controls, stack, c.layer, c.which, m, heads);
  request_run();
}

void Controller::on(const cmd::Reset& c) {
  auto& s = doc_.session;
  if (c.layer)
    reset_layer(s.controls, current_stack(c.stack), *c.layer);
  else
    s.controls = {};
  request_run();
}

void Controller::on(const cmd::SetView& c) {
  auto& s = doc_.session;
  auto& v = s.view;
  const int top_k = v.top_k;
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

void Controller::on(const cmd::RunDataset& c) {
  run_dataset(c);
}

void Controller::on(const cmd::SetDatasetChoices& c) {
  auto& s = doc_.session;
  auto& a = s.analysis;
  a.dataset_files = c.files;
  a.metrics = c.metrics;
  a.limit = std::max<int64_t>(0, c.limit);
}

void Controller::on(const cmd::StopDataset&) {
  dataset_->stop();
}

void Controller::on(const cmd::Generate& c) {
  auto& s = doc_.session;
  if (!doc_.model || doc_.model->folder.empty())
    throw std::runtime_error("generation needs a model folder (a causal LM or an encoder-decoder; this model has random weights and no folder)");
  if (c.settings.max_new < 1 || c.settings.max_new > 4096)
    throw std::runtime_error("max_new must be between 1 and 4096");
  auto& g = s.generation;
  // Going back: the first `keep` tokens of the last generation are written again as they were.
  std::vector<int64_t> keep;
  if (c.keep > 0 && c.settings.prompt == g.settings.prompt)
    keep.assign(g.generated.begin(), g.generated.begin() + std::min<size_t>(size_t(c.keep), g.generated.size()));
  g.settings = c.settings;
  g.settings.temperature = std::max(0.0f, g.settings.temperature);
  g.settings.top_k = std::max(0, g.settings.top_k);
  g.settings.top_p = std::clamp(g.settings.top_p, 0.0f, 1.0f);
  g.generated.clear();
  start_generation(keep);
}

void Controller::on(const cmd::ConvertModel& c) {
  convert_model(c);
}

void Controller::on(const cmd::StopConvert&) {
  convert_->cancel();
}

void Controller::on(const cmd::StopGeneration&) {
  generation_->stop();
}

void Controller::on(const cmd::SelectSentence& c) {
  auto& s = doc_.session;
  auto& a = s.analysis;
  if (c.file && !c.file->empty() && !is_conllu(*c.file))
    throw std::runtime_error(*c.file + " is not a CoNLL-U file (.conllu, .conll, .conllx): the Syntax view needs gold trees");
  if (c.file) a.syntax_file = *c.file;
  if (syntax_file_of(a).empty())
    throw std::runtime_error("no CoNLL-U file: name one, or choose a CoNLL-U dataset in the Dataset view");
  a.syntax_index = std::max(0, c.index);
  a.syntax_parse.clear();  // a file's sentence, not the typed input
  a.syntax_parse_file.clear();
  sync_syntax();
}

void Controller::on(const cmd::SetParse& c) {
  auto& s = doc_.session;
  auto& a = s.analysis;
  if (!c.conllu.empty() && !c.file.empty())
    throw std::runtime_error("set_parse takes pasted CoNLL-U or a file, not both");
  if (!c.file.empty() && !is_conllu(c.file))
    throw std::runtime_error(c.file + " is not a CoNLL-U file (.conllu, .conll, .conllx)");
  if (!c.file.empty() && !fs::is_regular_file(c.file)) throw std::runtime_error(c.file + ": no such file");
  a.syntax_parse = c.conllu;
  a.syntax_parse_file = c.file;
  sync_syntax();
}

void Controller::on(const cmd::OpenReport& c) {
  open_report(c.path);
}

void Controller::on(const cmd::CloseReport&) {
  close_report();
}

void Controller::on(const cmd::SortHeads& c) {
  auto& s = doc_.session;
  if (!c.by.empty() && doc_.report) {
    const auto columns = head_table_columns(*doc_.report);
    if (std::find(columns.begin(), columns.end(), c.by) == columns.end())
      throw std::runtime_error("no column '" + c.by + "' in the head table");
  }
  s.analysis.sort_by = c.by;
  s.analysis.sort_descending = c.descending;
}

void Controller::on(const cmd::FilterHeads& c) {
  auto& s = doc_.session;
  s.analysis.filter_role = c.role;
  s.analysis.filter_layer = c.layer;
}

void Controller::on(const cmd::SetThresholds& c) {
  auto& s = doc_.session;
  auto& a = s.analysis;
  if (c.reset) {
    a.thresholds_edited = false;
  } else {
    if (!a.thresholds_edited && raw_report_) {
      a.positional_threshold = raw_report_->settings.positional_threshold;
      a.rare_threshold = raw_report_->settings.rare_threshold;
      a.syntactic_margin = raw_report_->settings.syntactic_margin;
    }
    if (c.positional) a.positional_threshold = std::clamp(*c.positional, 0.0, 1.0);
    if (c.rare) a.rare_threshold = std::clamp(*c.rare, 0.0, 1.0);
    if (c.syntactic_margin) a.syntactic_margin = std::clamp(*c.syntactic_margin, -1.0, 1.0);
    a.thresholds_edited = true;
  }
  refresh_report();
}

void Controller::on(const cmd::SetLrpTarget& c) {
  auto& s = doc_.session;
  auto& a = s.analysis;
  if (c.shading && *c.shading != "lrp" && *c.shading != "rollout" && *c.shading != "flow")
    throw std::runtime_error("unknown shading '" + *c.shading + "' (lrp, rollout or flow)");
  const bool changed = a.lrp_enabled != c.enabled || a.lrp_position != c.position || a.lrp_token != c.token ||
                       (c.shading && (*c.shading == "flow") != (a.lrp_shading == "flow"));
  if (c.shading) a.lrp_shading = *c.shading;
  a.lrp_enabled = c.enabled;
  a.lrp_position = std::max(-1, c.position);
  a.lrp_token = c.token < 0 ? -1 : c.token;
  if (changed && c.enabled) request_run();
}

void Controller::on(const cmd::SaveSession& c) {
  save_session(c.path, layout_for_save());
}

void Controller::on(const cmd::OpenSession& c) {
  open_session(c.path);
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

void Controller::select(const std::string& stack, const std::optional<Stage>& stage) {
  auto& sel = doc_.session.selection;
  const bool had_logits = sel.stage == Stage::J || sel.stage == Stage::L;
  if (!stack.empty()) sel.stack = stack;
  if (stage) sel.stage = *stage;
  if (doc_.model) clamp_selection(sel, *doc_.model, doc_.snapshot.get());
  // J and L are captured only on demand.
  if (!had_logits && (sel.stage == Stage::J || sel.stage == Stage::L)) request_run();
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

void Controller::open_model(const std::string& folder) {
  doc_.banner.clear();
  worker_.request_load({folder, "", 0});
  pending_model_run_ = true;
}

void Controller::open_random_model() {
  const std::string config = doc_.session.random_config.empty()
                                 ? (fs::path(assets_dir_) / "configs" / "mha.json").string()
                                 : doc_.session.random_config;
  doc_.banner = "random weights — no trained model found";
  worker_.request_load({"", config, 0});
  pending_model_run_ = true;
}

void Controller::request_run() {
  if (!doc_.model) return;
  worker_.request_run(make_run_input(doc_.session));
  ran_text_ = doc_.session.text;
  requested_at_ = std::chrono::steady_clock::now();
  unshown_request_ = true;
}

std::optional<std::chrono::steady_clock::time_point> Controller::take_unshown_request() {
  if (!unshown_request_ || !worker_.idle()) return std::nullopt;
  unshown_request_ = false;
  return requested_at_;
}

void Controller::start_generation(const std::vector<int64_t>& keep) {
  const auto& g = doc_.session.generation;
  GenerationRequest r;
  r.model_folder = doc_.model ? doc_.model->folder : doc_.session.model_folder;
  r.settings = g.settings;
  r.controls = doc_.session.controls;
  r.keep = keep;
  generation_->start(r);
  doc_.generation_running = true;
  doc_.generation_error.clear();
}

void Controller::poll_generation(bool& changed) {
  const uint64_t serial = generation_->result_serial();
  const GenerationStatus st = generation_->status();
  if (st.running != doc_.generation_running) changed = true;
  doc_.generation_running = st.running;
  if (serial == generation_serial_) return;
  generation_serial_ = serial;
  doc_.generation = generation_->result();
  doc_.generation_error = st.error;
  // What was written goes into the session.
  auto& generated = doc_.session.generation.generated;
  generated.clear();
  if (doc_.generation)
    for (const auto& step : doc_.generation->steps) generated.push_back(step.id);
  changed = true;
}

bool Controller::idle() const {
  if (doc_.syntax_running || doc_.generation_running || doc_.convert.running) return false;
  const auto wanted = syntax_request();
  if (wanted && (!syntax_requested_ || !same_request(*wanted, *syntax_requested_))) return false;
  return worker_.idle() && !doc_.dataset.running && doc_.model && doc_.snapshot && !pending_model_run_;
}

std::optional<SyntaxRequest> Controller::syntax_request() const {
  const auto& a = doc_.session.analysis;
  SyntaxRequest r;
  r.parse = a.syntax_parse;
  r.parse_file = a.syntax_parse_file;
  if (r.on_input()) {
    r.text = ran_text_;  // the text last run, not each keystroke
  } else {
    r.file = syntax_file_of(a);
    r.index = a.syntax_index;
    if (r.file.empty()) return std::nullopt;
  }
  if (!doc_.model || doc_.model->folder.empty() || pending_model_run_) return std::nullopt;
  r.model_folder = doc_.model->folder;
  r.controls = doc_.session.controls;
  return r;
}

void Controller::sync_syntax() {
  const auto wanted = syntax_request();
  if (!wanted || (syntax_requested_ && same_request(*wanted, *syntax_requested_))) return;
  syntax_requested_ = std::make_unique<SyntaxRequest>(*wanted);
  syntax_->start(*wanted);
  doc_.syntax_running = true;
}

void Controller::poll_syntax(bool& changed) {
  sync_syntax();
  // The serial first: a result published after it is picked up by the next poll.
  const uint64_t serial = syntax_->result_serial();
  const SyntaxJobStatus st = syntax_->status();
  if (st.running != doc_.syntax_running) changed = true;
  doc_.syntax_running = st.running;
  if (serial == syntax_serial_) return;
  syntax_serial_ = serial;
  doc_.syntax = syntax_->result();
  doc_.syntax_error = st.error;
  changed = true;
}

bool Controller::poll() {
  bool changed = false;
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
      if (model->random_weights) {
        doc_.banner = "random weights — no trained model found";
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
      if (!same_model && !loading_session_) session.controls = {};
      loading_session_ = false;
      const std::string dropped = fit_controls(session.controls, *model);
      if (!dropped.empty()) notice("Controls that do not fit " + model->name + " were dropped: " + dropped + ".");
      clamp_selection(session.selection, *model, nullptr);
      pending_model_run_ = false;
      request_run();
    }
    // The report on screen belongs to the model it was measured on: shown again, or kept apart.
    refresh_report();
    changed = true;
  }
  auto snap = worker_.snapshot();
  if (snap != doc_.snapshot) {
    doc_.snapshot = snap;
    if (doc_.model && snap) clamp_selection(session.selection, *doc_.model, snap.get());
    // A text the model took only cut to its positions: the text is now the part that was run.
    if (snap && !snap->trimmed.empty() && session.text != snap->input.text) {
      session.text = snap->input.text;
      ran_text_ = session.text;
      notice("The input was cut to fit the model: " + snap->trimmed + ".");
    }
    changed = true;
  }
  const TaskStatus status = worker_.status();
  if (status.loads_done != loads_done_) {
    loads_done_ = status.loads_done;
    changed = true;
    if (status.load_error.empty()) {
      clear_error("open_model");
    } else {
      set_error("open_model", status.load_error);
      // A failed load with nothing loaded yet: never a blank screen.
      if (!doc_.model && doc_.banner.empty()) {
        notice(status.load_error + " — opening a random-weight model instead.");
        open_random_model();
      } else {
        // The model open before (if any) stays, and nothing is pending any more.
        pending_model_run_ = false;
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
  poll_dataset(changed);
  poll_syntax(changed);
  poll_generation(changed);
  poll_convert(changed);
  return changed;
}

// ---- sessions ----

void Controller::save_session(const std::string& path, const std::string& imgui_ini) {
  doc_.session.imgui_ini = imgui_ini;
  save_session_file(path, doc_.session);
}

void Controller::open_session(const std::string& path) { apply_loaded_session(load_session_file(path), path); }

void Controller::apply_loaded_session(SessionLoad loaded, const std::string& path) {
  for (const auto& w : loaded.warnings) notice("Session " + path + ": " + w);
  auto recent = doc_.session.recent_folders;
  doc_.session = std::move(loaded.state);
  doc_.session.recent_folders = recent;
  if (!doc_.session.imgui_ini.empty()) restore_layout(doc_.session.imgui_ini);
  restore_report_of_session();
  std::error_code ec;
  if (!doc_.session.model_folder.empty() && !fs::is_directory(doc_.session.model_folder, ec)) {
    notice("Session " + path + ": the model folder " + doc_.session.model_folder +
           " is gone — kept the text, controls and view; opened another model.");
    const std::string found = find_default_model(assets_dir_);
    expected_hash_.clear();
    loading_session_ = true;
    if (!found.empty())
      open_model(found);
    else
      open_random_model();
    return;
  }
  expected_hash_ = doc_.session.model_hash;
  loading_session_ = true;
  doc_.generation.reset();
  if (doc_.session.model_folder.empty()) {
    open_random_model();
  } else {
    open_model(doc_.session.model_folder);
    // The session's generation, written again: the same settings and seed write the same tokens.
    if (!doc_.session.generation.generated.empty()) start_generation(doc_.session.generation.generated);
  }
}

void Controller::autosave_if_due(const std::string& imgui_ini) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_autosave_ < std::chrono::seconds(60)) return;
  last_autosave_ = now;
  try {
    save_session(autosave_path(), imgui_ini);
  } catch (const std::exception& e) {
    set_error("autosave", std::string("autosave: ") + e.what());
  }
}

// ---- the head report ----

void Controller::set_report(std::shared_ptr<const analysis::HeadReport> report) {
  raw_report_ = std::move(report);
  refresh_report();
}

void Controller::refresh_report() {
  const auto& a = doc_.session.analysis;
  doc_.report.reset();
  doc_.foreign_report.reset();
  doc_.foreign_reason.clear();
  if (!raw_report_) return;
  std::shared_ptr<const analysis::HeadReport> shown = raw_report_;
  if (a.thresholds_edited) {
    analysis::ReportSettings settings = raw_report_->settings;
    settings.positional_threshold = a.positional_threshold;
    settings.rare_threshold = a.rare_threshold;
    settings.syntactic_margin = a.syntactic_margin;
    shown = std::make_shared<const analysis::HeadReport>(with_thresholds(*raw_report_, settings));
  }
  // Never applied by position to another model's heads.
  const std::string why = doc_.model ? report_mismatch(*raw_report_, *doc_.model) : "no model is open";
  if (why.empty()) {
    doc_.report = std::move(shown);
  } else {
    doc_.foreign_report = std::move(shown);
    doc_.foreign_reason = why;
  }
}

void Controller::close_report() {
  auto& a = doc_.session.analysis;
  a.report_path.clear();
  a.report_hash.clear();
  a.report_embedded.clear();
  a.thresholds_edited = false;
  raw_report_.reset();
  refresh_report();
}

void Controller::open_report(const std::string& path) {
  auto report = DatasetJob::open_report(path);
  auto& a = doc_.session.analysis;
  a.report_path = fs::absolute(path).string();
  a.report_hash = core::hash_file(path);
  a.report_embedded.clear();
  set_report(std::move(report));
}

// A session names its report by path (and the hash the file had), or carries it embedded.
void Controller::restore_report_of_session() {
  auto& a = doc_.session.analysis;
  raw_report_.reset();
  doc_.report.reset();
  try {
    if (!a.report_embedded.empty()) {
      set_report(std::make_shared<const analysis::HeadReport>(
          analysis::head_report_from_json(nlohmann::json::parse(a.report_embedded))));
    } else if (!a.report_path.empty()) {
      const std::string hash = core::hash_file(a.report_path);
      if (!a.report_hash.empty() && hash != a.report_hash)
        notice("The head report " + a.report_path + " changed since the session was saved: showing it as it is now.");
      set_report(DatasetJob::open_report(a.report_path));
      a.report_hash = hash;
    }
  } catch (const std::exception& e) {
    notice(std::string("The session's head report could not be restored: ") + e.what());
  }
}

void Controller::run_dataset(const cmd::RunDataset& c) {
  if (c.files.empty()) throw std::runtime_error("no dataset files given");
  if (!doc_.model || doc_.model->folder.empty())
    throw std::runtime_error("a dataset run needs a model folder with a tokenizer (this model has random weights)");
  auto& a = doc_.session.analysis;
  a.dataset_files = c.files;
  a.metrics = c.metrics;
  a.limit = c.limit;
  DatasetRequest request;
  request.model_folder = doc_.model->folder;
  request.files = c.files;
  request.metrics = c.metrics;
  request.limit = c.limit;
  dataset_->start(request);
  doc_.dataset = {};
  doc_.dataset.running = true;
  doc_.dataset.phase = "starting";
}

void Controller::poll_dataset(bool& changed) {
  const DatasetJobStatus st = dataset_->status();
  auto& d = doc_.dataset;
  if (d.running != st.running || d.done != st.done || d.error != st.error || d.phase != st.phase) changed = true;
  d.running = st.running;
  d.done = st.done;
  d.total = st.total;
  d.elapsed_s = st.elapsed_seconds;
  d.eta_s = st.eta_seconds;
  d.phase = st.phase;
  d.error = st.error;
  if (dataset_->result_serial() == dataset_serial_) return;
  dataset_serial_ = dataset_->result_serial();
  auto report = dataset_->result();
  if (!report) return;
  auto& a = doc_.session.analysis;
  a.report_path.clear();
  a.report_hash.clear();
  a.report_embedded.clear();
  const std::string text = analysis::to_json(*report).dump();
  if (text.size() <= kEmbedLimit) {
    a.report_embedded = text;
  } else {
    // Too large to embed: kept beside the session state, named by its content.
    const std::string folder = (fs::path(state_dir()) / "reports").string();
    const std::string path = (fs::path(folder) / ("head_report-" + std::to_string(std::hash<std::string>{}(text)) + ".json")).string();
    try {
      fs::create_directories(folder);
      write_file_atomic(path, text + "\n");
      a.report_path = path;
      a.report_hash = core::hash_file(path);
    } catch (const std::exception& e) {
      notice(std::string("The head report could not be kept for sessions: ") + e.what());
    }
  }
  set_report(std::move(report));
  changed = true;
}

void Controller::convert_model(const cmd::ConvertModel& c) {
  if (!doc_.model || doc_.model->folder.empty())
    throw std::runtime_error("conversion needs a model folder (this model has random weights and no folder)");
  ConvertRequest r;
  r.model_folder = doc_.model->folder;
  r.to = c.to;
  r.groups = c.groups;
  r.key_dim = c.key_dim;
  r.out = c.out;
  convert_->start(r);
  open_converted_ = c.open;
  doc_.convert = convert_->status();
}

void Controller::poll_convert(bool& changed) {
  const ConvertJobStatus st = convert_->status();
  auto& d = doc_.convert;
  const bool finished = st.serial != d.serial;
  if (finished || d.running != st.running || d.phase != st.phase) changed = true;
  d = st;
  if (!finished) return;
  if (!st.error.empty()) {
    set_error("convert_model", st.error);
  } else if (!st.out.empty()) {
    clear_error("convert_model");
    notice("Converted into " + st.out + (st.summary.empty() ? "" : " (" + st.summary + ")"));
    if (open_converted_) open_model(st.out);
  }
}

}  // namespace headlab::app
