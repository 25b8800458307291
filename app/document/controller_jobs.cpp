// The controller's background jobs (app/work/): the dataset run, the Syntax view's sentence, a
// generation and a conversion — their commands, and the frame's poll that copies each job's status
// into the document and picks up what it published.
#include "app/document/controller.h"
#include "app/document/run_mapping.h"

#include "app/work/dataset_job.h"

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;

namespace headlab::app {
namespace {

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

// Copies a job's status into the document; true when a view would draw it differently.
bool take_status(JobStatus& shown, const JobStatus& now) {
  const bool changed = shown.running != now.running || shown.error != now.error;
  shown = now;
  return changed;
}

}  // namespace

std::string syntax_file_of(const AnalysisChoices& a) {
  if (!a.syntax_file.empty()) return a.syntax_file;
  for (const auto& f : a.dataset_files)
    if (is_conllu(f)) return f;
  return {};
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
  start_generation(doc_.model->folder, keep);
}

void Controller::on(const cmd::StopGeneration&) {
  generation_->stop();
}

void Controller::on(const cmd::SetPatching& c) {
  auto& p = doc_.session.patching.settings;
  if (c.metric && *c.metric != "logit-diff" && *c.metric != "logit" && *c.metric != "prob" && *c.metric != "kl")
    throw std::runtime_error("metric '" + *c.metric + "': logit-diff, logit, prob or kl");
  static const std::vector<std::string> sites = {"z", "pattern", "q", "k", "v", "resid", "mlp"};
  if (c.site && std::find(sites.begin(), sites.end(), *c.site) == sites.end())
    throw std::runtime_error("site '" + *c.site + "': z, pattern, q, k, v, resid or mlp");
  const bool counterfactual_changed = c.counterfactual && *c.counterfactual != p.counterfactual;
  if (c.counterfactual) p.counterfactual = *c.counterfactual;
  if (c.answer) p.answer = *c.answer;
  if (c.wrong) p.wrong = *c.wrong;
  if (c.metric) p.metric = *c.metric;
  if (c.site) p.site = *c.site;
  // Heads taken from the counterfactual follow the new one at once.
  if (counterfactual_changed && !doc_.session.patching.take.empty()) request_run();
}

void Controller::on(const cmd::RunPatching&) {
  const std::string folder = doc_.model ? doc_.model->folder : std::string();
  if (folder.empty()) throw std::runtime_error("patching needs a model folder (this model has random weights and no folder)");
  if (!doc_.snapshot) throw std::runtime_error("patching: run a text in the Input view first");
  if (doc_.session.patching.settings.counterfactual.empty()) throw std::runtime_error("patching needs a counterfactual text");
  // The text last run, as its tokens: an edit of the Input box not yet run is not measured.
  PatchingRequest r;
  r.model_folder = folder;
  r.clean_ids = doc_.snapshot->tokens.ids;
  r.clean_text = doc_.snapshot->input.text;
  r.settings = doc_.session.patching.settings;
  r.controls = doc_.session.controls;
  start_patching(std::move(r));
}

void Controller::start_patching(PatchingRequest request) {
  auto& p = doc_.session.patching;
  p.ran = true;
  p.measured_text = request.clean_text;
  p.measured_settings = request.settings;
  p.measured_controls = request.controls;
  patching_->start(std::move(request));
  doc_.patching_job = {true, ""};
}

void Controller::on(const cmd::StopPatching&) {
  patching_->stop();
}

void Controller::on(const cmd::TakeFromCounterfactual& c) {
  auto& take = doc_.session.patching.take;
  if (c.reset) {
    take.clear();
    request_run();
    return;
  }
  const AttentionSummary* a = doc_.model ? take_attention(*doc_.model) : nullptr;
  if (!a) throw std::runtime_error("no model");
  if (c.layer < 0 || c.layer >= a->layers || c.head < 0 || c.head >= a->output_heads)
    throw std::runtime_error("take_from_counterfactual: layer " + std::to_string(c.layer) + ", head " +
                             std::to_string(c.head) + " is not in the model (" + std::to_string(a->layers) +
                             " layers of " + std::to_string(a->output_heads) + " heads)");
  if (doc_.session.patching.settings.counterfactual.empty())
    throw std::runtime_error("take_from_counterfactual: set a counterfactual text first (the Patching view)");
  if (take.size() <= size_t(c.layer)) take.resize(size_t(c.layer) + 1);
  auto& row = take[size_t(c.layer)];
  if (row.size() <= size_t(c.head)) row.resize(size_t(c.head) + 1, 0.0f);
  row[size_t(c.head)] = std::clamp(c.weight, 0.0f, 1.0f);
  fit_take(take, *doc_.model);  // trailing zeros go, so that "nothing taken" is an empty list
  request_run();
}

void Controller::poll_patching(bool& changed) {
  const uint64_t serial = patching_->result_serial();
  if (take_status(doc_.patching_job, patching_->status())) changed = true;
  if (serial == patching_serial_) return;
  patching_serial_ = serial;
  doc_.patching = patching_->result();
  changed = true;
}

void Controller::on(const cmd::ConvertModel& c) {
  convert_model(c);
}

void Controller::on(const cmd::StopConvert&) {
  convert_->stop();
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
  doc_.dataset = dataset_->status();
}

void Controller::poll_dataset(bool& changed) {
  const DatasetJobStatus st = dataset_->status();
  auto& d = doc_.dataset;
  // Elapsed time and ETA alone redraw nothing: the views read them while drawing anyway.
  if (d.running != st.running || d.done != st.done || d.error != st.error || d.phase != st.phase) changed = true;
  d = st;
  if (dataset_->result_serial() == dataset_serial_) return;
  dataset_serial_ = dataset_->result_serial();
  auto report = dataset_->result();
  if (!report) return;
  keep_report_for_sessions(*report);
  set_report(std::move(report));
  changed = true;
}

void Controller::start_generation(const std::string& folder, const std::vector<int64_t>& keep) {
  const auto& g = doc_.session.generation;
  GenerationRequest r;
  r.model_folder = folder;
  r.settings = g.settings;
  r.controls = doc_.session.controls;
  r.keep = keep;
  generation_->start(r);
  doc_.generation_job = {true, ""};
}

void Controller::poll_generation(bool& changed) {
  const uint64_t serial = generation_->result_serial();
  if (take_status(doc_.generation_job, generation_->status())) changed = true;
  if (serial == generation_serial_) return;
  generation_serial_ = serial;
  doc_.generation = generation_->result();
  // What was written goes into the session.
  auto& generated = doc_.session.generation.generated;
  generated.clear();
  if (doc_.generation)
    for (const auto& step : doc_.generation->steps) generated.push_back(step.id);
  changed = true;
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
  doc_.syntax_job.running = true;
}

void Controller::poll_syntax(bool& changed) {
  sync_syntax();
  // The serial first: a result published after it is picked up by the next poll.
  const uint64_t serial = syntax_->result_serial();
  if (take_status(doc_.syntax_job, syntax_->status())) changed = true;
  if (serial == syntax_serial_) return;
  syntax_serial_ = serial;
  doc_.syntax = syntax_->result();
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
  r.device = doc_.session.device;
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

// Nothing of the window runs or waits: the live model, its run, and every job (the Syntax view's
// sentence counts as waiting while the session asks for another one).
void Controller::start_export(const std::string& path, std::function<void()> write) {
  export_->start(path, std::move(write));
  doc_.exporting = export_->status();
}

void Controller::poll_export(bool& changed) {
  const ExportJobStatus st = export_->status();
  auto& d = doc_.exporting;
  if (st.serial != d.serial) {
    changed = true;
    if (!st.error.empty()) {
      set_error("export", st.error);
    } else {
      clear_error("export");
      notice("wrote " + st.path);
    }
  }
  if (st.running != d.running) changed = true;
  d = st;
}

bool Controller::idle() const {
  if (doc_.syntax_job.running || doc_.generation_job.running || doc_.patching_job.running || doc_.convert.running ||
      doc_.exporting.running)
    return false;
  const auto wanted = syntax_request();
  if (wanted && (!syntax_requested_ || !same_request(*wanted, *syntax_requested_))) return false;
  return worker_.idle() && !doc_.dataset.running && doc_.model && doc_.snapshot && !pending_model_run_;
}

}  // namespace headlab::app
