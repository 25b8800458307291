// The Syntax view's run on the shipped default model and the UD EWT sample: its word-level argmax
// scores every relation exactly as the head report's syntactic measure does (the hits of one head
// summed over 20 sentences equal analysis::analyze's counts), gates change the maps it reads, and a
// bad request gives an error naming the file instead of a crash.
#include "test_common.h"

#include "analysis/analyze.h"
#include "analysis/dataset.h"
#include "app/work/syntax_job.h"
#include "app/layout/arc_layout.h"
#include "core/model/model.h"

#include <chrono>
#include <fstream>
#include <map>
#include <thread>

using namespace headlab;

namespace {

const std::string kModel = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
const std::string kUd = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu";

// Starts a request and waits (at most a minute) for its result or error.
std::shared_ptr<const app::SyntaxResult> run_once(app::SyntaxJob& job, const app::SyntaxRequest& request,
                                                  std::string* error = nullptr) {
  const uint64_t serial = job.result_serial();
  job.start(request);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((job.result_serial() == serial || job.status().running) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  REQUIRE(!job.status().running);
  if (error) *error = job.status().error;
  return job.result();
}

}  // namespace

TEST_CASE("the Syntax view's argmax arcs score relations exactly as the head report does", "[syntax-job]") {
  constexpr int kSentences = 20;
  auto model = core::load_model(kModel);
  analysis::AnalyzeOptions o;
  o.data = {kUd};
  o.settings.metrics = {"syntactic"};
  o.settings.limit = kSentences;
  o.examples = 0;
  const auto report = analysis::analyze(*model, o).report;
  REQUIRE(report.sentences == kSentences);

  // Layer 4 head 1 (the next-token head) and layer 1 head 0: relation hits summed over sentences.
  const std::vector<std::pair<int, int>> heads{{4, 1}, {1, 0}};
  const int heads_per_layer = model->config.encoder->attention.output_heads();
  std::map<std::pair<int, int>, std::map<std::string, app::RelationAccuracy>> summed;
  app::SyntaxJob job;
  app::SyntaxRequest request;
  request.model_folder = kModel;
  request.file = kUd;
  int words_checked = 0;
  for (int i = 0; i < kSentences; ++i) {
    request.index = i;
    std::string error;
    const auto result = run_once(job, request, &error);
    INFO("sentence " << i << ": " << error);
    REQUIRE(result);
    CHECK(result->index == i);
    CHECK(result->sentence_count == 100);
    REQUIRE(result->words.size() == result->heads.size());
    REQUIRE(result->argmax.at(headlab::core::Stack::Encoder).size() == 5);
    for (const auto& [layer, head] : heads) {
      const std::vector<int>* predicted = result->predicted(headlab::core::Stack::Encoder, layer, head);
      REQUIRE(predicted);
      REQUIRE(predicted->size() == result->words.size());
      for (const auto& r : app::sentence_relation_accuracy(result->heads, result->relations, *predicted)) {
        auto& s = summed[{layer, head}][r.relation];
        s.count += r.count;
        s.correct += r.correct;
      }
    }
    words_checked += static_cast<int>(result->words.size());
  }
  CHECK(words_checked > 200);

  const auto& relations = report.relations.at(headlab::core::Stack::Encoder);
  for (const auto& [lh, by_relation] : summed) {
    const size_t index = size_t(lh.first) * size_t(heads_per_layer) + size_t(lh.second);
    CHECK(by_relation.size() == relations.size());
    int64_t hits = 0;
    for (const auto& [name, stats] : relations) {
      INFO("layer " << lh.first << " head " << lh.second << " relation " << name);
      REQUIRE(by_relation.count(name));
      CHECK(by_relation.at(name).count == stats.count);
      CHECK(by_relation.at(name).correct == stats.dependent_to_head.at(index));
      hits += stats.dependent_to_head.at(index);
    }
    CHECK(hits > 0);  // the comparison is not between two rows of zeros
  }
}

TEST_CASE("the Syntax view's run applies gates and reports bad requests", "[syntax-job]") {
  app::SyntaxJob job;
  app::SyntaxRequest request;
  request.model_folder = kModel;
  request.file = kUd;
  request.index = 2;
  const auto open = run_once(job, request);
  REQUIRE(open);
  // Sentence 2 as DatasetReader gives it: the words are the CoNLL-U forms.
  analysis::DatasetReader reader({kUd});
  analysis::DatasetSentence s;
  for (int i = 0; i <= 2; ++i) REQUIRE(reader.next(s));
  CHECK(open->source == s.source);
  CHECK(open->heads == s.heads);
  REQUIRE(open->words.size() == s.word_spans.size());
  const auto ud = analysis::read_conllu(kUd);
  for (size_t w = 0; w < open->words.size(); ++w) CHECK(open->words[w] == ud[2].words[w].form);

  // Closing every head of layers 0–3 changes what layer 4 attends to.
  for (int l = 0; l < 4; ++l) request.controls.at(headlab::core::Stack::Encoder, l).gates.assign(8, 0.0f);
  const auto gated = run_once(job, request);
  REQUIRE(gated);
  bool differs = false;
  for (int h = 0; h < 8; ++h) differs |= *gated->predicted(headlab::core::Stack::Encoder, 4, h) != *open->predicted(headlab::core::Stack::Encoder, 4, h);
  CHECK(differs);
  // Layer 0 sees the same input either way: its gates act on its output only.
  CHECK(gated->argmax.at(headlab::core::Stack::Encoder)[0] == open->argmax.at(headlab::core::Stack::Encoder)[0]);

  std::string error;
  request.index = 100;
  CHECK(!run_once(job, request, &error));
  CHECK(error.find("has 100 sentences") != std::string::npos);
  request.index = 0;
  request.file = "/nonexistent/x.conllu";
  CHECK(!run_once(job, request, &error));
  CHECK(error.find("/nonexistent/x.conllu") != std::string::npos);
  request.file = kUd;
  request.model_folder = "/nonexistent-model";
  CHECK(!run_once(job, request, &error));
  CHECK(error.find("loading the model /nonexistent-model") != std::string::npos);
}

TEST_CASE("the Syntax view runs typed text with its parse, pasted or found in a file", "[syntax-job]") {
  app::SyntaxJob job;
  app::SyntaxRequest from_file;
  from_file.model_folder = kModel;
  from_file.file = kUd;
  from_file.index = 5;
  const auto file_result = run_once(job, from_file);
  REQUIRE(file_result);
  CHECK(!file_result->on_input);

  // The same sentence typed as the file spells it, its parse found in the file: the same arcs.
  app::SyntaxRequest typed;
  typed.model_folder = kModel;
  typed.text = file_result->text;
  typed.parse_file = kUd;
  REQUIRE(typed.on_input());
  std::string error;
  const auto found = run_once(job, typed, &error);
  INFO(error);
  REQUIRE(found);
  CHECK(found->on_input);
  CHECK(found->source == file_result->source);  // the file's sentence 5 is the one that spells it
  CHECK(found->words == file_result->words);
  CHECK(found->heads == file_result->heads);
  CHECK(found->argmax == file_result->argmax);

  // Pasted CoNLL-U: the sentence's own lines, typed with doubled spaces (the default's tokenizer
  // splits on whitespace, so the model reads the same tokens and every head the same arcs).
  std::ifstream in(kUd);
  std::string line, block;
  int sentence = -1;
  bool in_sentence = false;
  while (std::getline(in, line)) {
    if (line.empty()) {
      in_sentence = false;
      continue;
    }
    if (!in_sentence) ++sentence, in_sentence = true;
    if (sentence == 5) block += line + "\n";
  }
  REQUIRE(!block.empty());
  typed.parse_file.clear();
  typed.parse = block;
  std::string spaced;
  for (char c : file_result->text) spaced += c == ' ' ? std::string("  ") : std::string(1, c);
  typed.text = spaced;
  const auto pasted = run_once(job, typed, &error);
  INFO(error);
  REQUIRE(pasted);
  CHECK(pasted->text == spaced);
  CHECK(pasted->words == file_result->words);
  CHECK(pasted->argmax == file_result->argmax);

  // A parse of another sentence: the error says which word does not match.
  typed.text = "Completely different words here .";
  CHECK(!run_once(job, typed, &error));
  CHECK(error.find("word 1 '" + file_result->words[0] + "'") != std::string::npos);
  typed.parse.clear();
  typed.parse_file = kUd;
  CHECK(!run_once(job, typed, &error));
  CHECK(error.find("none of the 100 sentences of " + kUd + " spells the input") != std::string::npos);
}
