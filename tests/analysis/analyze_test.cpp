// Datasets (CoNLL-U and plain text, words ↔ tokens through offsets), token frequency ranks, the
// whole `analyze` pass (recounted independently from the traces), shards that merge into one pass,
// stopping early, and the `headlab analyze` / `merge` / `count-tokens` commands.
#include "test_common.h"
#include "shared_data.h"

#include "analysis/analyze.h"
#include "analysis/dataset.h"
#include "analysis/head_report.h"
#include "analysis/head_stats.h"
#include "analysis/rollout.h"
#include "core/model/safetensors_torch.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/stacks.h"
#include "core/token_counts.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/trainer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include <unistd.h>

using namespace headlab;
namespace fs = std::filesystem;

namespace {

const char* kConllu =
    "# sent_id = s1\n"
    "# text = The cat sat.\n"
    "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
    "2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n"
    "3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\tSpaceAfter=No\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n"
    "\n"
    "# sent_id = s2\n"
    "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tdo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n"
    "2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_\n"
    "3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\t_\n"
    "3.1\tgone\tgo\tVERB\tVB\t_\t_\t_\t_\t_\n"
    "4\thome\thome\tADV\tRB\t_\t3\tdobj\t_\t_\n";

// The words of the tiny model's text and of the test sentences.
const std::vector<std::string> kTinyWords = {"the", "cat", "sat", "on", "mat", "dog", "ate", "a", "bone", "home", "go", "red"};

// A small WordPiece model (random weights) whose vocabulary splits rare words into pieces.
struct TinyModel {
  test::TempDir dir{"analyze-model"};
  std::shared_ptr<core::Model> model;
  std::string text;
  TinyModel() {
    const auto& words = kTinyWords;
    for (size_t i = 0; i < words.size(); ++i)
      for (size_t n = 0; n < 10 + 3 * i; ++n) text += words[i] + (n % 9 == 8 ? "\n" : " ");
    text += "\nunbelievable things happen .\n";
    core::train::TokenizerTrainOptions to;
    to.vocab_size = 300;
    std::ofstream(dir.str("tokenizer.json")) << core::train::train_tokenizer({text}, to).dump();
    auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json");
    config.vocab_size = static_cast<int>(core::Tokenizer::load(dir.str("tokenizer.json"))->vocab_size());
    config.encoder->layers = 2;
    auto random = core::make_random_model(config, 3);
    core::save_model(*random, dir.str("model"), "F32", dir.str("tokenizer.json"));
    model = core::load_model(dir.str("model"));
  }
};

// The tiny model's config with talking heads 4/4/4 (Shazeer et al. 2020), random weights, its tokenizer.
std::shared_ptr<core::Model> talking_heads_twin(const TinyModel& tiny, uint64_t seed) {
  auto config = tiny.model->config;
  config.encoder->attention.talking_heads = core::TalkingHeads{4, 4, 4};
  auto model = core::make_random_model(config, seed);
  model->tokenizer = tiny.model->tokenizer;
  return model;
}

// Sentences of one-token words with a tree: every word attaches to the first.
std::string tree_file(const std::vector<std::string>& words, int sentences) {
  std::string conllu;
  for (int s = 0; s < sentences; ++s) {
    const int W = 3 + s % 7;
    conllu += "# sent_id = s" + std::to_string(s) + "\n";
    for (int w = 0; w < W; ++w) {
      const std::string& form = words[(s * 5 + w * 7) % words.size()];
      conllu += std::to_string(w + 1) + "\t" + form + "\t" + form + "\tX\tX\t_\t" + (w == 0 ? "0" : "1") + "\t" +
                (w == 0 ? "root" : w % 2 ? "nsubj" : "obj") + "\t_\t_\n";
    }
    conllu += "\n";
  }
  return conllu;
}

nlohmann::json without_shard(nlohmann::json j) {
  j["settings"].erase("shard");
  return j;
}

// Equal JSON, where floating-point numbers may differ by summation order (relative `tol`); integers,
// strings and structure exactly.
bool json_near(const nlohmann::json& a, const nlohmann::json& b, const std::string& path = "", double tol = 1e-12) {
  if (a.is_number_float() || b.is_number_float()) {
    if (!a.is_number() || !b.is_number()) return false;
    const double x = a.get<double>(), y = b.get<double>();
    if (std::abs(x - y) <= tol * std::max({1.0, std::abs(x), std::abs(y)})) return true;
    UNSCOPED_INFO(path << ": " << x << " vs " << y);
    return false;
  }
  if (a.type() != b.type() || a.size() != b.size()) {
    UNSCOPED_INFO(path << ": " << a.dump().substr(0, 200) << " vs " << b.dump().substr(0, 200));
    return false;
  }
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!b.contains(it.key()) || !json_near(it.value(), b.at(it.key()), path + "/" + it.key(), tol)) return false;
    return true;
  }
  if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!json_near(a[i], b[i], path + "/" + std::to_string(i), tol)) return false;
    return true;
  }
  if (a != b) UNSCOPED_INFO(path << ": " << a.dump() << " vs " << b.dump());
  return a == b;
}

}  // namespace

TEST_CASE("CoNLL-U sentences keep gold words, spacing and relations", "[analysis][dataset]") {
  test::TempDir dir("conllu");
  const std::string path = dir.str("x.conllu");
  std::ofstream(path) << kConllu;
  auto sentences = analysis::read_conllu(path);
  REQUIRE(sentences.size() == 2);
  CHECK(sentences[0].id == "s1");
  CHECK(sentences[0].source == path + ":3");
  CHECK(sentences[1].words[3].relation == "dobj");  // as written; normalize_relation reads it as obj
  CHECK(analysis::normalize_relation("dobj", false) == "obj");
  CHECK(analysis::normalize_relation("obl:npmod", true) == "obl");

  analysis::DatasetReader reader({path});
  analysis::DatasetSentence s;
  REQUIRE(reader.next(s));
  CHECK(s.text == "The cat sat.");  // SpaceAfter=No joins "sat" and "."
  CHECK(s.word_spans == std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {4, 7}, {8, 11}, {11, 12}});
  CHECK(s.heads == std::vector<int>{1, 2, -1, 2});
  REQUIRE(reader.next(s));
  CHECK(s.text == "don't go home");  // the multi-word token's words are written together
  CHECK(s.word_spans[1] == std::pair<int64_t, int64_t>{2, 5});
  CHECK(s.relations[3] == "dobj");
  CHECK_FALSE(reader.next(s));

  SECTION("words that do not spell their multi-word token are written apart; .conll files and a BOM") {
    std::ofstream(dir.str("es.conll")) << "\xEF\xBB\xBF# sent_id = es1\n"
                                           "1\tVino\tvenir\tVERB\t_\t_\t0\troot\t_\t_\n"
                                           "2-3\tdel\t_\t_\t_\t_\t_\t_\t_\t_\n"
                                           "2\tde\tde\tADP\t_\t_\t4\tcase\t_\t_\n"
                                           "3\tel\tel\tDET\t_\t_\t4\tdet\t_\t_\n"
                                           "4\tpueblo\tpueblo\tNOUN\t_\t_\t1\tobl\t_\t_\n\n";
    analysis::DatasetReader es({dir.str("es.conll")});
    analysis::DatasetSentence e;
    REQUIRE(es.next(e));
    CHECK(e.text == "Vino de el pueblo");
    CHECK(e.heads == std::vector<int>{-1, 3, 3, 0});
    CHECK(analysis::expand_dataset_paths({dir.str()}).size() == 2);  // x.conllu and es.conll
  }
  SECTION("malformed files name the file and line") {
    std::ofstream(dir.str("bad.conllu")) << "1\tThe\tthe\tDET\n";
    CHECK_THROWS_WITH(analysis::read_conllu(dir.str("bad.conllu")),
                      Catch::Contains("bad.conllu:1") && Catch::Contains("10 tab-separated columns"));
    std::ofstream(dir.str("head.conllu")) << "1\tThe\tthe\tDET\tDT\t_\tx\tdet\t_\t_\n";
    CHECK_THROWS_WITH(analysis::read_conllu(dir.str("head.conllu")), Catch::Contains("head.conllu:1") && Catch::Contains("'x'"));
    std::ofstream(dir.str("range.conllu")) << "1\tThe\tthe\tDET\tDT\t_\t7\tdet\t_\t_\n\n";
    CHECK_THROWS_WITH(analysis::read_conllu(dir.str("range.conllu")), Catch::Contains("head is 7"));
    // A word headed by itself, and two words heading each other: not a tree.
    std::ofstream(dir.str("self.conllu")) << "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
                                          << "2\tcat\tcat\tNOUN\tNN\t_\t2\troot\t_\t_\n\n";
    CHECK_THROWS_WITH(analysis::read_conllu(dir.str("self.conllu")),
                      Catch::Contains("self.conllu") && Catch::Contains("word 1's heads never reach the root (0): 1 → 2 → 2"));
    std::ofstream(dir.str("cycle.conllu")) << "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
                                           << "2\tcat\tcat\tNOUN\tNN\t_\t1\tnsubj\t_\t_\n\n";
    CHECK_THROWS_WITH(analysis::read_conllu(dir.str("cycle.conllu")), Catch::Contains("a word headed by itself or a cycle"));
    CHECK_THROWS_WITH(analysis::read_conllu(dir.str("none.conllu")), Catch::Contains("none.conllu"));
  }
}

TEST_CASE("plain text and folders are read as datasets", "[analysis][dataset]") {
  test::TempDir dir("plain");
  std::ofstream(dir.str("b.txt")) << "second file\n";
  std::ofstream(dir.str("a.txt")) << "  two  words \n\nthird line here\n";
  std::ofstream(dir.str("notes.md")) << "not data\n";
  const auto files = analysis::expand_dataset_paths({dir.str()});
  CHECK(files == std::vector<std::string>{dir.str("a.txt"), dir.str("b.txt")});
  analysis::DatasetReader reader(files);
  std::vector<std::string> sources;
  for (analysis::DatasetSentence s; reader.next(s);) {
    sources.push_back(s.source);
    CHECK_FALSE(s.has_tree());
    if (sources.size() == 1) CHECK(s.word_spans == std::vector<std::pair<int64_t, int64_t>>{{2, 5}, {7, 12}});
  }
  CHECK(sources == std::vector<std::string>{dir.str("a.txt") + ":1", dir.str("a.txt") + ":3", dir.str("b.txt") + ":1"});
  CHECK_THROWS_WITH(analysis::expand_dataset_paths({dir.str("missing.txt")}), Catch::Contains("missing.txt"));
}

TEST_CASE("subword tokens belong to the word that holds their first character", "[analysis][dataset]") {
  TinyModel tiny;
  const auto& tok = *tiny.model->tokenizer;
  analysis::DatasetSentence s;
  s.text = "the unbelievable dog";
  s.word_spans = {{0, 3}, {4, 16}, {17, 20}};
  const auto ts = analysis::tokenize_sentence(tiny.model->config, tok, s);
  REQUIRE(ts.ids.size() > 5);  // [CLS] the un… pieces dog [SEP]
  CHECK(ts.word_of.front() == -1);
  CHECK(ts.word_of.back() == -1);
  CHECK(ts.word_of[1] == 0);
  for (size_t t = 2; t + 2 < ts.ids.size(); ++t) CHECK(ts.word_of[t] == 1);
  CHECK(ts.word_of[ts.ids.size() - 2] == 2);
}

TEST_CASE("a token of whitespace only is not special but belongs to no word", "[analysis][dataset]") {
  auto gpt2 = core::Tokenizer::load(std::string(HEADLAB_SOURCE_DIR) + "/tests/data/tokenizers/gpt2/tokenizer.json");
  analysis::DatasetSentence s;
  s.text = "a  b";  // GPT-2 splits the double space into a lone "Ġ" and "Ġb"
  s.word_spans = {{0, 1}, {3, 4}};
  core::ModelConfig encoder;  // an encoder reads the text as the tokenizer frames it: GPT-2 adds nothing
  encoder.vocab_size = 50257;
  const auto ts = analysis::tokenize_sentence(encoder, *gpt2, s);
  REQUIRE(ts.ids.size() == 3);
  CHECK(ts.word_of == std::vector<int>{0, -1, 1});
  CHECK(ts.special == std::vector<bool>{false, false, false});
  // A tokenizer whose template puts a begin token first (a Llama class): special, in no word.
  auto framing = core::Tokenizer::from_json(R"({"model": {"type": "WordLevel", "unk_token": "<unk>",
      "vocab": {"<unk>": 0, "<s>": 1, "a": 2, "b": 3}}, "pre_tokenizer": {"type": "Whitespace"},
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
      {"Sequence": {"id": "A", "type_id": 0}}], "pair": [],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}})");
  core::ModelConfig decoder;
  decoder.vocab_size = 4;
  decoder.kind = core::StackKind::Decoder;
  decoder.family = "llama";
  const auto after_bos = analysis::tokenize_sentence(decoder, *framing, s);
  REQUIRE(after_bos.ids.size() == 3);
  CHECK(after_bos.ids[0] == 1);
  CHECK(after_bos.word_of == std::vector<int>{-1, 0, 1});
  CHECK(after_bos.special == std::vector<bool>{true, false, false});
}

TEST_CASE("frequency ranks are competition ranks, unseen ids rank last", "[analysis][dataset]") {
  TinyModel tiny;
  const auto& tok = *tiny.model->tokenizer;
  core::TokenCounts counts;
  counts.counts.assign(static_cast<size_t>(tok.vocab_size()), 0);
  const int64_t the = *tok.token_to_id("the"), cat = *tok.token_to_id("cat"), dog = *tok.token_to_id("dog");
  counts.counts[the] = 5;
  counts.counts[cat] = 3;
  counts.counts[dog] = 3;
  const auto ranks = core::frequency_ranks(counts, tok);
  CHECK(ranks[the] == 1);
  CHECK(ranks[cat] == 2);
  CHECK(ranks[dog] == 2);
  CHECK(ranks[*tok.token_to_id("red")] == 4);  // three ids are more frequent
  CHECK(ranks[*tok.cls_id()] == ranks[*tok.token_to_id("red")]);  // never in text: as rare as any unseen id
  core::TokenCounts text_counts;
  core::count_tokens(tok, "the cat the", text_counts);
  CHECK(text_counts.total == 3);
  CHECK(text_counts.counts[the] == 2);
}

TEST_CASE("analyze matches a direct count over the traces", "[analysis][analyze]") {
  // Voita et al. 2019: recounted with plain loops from core::run's maps on sentences of one-token words.
  TinyModel tiny;
  auto& model = *tiny.model;
  const auto& tok = *model.tokenizer;
  const auto& words = kTinyWords;
  test::TempDir data("analyze-data");
  std::ofstream(data.str("x.conllu")) << tree_file(words, 12);
  std::ofstream(data.str("freq.txt")) << tiny.text;
  analysis::AnalyzeOptions o;
  o.data = {data.str("x.conllu")};
  o.freq_files = {data.str("freq.txt")};
  o.settings.metrics = {"confidence", "positional", "rare", "syntactic"};
  o.settings.rare_min_rank = 0;  // a tiny vocabulary: every sentence counts
  const auto result = analysis::analyze(model, o);
  const auto& r = result.report;
  CHECK(r.sentences == 12);
  CHECK(r.settings.frequency_source == "freq-files");

  const auto ranks = core::frequency_ranks(core::count_tokens_in_files(tok, {data.str("freq.txt")}), tok);
  const int layers = 2, heads = model.config.encoder->attention.heads;
  std::vector<std::map<int, int>> offsets(layers * heads);
  std::vector<int> rare(layers * heads, 0);
  std::vector<double> confidence(layers * heads, 0);
  std::vector<int> nsubj_hits(layers * heads, 0);
  int queries = 0, nsubj = 0;
  analysis::DatasetReader reader({data.str("x.conllu")});
  for (analysis::DatasetSentence s; reader.next(s);) {
    const auto ids = tok.encode(s.text, true).ids;
    const int T = static_cast<int>(ids.size());
    REQUIRE(T == static_cast<int>(s.word_spans.size()) + 2);  // [CLS] words [SEP]
    core::RunRequest request;
    request.ids = ids;
    request.capture = core::kCaptureWeights;
    auto trace = core::run(model, request);
    int rarest = 1;
    for (int t = 2; t < T - 1; ++t)
      if (ranks[ids[t]] > ranks[ids[rarest]]) rarest = t;
    for (int l = 0; l < layers; ++l) {
      auto W = trace->encoder.layers[l].self.weights.to(torch::kFloat64).contiguous();
      auto a = W.accessor<double, 3>();
      for (int h = 0; h < heads; ++h) {
        const int i = l * heads + h;
        for (int q = 1; q < T - 1; ++q) {
          int top = 1;
          for (int k = 2; k < T - 1; ++k)
            if (a[h][q][k] > a[h][q][top]) top = k;
          ++offsets[i][top - q];
          rare[i] += top == rarest;
          confidence[i] += a[h][q][top];
        }
        // nsubj arcs: word w (odd) → word 0; dependent→head reads word w's row, self excluded.
        for (int w = 1; w < T - 2; w += 2) {
          int top = -1;
          double best = 0;
          for (int k = 1; k < T - 1; ++k)
            if (k != w + 1 && a[h][w + 1][k] > best) best = a[h][w + 1][k], top = k - 1;
          nsubj_hits[i] += top == 0;
        }
      }
    }
    queries += T - 2;
    nsubj += (T - 2) / 2;
  }
  bool some_rare = false;
  for (int i = 0; i < layers * heads; ++i) {
    INFO("head " << i);
    const auto& h = *r.find(headlab::core::Stack::Encoder, i / heads, i % heads);
    CHECK(h.queries == queries);
    CHECK(h.confidence == Approx(confidence[i] / queries).epsilon(1e-5));
    CHECK(h.offsets == std::map<int, int64_t>(offsets[i].begin(), offsets[i].end()));
    CHECK(h.rare_share == Approx(double(rare[i]) / queries));
    some_rare |= rare[i] > 0;
    for (const auto& s : h.syntactic)
      if (s.relation == "nsubj" && s.direction == "dependent->head") {
        CHECK(s.count == nsubj);
        CHECK(s.accuracy == Approx(double(nsubj_hits[i]) / nsubj));
      }
  }
  CHECK(some_rare);
}

TEST_CASE("entropy, mean distance and sink share match a direct computation over the traces", "[analysis][analyze]") {
  // Clark et al. 2019 §3 (entropy), Vig & Belinkov 2019 (distance), the first token's share: recomputed
  // in float64 with plain loops from core::run's maps, over the non-special queries and every key.
  TinyModel tiny;
  test::TempDir data("analyze-rows");
  const auto& words = kTinyWords;
  std::ofstream(data.str("x.conllu")) << tree_file(words, 9);
  for (const int variant : {0, 1, 2}) {
    const bool causal = variant >= 1, sinks = variant == 2;
    DYNAMIC_SECTION((sinks    ? "a causal decoder with learned sinks: the sink is one more outcome, without a position"
                     : causal ? "a causal decoder: the uniform bound counts the keys a query sees"
                              : "an encoder")) {
      auto config = tiny.model->config;
      if (causal) {
        config.kind = core::StackKind::Decoder;
        config.decoder = config.encoder;
        config.encoder.reset();
        config.objective = "causal";
        config.decoder->attention.sinks = sinks;
      }
      auto model = core::make_random_model(config, 11);
      model->tokenizer = tiny.model->tokenizer;
      if (sinks) {  // sink logits of a few units: shares from a few percent to most of a row
        torch::NoGradGuard no_grad;
        torch::manual_seed(11);
        for (auto& p : model->module->named_parameters())
          if (p.key().find("attn.sinks") != std::string::npos) p.value().normal_(1.0, 2.0);
      }
      analysis::AnalyzeOptions o;
      o.data = {data.str("x.conllu")};
      o.settings.metrics = {"entropy", "distance", "sink"};
      const auto r = analysis::analyze(*model, o).report;
      REQUIRE(r.sentences == 9);
      const auto stack = causal ? headlab::core::Stack::Decoder : headlab::core::Stack::Encoder;
      const int layers = 2, heads = 4;
      std::vector<double> entropy(layers * heads), bound(layers * heads), distance(layers * heads), sink(layers * heads);
      int queries = 0;
      analysis::DatasetReader reader({data.str("x.conllu")});
      for (analysis::DatasetSentence s; reader.next(s);) {
        // The encoder reads [CLS] words [SEP]; a HeadLab causal model the bare words (core::model_encoding).
        const bool framed = !causal;
        const auto ids = model->tokenizer->encode(s.text, framed).ids;
        const int T = static_cast<int>(ids.size());
        const int first = framed ? 1 : 0, end = framed ? T - 1 : T;  // the queries: the words
        core::RunRequest request;
        request.ids = ids;
        request.capture = core::kCaptureWeights;
        auto trace = core::run(*model, request);
        for (int l = 0; l < layers; ++l) {
          const auto& stages = core::stages_of(*trace, stack, l);
          auto a = stages.weights.to(torch::kFloat64).contiguous();
          auto w = a.accessor<double, 3>();
          // [h, T] the learned sink's share of each row, as the engine computes it
          const auto shares = sinks ? stages.sink_share.to(torch::kFloat64).contiguous() : torch::zeros({heads, T}, torch::kFloat64);
          auto share = shares.accessor<double, 2>();
          for (int h = 0; h < heads; ++h)
            for (int q = first; q < end; ++q) {
              const int i = l * heads + h;
              double d = 0;
              for (int k = 0; k < T; ++k) {
                const double x = float(w[h][q][k]);  // the float32 map the measures read
                if (x > 0) entropy[i] -= x * std::log(x);
                d += x * std::abs(q - k);
              }
              const double s_share = share[h][q];
              if (s_share > 0) entropy[i] -= s_share * std::log(s_share);
              distance[i] += d / (1.0 - s_share);  // the sink has no position: the tokens' share renormalised
              // the keys the query may attend to, and the sink
              bound[i] += std::log(double((causal ? q + 1 : T) + (sinks ? 1 : 0)));
              sink[i] += float(w[h][q][0]);
            }
        }
        queries += end - first;
      }
      for (int i = 0; i < layers * heads; ++i) {
        INFO("layer " << i / heads << " head " << i % heads);
        const auto& h = *r.find(stack, i / heads, i % heads);
        // With sinks the measures take the share as 1 − the row's float32 sum: within float32's rounding.
        const double tolerance = sinks ? 1e-5 : 1e-9;
        CHECK(h.values.at("entropy") == Approx(entropy[i] / queries).epsilon(tolerance));
        CHECK(h.values.at("entropy_baseline") == Approx(bound[i] / queries).epsilon(1e-12));
        CHECK(h.values.at("distance") == Approx(distance[i] / queries).epsilon(tolerance));
        CHECK(h.values.at("sink") == Approx(sink[i] / queries).epsilon(1e-9));
        CHECK(h.values.at("entropy") < h.values.at("entropy_baseline"));
      }
      if (sinks) {  // the notes say how each measure counts the sink
        for (const char* m : {"entropy", "distance", "sink"})
          CHECK(std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) {
            return n.rfind(std::string(m) + " with learned attention sinks: ", 0) == 0;
          }));
      }
      // The report's JSON and CSV carry them; a report written before the measures existed still reads.
      auto j = analysis::to_json(r);
      CHECK(j["heads"][0]["entropy"].get<double>() == Approx(r.heads[0].values.at("entropy")));
      CHECK(j["heads"][0]["sink"].get<double>() == Approx(r.heads[0].values.at("sink")));
      CHECK(analysis::head_report_from_json(j).heads[5].values.at("distance") == r.heads[5].values.at("distance"));
      for (auto& e : j["heads"])
        for (const char* m : {"entropy", "distance", "sink"})
          for (const char* part : {"_sum", "_baseline_sum", "_rows", "_invalid_rows"}) e["stats"].erase(std::string(m) + part);
      j["settings"]["metrics"] = {"confidence"};
      const auto old = analysis::head_report_from_json(j);
      CHECK(old.heads[0].values.count("entropy") == 0);
    }
  }
}

TEST_CASE("entropy, distance and sink are left empty for maps that are not distributions, and say why", "[analysis][analyze]") {
  // Talking heads with a P_w that subtracts one head from another: U's rows have negative weights and
  // no entropy. The softmax output W is a distribution again.
  TinyModel tiny;
  test::TempDir data("analyze-rows-u");
  const auto& words = kTinyWords;
  std::ofstream(data.str("x.conllu")) << tree_file(words, 4);
  auto model = talking_heads_twin(tiny, 5);
  const auto& config = model->config;
  {
    torch::NoGradGuard no_grad;
    for (int l = 0; l < config.encoder->layers; ++l) {
      auto& post = model->module->block(headlab::core::Stack::Encoder, l)->attn->post_mix;
      post.copy_(torch::eye(4));  // U = W: every row a distribution …
      if (l == 0) post[1][0] = -1.0f;  // … but U_0 = W_0 − W_1 in layer 0
    }
  }
  analysis::AnalyzeOptions o;
  o.data = {data.str("x.conllu")};
  o.settings.metrics = {"entropy", "distance", "sink"};
  const auto values = analysis::analyze(*model, o).report;
  const auto& mixed = *values.find(headlab::core::Stack::Encoder, 0, 0);
  CHECK(mixed.values.count("entropy") == 0);
  CHECK(mixed.values.count("distance") == 0);
  CHECK(mixed.values.count("sink") == 0);
  CHECK(values.find(headlab::core::Stack::Encoder, 0, 1)->values.count("entropy") == 1);  // its neighbour is a distribution
  CHECK(values.find(headlab::core::Stack::Encoder, 1, 0)->values.count("entropy") == 1);
  CHECK(analysis::to_json(values)["heads"][0]["entropy"].is_null());
  CHECK(std::any_of(values.notes.begin(), values.notes.end(), [](const std::string& n) {
    return n.rfind("entropy: left empty for 1 heads whose maps are not probability distributions", 0) == 0;
  }));
  o.settings.stage = core::Stage::W;
  const auto softmax = analysis::analyze(*model, o).report;
  CHECK(softmax.find(headlab::core::Stack::Encoder, 0, 0)->values.count("entropy") == 1);
  CHECK(softmax.notes.empty());
}

TEST_CASE("shards merge into exactly the one-pass report", "[analysis][analyze]") {
  TinyModel tiny;
  test::TempDir data("analyze-shards");
  const auto& words = kTinyWords;
  std::ofstream(data.str("x.conllu")) << tree_file(words, 15);
  analysis::AnalyzeOptions o;
  o.data = {data.str("x.conllu")};
  o.settings.metrics = {"confidence", "positional", "rare", "syntactic"};
  o.settings.rare_min_rank = 3;
  o.settings.min_relation_count = 1;
  const auto one = analysis::analyze(*tiny.model, o).report;
  CHECK(one.settings.frequency_source == "dataset");  // the folder has no token_counts.json
  std::vector<analysis::HeadReport> shards;
  for (int i = 0; i < 3; ++i) {
    o.settings.shard_index = i;
    o.settings.shard_count = 3;
    shards.push_back(analysis::analyze(*tiny.model, o).report);
    CHECK(shards.back().sentences == 5);
  }
  // Through JSON, as `headlab merge` reads them.
  auto merged = analysis::head_report_from_json(analysis::to_json(shards[0]));
  for (int i = 1; i < 3; ++i) analysis::merge_into(merged, analysis::head_report_from_json(analysis::to_json(shards[i])));
  CHECK(json_near(without_shard(analysis::to_json(merged)), without_shard(analysis::to_json(one))));
  CHECK(analysis::to_json(one)["heads"][3]["stats"]["queries"].get<int64_t>() > 0);

  SECTION("stopping early keeps what is complete, marked partial") {
    o.settings.shard_index = 0;
    o.settings.shard_count = 1;
    o.progress = [](int64_t done, int64_t) { return done < 4; };
    const auto partial = analysis::analyze(*tiny.model, o).report;
    CHECK(partial.partial);
    CHECK(partial.sentences == 4);
  }
  SECTION("sentences longer than allowed are skipped and counted") {
    o.settings.shard_index = 0;
    o.settings.shard_count = 1;
    o.max_tokens = 6;
    const auto r = analysis::analyze(*tiny.model, o).report;
    CHECK(r.skipped > 0);
    CHECK(r.sentences + r.skipped == 15);
    CHECK(r.skipped_reasons.at("longer than 6 tokens") == r.skipped);
  }
  SECTION("merging reports of different models is refused") {
    auto other = shards[1];
    other.model = "elsewhere";
    CHECK_THROWS_WITH(analysis::merge_into(shards[0], other), Catch::Contains("model"));
  }
  SECTION("shards measured under other thresholds or probe settings are refused by name") {
    // Not merged under the first shard's values: the roles would follow thresholds one shard never used.
    auto other = shards[1];
    other.settings.positional_threshold = 0.5;
    CHECK_THROWS_WITH(analysis::merge_into(shards[0], other), Catch::Contains("--positional-threshold (0.9 vs 0.5)"));
    other = shards[1];
    other.settings.copying_threshold = -0.25;
    CHECK_THROWS_WITH(analysis::merge_into(shards[0], other), Catch::Contains("--copying-threshold (0.5 vs -0.25)"));
    other = shards[1];
    other.settings.min_relation_count = 7;
    CHECK_THROWS_WITH(analysis::merge_into(shards[0], other), Catch::Contains("--min-relation-count (1 vs 7)"));
    other = shards[1];
    other.settings.probe_seed = 3;
    CHECK_THROWS_WITH(analysis::merge_into(shards[0], other), Catch::Contains("--probe-seed (0 vs 3)"));
    other = shards[1];
    other.settings.lrp_tolerance = 2e-2;
    CHECK_THROWS_WITH(analysis::merge_into(shards[0], other), Catch::Contains("the LRP tolerance (0.001 vs 0.02)"));
    // Which sentences and tokens were measured, named too.
    other = shards[1];
    other.settings.limit = 40;
    CHECK_THROWS_WITH(analysis::merge_into(shards[0], other), Catch::Contains("--limit (0 vs 40)"));
    other = shards[1];
    other.settings.stage = headlab::core::Stage::W;
    CHECK_THROWS_WITH(analysis::merge_into(shards[0], other), Catch::Contains("--stage (values vs softmax)"));
    other = shards[1];
    other.settings.strip_subtypes = !shards[0].settings.strip_subtypes;
    CHECK_THROWS_WITH(analysis::merge_into(shards[0], other), Catch::Contains("--strip-subtypes (false vs true)"));
  }
  SECTION("a shard given twice, a missing shard or another shard count is refused") {
    CHECK_THROWS_WITH(analysis::merge_shards({shards[0], shards[1], shards[1]}), Catch::Contains("given twice"));
    CHECK_THROWS_WITH(analysis::merge_shards({shards[0], shards[2]}), Catch::Contains("shard(s) 1 of 3 are missing"));
    const auto partial = analysis::merge_shards({shards[0], shards[2]}, /*allow_missing=*/true);
    CHECK(partial.sentences == 10);
    CHECK(std::count(partial.notes.begin(), partial.notes.end(), "merged without shard(s) 1 of 3") == 1);
    // Without shard 0 the induction probe (which shard 0 alone runs) is said to be missing, where it ran.
    auto probed = shards;
    for (auto& shard : probed) shard.settings.metrics.push_back("induction");
    const auto no_probe = analysis::merge_shards({probed[1], probed[2]}, true);
    CHECK(std::count(no_probe.notes.begin(), no_probe.notes.end(),
                     "the induction probe is not measured: shard 0, which alone runs it, is missing") == 1);
    CHECK(std::count(partial.notes.begin(), partial.notes.end(),
                     "the induction probe is not measured: shard 0, which alone runs it, is missing") == 0);
    // A report that lacks shards is partial, says which, and keeps saying so through its file.
    CHECK(partial.partial);
    CHECK(partial.missing_shards == std::vector<int>{1});
    const auto reread = analysis::head_report_from_json(analysis::to_json(partial));
    CHECK(reread.partial);
    CHECK(reread.missing_shards == std::vector<int>{1});
    CHECK_THAT(analysis::to_markdown(partial), Catch::Contains("shard(s) 1 missing"));
    auto whole = analysis::merge_shards(shards);
    CHECK(whole.settings.shard_count == 1);
    CHECK_THROWS_WITH(analysis::merge_shards({shards[0], one}), Catch::Contains("shard count"));
  }
}

TEST_CASE("sentences run in batches give the one-at-a-time report", "[analysis][analyze]") {
  TinyModel tiny;
  test::TempDir data("analyze-batch");
  std::ofstream(data.str("x.conllu")) << tree_file(kTinyWords, 15);
  analysis::AnalyzeOptions o;
  o.data = {data.str("x.conllu")};
  o.settings.metrics = {"confidence", "positional", "rare", "syntactic", "entropy"};
  o.settings.rare_min_rank = 3;
  o.settings.min_relation_count = 1;
  o.max_tokens = 9;  // some sentences are skipped between the batched ones
  const auto one = analysis::analyze(*tiny.model, o).report;
  REQUIRE(one.skipped > 0);
  for (const int batch : {2, 4, 16}) {
    INFO("batch " << batch);
    o.batch = batch;
    const auto batched = analysis::analyze(*tiny.model, o).report;
    CHECK(batched.sentences == one.sentences);
    CHECK(batched.skipped == one.skipped);
    CHECK(batched.tokens == one.tokens);
    // The same counts; shares and means within float32 rounding of the larger products. The report
    // says it was batched.
    CHECK(std::count_if(batched.notes.begin(), batched.notes.end(),
                        [](const std::string& n) { return n.find("--batch") != std::string::npos; }) == 1);
    auto without_notes = [](nlohmann::json j) {
      j.erase("notes");
      return j;
    };
    CHECK(json_near(without_notes(analysis::to_json(batched)), without_notes(analysis::to_json(one)), "", 1e-5));
  }
  SECTION("a window whose maps would pass half the memory limit is measured early, to the same report") {
    // The tiny model's maps of a sentence of at most 9 tokens: 2 layers × 4 heads × 81 floats ≤ 2,592
    // bytes; the window of 64 would hold all 15 sentences.
    o.batch = 16;
    o.window_bytes = 3000;
    const auto windowed = analysis::analyze(*tiny.model, o).report;
    o.window_bytes = -1;
    CHECK(std::count_if(windowed.notes.begin(), windowed.notes.end(), [](const std::string& n) {
            return n.find("measured early") != std::string::npos;
          }) == 1);
    CHECK(windowed.sentences == one.sentences);
    auto without_notes = [](nlohmann::json j) {
      j.erase("notes");
      return j;
    };
    CHECK(json_near(without_notes(analysis::to_json(windowed)), without_notes(analysis::to_json(one)), "", 1e-5));
  }
  SECTION("stopping early counts the sentences of the batch that were measured") {
    o.batch = 4;
    o.progress = [](int64_t done, int64_t) { return done < 6; };
    const auto partial = analysis::analyze(*tiny.model, o).report;
    CHECK(partial.partial);
    CHECK(partial.sentences + partial.skipped == 6);
  }
}

TEST_CASE("the shard comes from --shard, a Slurm array task with --shards, or mpirun", "[analysis][analyze]") {
  for (const char* name : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
                           "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"})
    unsetenv(name);
  CHECK(analysis::shard_from("2/5") == std::pair<int, int>{2, 5});
  CHECK(analysis::shard_from("2/5", 5) == std::pair<int, int>{2, 5});
  CHECK_THROWS_WITH(analysis::shard_from("2/5", 4), Catch::Contains("disagree"));
  CHECK_THROWS_WITH(analysis::shard_from("5/5"), Catch::Contains("0 <= I < N"));
  CHECK_THROWS_WITH(analysis::shard_from("x"), Catch::Contains("I/N"));
  CHECK(analysis::shard_from("") == std::pair<int, int>{0, 1});
  CHECK_THROWS_WITH(analysis::shard_from("", 4), Catch::Contains("nothing says which shard"));
  // A Slurm array task: the id is the index, --shards the count.
  setenv("SLURM_ARRAY_TASK_ID", "3", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "8", 1);
  CHECK(analysis::shard_from("", 8) == std::pair<int, int>{3, 8});
  CHECK_THROWS_WITH(analysis::shard_from("", 3), Catch::Contains("0 to 2 (sbatch --array=0-2)"));
  CHECK_THROWS_WITH(analysis::shard_from(""), Catch::Contains("needs --shards N"));
  // Resubmitted alone (sbatch --array=3): the array's count is 1, and the shard is still 3 of 8.
  setenv("SLURM_ARRAY_TASK_COUNT", "1", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "3", 1);
  CHECK(analysis::shard_from("", 8) == std::pair<int, int>{3, 8});
  CHECK_THROWS_WITH(analysis::shard_from(""), Catch::Contains("sbatch --array=3"));
  CHECK(analysis::shard_from("0/3") == std::pair<int, int>{0, 3});  // the flag wins
  unsetenv("SLURM_ARRAY_TASK_ID");
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  CHECK(analysis::shard_from("") == std::pair<int, int>{1, 2});
  CHECK(analysis::shard_from("", 2) == std::pair<int, int>{1, 2});
  CHECK_THROWS_WITH(analysis::shard_from("", 4), Catch::Contains("mpirun started 2 ranks but --shards is 4"));
  for (const char* name : {"SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"})
    unsetenv(name);
}

// Every process of a comparison runs on one thread: floating-point sums depend on the thread count,
// and a command's own count follows the machine's load.
struct OneThreadEach {
  OneThreadEach() { setenv("HEADLAB_THREADS", "1", 1); }
  ~OneThreadEach() { unsetenv("HEADLAB_THREADS"); }
};

TEST_CASE("headlab analyze, merge and count-tokens from the command line", "[analysis][cli]") {
  OneThreadEach one_thread;
  TinyModel tiny;
  test::TempDir out("analyze-cli");
  const auto& words = kTinyWords;
  std::ofstream(out.str("x.conllu")) << tree_file(words, 8);
  std::ofstream(out.str("books.txt")) << tiny.text;
  const std::string bin = HEADLAB_BINARY;
  const std::string model = tiny.dir.str("model");
  std::string output;

  // An empty corpus is refused, not written as all-zero counts (which would find no rare word) —
  // nor measured as a report of zeros.
  std::ofstream(out.str("empty.txt")) << "\n  \n";
  CHECK(test::run_command(bin + " count-tokens --model " + model + " --data " + out.str("empty.txt"), output) != 0);
  CHECK_THAT(output, Catch::Contains("no text to count"));
  CHECK_FALSE(fs::exists(model + "/token_counts.json"));
  CHECK(test::run_command(bin + " analyze --model " + model + " --data " + out.str("empty.txt") + " --out " +
                              out.str("none"), output) != 0);
  CHECK_THAT(output, Catch::Contains("no sentences to measure"));
  REQUIRE(test::run_command(bin + " count-tokens --model " + model + " --data " + out.str("books.txt"), output) == 0);
  const auto counts = core::load_token_counts(model + "/token_counts.json");
  CHECK(counts.total > 100);

  const std::string metrics = " --metrics confidence,positional,rare,syntactic,lrp,importance,spectra";
  REQUIRE(test::run_command(bin + " analyze --model " + model + " --data " + out.str("x.conllu") + metrics +
                                " --out " + out.str("one"),
                            output) == 0);
  INFO(output);
  CHECK_THAT(output, Catch::Contains("8 sentences"));
  for (const char* file : {"head_report.json", "head_report.csv", "head_report.md"})
    CHECK(fs::exists(out.str("one") + "/" + file));
  const auto one = analysis::read_head_report(out.str("one"));
  CHECK(one.settings.frequency_source == "model-folder");
  CHECK(one.heads.size() == size_t(2 * tiny.model->config.encoder->attention.heads));
  CHECK(one.heads[0].spectrum.has_value());
  CHECK(one.heads[0].lrp_sentences == 8);
  CHECK(one.lrp_sentences_over_tolerance == 0);
  {
    // The schema a paper's scripts rely on: every field, as written to disk.
    std::ifstream in(out.str("one") + "/head_report.json");
    const auto j = nlohmann::json::parse(in);
    CHECK(j["format"] == "headlab-head-report");
    CHECK(j["format_version"] == 1);
    for (const char* key : {"model", "data", "settings", "partial", "heads", "layers", "lrp_conservation"})
      CHECK(j.contains(key));
    for (const char* key : {"files", "sentences", "tokens", "skipped"}) CHECK(j["data"].contains(key));
    for (const char* key : {"max_relative_residual", "sentences_over_tolerance"}) CHECK(j["lrp_conservation"].contains(key));
    for (const char* key : {"positional_threshold", "rare_threshold", "rare_min_rank", "syntactic_margin",
                            "min_relation_count", "frequency_source", "metrics"})
      CHECK(j["settings"].contains(key));
    const auto& h = j["heads"][0];
    for (const char* key : {"stack", "layer", "head", "confidence", "confidence_all_keys", "positional", "rare",
                            "syntactic", "lrp", "importance", "spectrum", "roles"})
      CHECK(h.contains(key));
    for (const char* key : {"offset", "share", "is_role"}) CHECK(h["positional"].contains(key));
    for (const char* key : {"share", "share_two_rarest", "queries", "is_role"}) CHECK(h["rare"].contains(key));
    for (const char* key : {"raw", "normalized"}) CHECK(h["lrp"].contains(key));
    for (const char* key : {"singular_values", "rank90", "rank95", "rank99"}) CHECK(h["spectrum"].contains(key));
    REQUIRE(h["syntactic"].size() > 0);
    for (const char* key : {"relation", "direction", "accuracy", "baseline", "baseline_offset", "count", "is_role"})
      CHECK(h["syntactic"][0].contains(key));
    REQUIRE(j["layers"].size() == 2);
    CHECK(j["layers"][0]["spectrum"].contains("product"));
  }

  // A --max-tokens beyond the model's positions is not silently capped: the run says what it measures.
  const std::string positions = std::to_string(tiny.model->config.max_positions);
  REQUIRE(test::run_command(bin + " analyze --model " + model + " --data " + out.str("x.conllu") +
                                " --metrics confidence --max-tokens 100000 --out " + out.str("capped"),
                            output) == 0);
  CHECK_THAT(output, Catch::Contains("--max-tokens 100000 is more than the model's " + positions + " positions"));
  CHECK(analysis::read_head_report(out.str("capped")).settings.max_tokens == tiny.model->config.max_positions);
  // Every sentence skipped: the report is written and says so, and the command fails.
  REQUIRE(test::run_command(bin + " analyze --model " + model + " --data " + out.str("x.conllu") +
                                " --metrics confidence --max-tokens 2 --out " + out.str("none"),
                            output) == 1);
  CHECK_THAT(output, Catch::Contains("no sentence was measured: all ") && Catch::Contains("longer than 2 tokens"));
  std::ifstream none_md(out.str("none") + "/head_report.md");
  CHECK_THAT(std::string(std::istreambuf_iterator<char>(none_md), {}), Catch::Contains("No sentence was measured"));
  // A sentence too long for the memory limit alone is named, with the option that skips it.
  REQUIRE(test::run_command(bin + " --memory-limit 20K analyze --model " + model + " --data " + out.str("x.conllu") +
                                " --metrics confidence --out " + out.str("limited"),
                            output) != 0);
  CHECK_THAT(output, Catch::Contains("x.conllu:") && Catch::Contains("tokens): ") &&
                         Catch::Contains("skip sentences that long with --max-tokens"));

  // Two shards from the mpirun environment, then merged: the one-pass report.
  for (int rank = 0; rank < 2; ++rank)
    REQUIRE(test::run_command("OMPI_COMM_WORLD_RANK=" + std::to_string(rank) + " OMPI_COMM_WORLD_SIZE=2 " + bin +
                                  " analyze --model " + model + " --data " + out.str("x.conllu") + metrics +
                                  " --out " + out.str("sharded"),
                              output) == 0);
  CHECK(fs::exists(out.str("sharded") + "/shard-1-of-2/head_report.json"));
  // A merge into the same folder, then again: the second reads the shards, not the first merge.
  REQUIRE(test::run_command(bin + " merge " + out.str("sharded") + " --out " + out.str("sharded"), output) == 0);
  REQUIRE(test::run_command(bin + " merge " + out.str("sharded") + " --out " + out.str("merged"), output) == 0);
  CHECK_THAT(output, Catch::Contains("(2 reports)"));
  auto merged = analysis::to_json(analysis::read_head_report(out.str("merged")));
  auto single = analysis::to_json(one);
  CHECK(json_near(without_shard(merged), without_shard(single)));

  SECTION("bad input: one line, exit 2 for arguments and 1 for files") {
    CHECK(test::run_command(bin + " analyze --model " + model + " --data " + out.str("x.conllu") +
                                " --metrics confidence,nonsense --out " + out.str("bad"),
                            output) == 2);
    CHECK_THAT(output, Catch::Contains("unknown metric 'nonsense'"));
    CHECK(test::run_command(bin + " analyze --model " + model + " --data " + out.str("x.conllu") + " --shard 3/2 --out " +
                                out.str("bad"),
                            output) == 2);
    std::ofstream(out.str("broken.conllu")) << "1\tword\n";
    CHECK(test::run_command(bin + " analyze --model " + model + " --data " + out.str("broken.conllu") + " --out " +
                                out.str("bad"),
                            output) == 1);
    CHECK_THAT(output, Catch::Contains("broken.conllu:1"));
  }
}

namespace {

// The README's code block that starts with `first_line`, as written.
std::string readme_block(const std::string& readme, const std::string& first_line) {
  const auto start = readme.find("```sh\n" + first_line);
  REQUIRE(start != std::string::npos);
  const auto body = start + 6;
  return readme.substr(body, readme.find("```", body) - body);
}

// `text` with every whole `word` (between spaces, line ends or the ends of the text) replaced.
std::string replace_word(std::string text, const std::string& word, const std::string& by) {
  auto boundary = [&](size_t at) { return at >= text.size() || text[at] == ' ' || text[at] == '\n'; };
  for (size_t at = 0; (at = text.find(word, at)) != std::string::npos;) {
    if ((at == 0 || boundary(at - 1)) && boundary(at + word.size())) {
      text.replace(at, word.size(), by);
      at += by.size();
    } else {
      at += word.size();
    }
  }
  return text;
}

}  // namespace

TEST_CASE("the documented Slurm and mpirun commands run as written", "[analysis][cli]") {
  OneThreadEach one_thread;
  TinyModel tiny;
  test::TempDir out("cluster-docs");
  std::ofstream(out.str("corpus.conllu")) << tree_file(kTinyWords, 8);
  const std::string bin = HEADLAB_BINARY;
  std::string output;
  std::ifstream readme_file(std::string(HEADLAB_SOURCE_DIR) + "/app/README.md");
  const std::string readme((std::istreambuf_iterator<char>(readme_file)), std::istreambuf_iterator<char>());
  // The documented commands, with this test's model, data and folders for MODEL, corpus/ and report.
  auto ours = [&](std::string text, const std::string& report) {
    text = replace_word(text, "headlab", bin);
    text = replace_word(text, "MODEL", tiny.dir.str("model"));
    text = replace_word(text, "corpus/", out.str("corpus.conllu"));
    return replace_word(text, "report", report);
  };
  REQUIRE(test::run_command(bin + " analyze --model " + tiny.dir.str("model") + " --data " + out.str("corpus.conllu") +
                                " --out " + out.str("one"),
                            output) == 0);
  const auto one = without_shard(analysis::to_json(analysis::read_head_report(out.str("one"))));
  auto merged_equals_one_pass = [&](const std::string& folder) {
    return json_near(without_shard(analysis::to_json(analysis::read_head_report(folder))), one);
  };

  SECTION("the sbatch file, as every array task runs it, then one task resubmitted alone") {
    const std::string sbatch = readme_block(readme, "#!/usr/bin/env bash\n#SBATCH --array=");
    const std::string array = "#SBATCH --array=0-";
    REQUIRE(sbatch.find(array) != std::string::npos);
    const int tasks = std::stoi(sbatch.substr(sbatch.find(array) + array.size())) + 1;
    const std::string report = out.str("slurm");
    std::ofstream(out.str("analyze.sbatch")) << ours(sbatch, report);
    std::ofstream(out.str("analyze-force.sbatch")) << ours(replace_word(sbatch, "analyze", "analyze --force"), report);
    auto task = [&](int id, int count, const std::string& file) {
      return test::run_command("SLURM_ARRAY_TASK_ID=" + std::to_string(id) + " SLURM_ARRAY_TASK_COUNT=" +
                                   std::to_string(count) + " SLURM_ARRAY_TASK_MIN=" + std::to_string(count == 1 ? id : 0) +
                                   " bash " + out.str(file),
                               output);
    };
    for (int id = 0; id < tasks; ++id) REQUIRE(task(id, tasks, "analyze.sbatch") == 0);
    CHECK(fs::exists(report + "/shard-" + std::to_string(tasks - 1) + "-of-" + std::to_string(tasks)));
    REQUIRE(test::run_command(bin + " merge " + report + " --out " + report, output) == 0);
    CHECK(merged_equals_one_pass(report));
    // Resubmitted alone, the task is still shard 2 of N (not the whole dataset): refused while its
    // folder is there, then replaced with --force, and the merge (no flag) is again the one pass.
    CHECK(task(2, 1, "analyze.sbatch") != 0);
    CHECK_THAT(output, Catch::Contains("pass --force"));
    REQUIRE(task(2, 1, "analyze-force.sbatch") == 0);
    CHECK(!fs::exists(report + "/shard-0-of-1"));
    REQUIRE(test::run_command(bin + " merge " + report + " --out " + report, output) == 0);
    CHECK(merged_equals_one_pass(report));
    // Shards of another count in the same folder: the merge names them; --force on a task clears them.
    REQUIRE(test::run_command(bin + " analyze --model " + tiny.dir.str("model") + " --data " +
                                  out.str("corpus.conllu") + " --shard 1/3 --out " + report,
                              output) == 0);
    CHECK(test::run_command(bin + " merge " + report + " --out " + out.str("again"), output) != 0);
    // The newest analysis is the one of 3; the 8 folders are named as the stale ones.
    CHECK_THAT(output, Catch::Contains("1 of 3 (the newest)") &&
                           Catch::Contains("stale ones of another shard count: shard-0-of-8 shard-1-of-8"));
    REQUIRE(task(5, 1, "analyze-force.sbatch") == 0);
    CHECK(!fs::exists(report + "/shard-1-of-3"));
    REQUIRE(test::run_command(bin + " merge " + report + " --out " + out.str("again"), output) == 0);
    CHECK(merged_equals_one_pass(out.str("again")));
    // With a shard gone, the merge (allowed) is partial and says which.
    fs::remove_all(report + "/shard-4-of-" + std::to_string(tasks));
    REQUIRE(test::run_command(bin + " merge --allow-missing " + report + " --out " + out.str("partial"), output) == 0);
    CHECK_THAT(output, Catch::Contains("[partial: without shard(s) 4]") && !Catch::Contains("stopped"));
    const auto partial = analysis::read_head_report(out.str("partial"));
    CHECK(partial.partial);
    CHECK(partial.missing_shards == std::vector<int>{4});
  }

  SECTION("the mpirun line, then again into the same folder with --force") {
    SKIP_UNLESS(test::run_command("command -v mpirun", output) == 0,
                "Open MPI's mpirun (Debian's openmpi-bin; .ci/setup.sh installs it)");
    const auto at = readme.find("\nmpirun ");
    REQUIRE(at != std::string::npos);
    const std::string line = readme.substr(at + 1, readme.find('\n', at + 1) - at - 1);
    // As root (a container), Open MPI wants this confirmed; the README says so beside the line.
    const std::string root = geteuid() == 0 ? "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " : "";
    const std::string report = out.str("mpi");
    INFO(line);
    REQUIRE(test::run_command(root + ours(line, report), output) == 0);
    CHECK(merged_equals_one_pass(report));
    REQUIRE(test::run_command(root + ours(replace_word(line, "analyze", "analyze --force"), report), output) == 0);
    CHECK(merged_equals_one_pass(report));
  }
}

TEST_CASE("headlab run --rollout --logit-spectra adds rollout, flow and logit spectra for one input", "[analysis][cli]") {
  TinyModel tiny;
  test::TempDir out("run-rollout");
  std::string output;
  const std::string dump = out.str("d.safetensors");
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " run --model " + tiny.dir.str("model") +
                                " --text 'the cat sat on the mat with a red bone' --rollout --logit-spectra --lrp --out " + dump,
                            output) == 0);
  INFO(output);
  auto file = core::SafetensorsFile::open(dump);
  const int layers = tiny.model->config.encoder->layers;
  std::vector<torch::Tensor> maps;
  for (int l = 0; l < layers; ++l) maps.push_back(headlab::core::load_tensor(file, "attentions." + std::to_string(l)).clone());
  const int64_t T = maps[0].size(1);
  auto rollout = headlab::core::load_tensor(file, "rollout").to(torch::kFloat64);
  REQUIRE(rollout.sizes() == torch::IntArrayRef({T, T}));
  CHECK(test::max_abs_diff(rollout.sum(1), torch::ones({T}, torch::kFloat64)) < 1e-5);
  CHECK(test::max_abs_diff(rollout, analysis::attention_rollout(maps)) < 1e-6);
  const int position = std::stoi(file.metadata().at("flow_position"));
  CHECK(position == std::stoi(file.metadata().at("lrp_position")));  // beside LRP's input relevance
  const auto flow = analysis::attention_flow(maps, position);
  auto dumped_flow = headlab::core::load_tensor(file, "flow");
  REQUIRE(dumped_flow.numel() == T);
  for (int64_t t = 0; t < T; ++t) CHECK(dumped_flow[t].item<double>() == Approx(flow[size_t(t)]).margin(1e-6));
  const int key_size = tiny.model->config.encoder->attention.key_size;
  // The same input's logit matrices L, recomputed: their singular values are the square roots of
  // the eigenvalues of L·Lᵀ (a symmetric eigensolver, not the SVD the measure uses), float64.
  headlab::core::RunRequest request;
  request.ids = tiny.model->tokenizer->encode("the cat sat on the mat with a red bone", true).ids;
  request.capture = headlab::core::kCaptureMixedLogits;
  const auto trace = headlab::core::run(*tiny.model, request);
  for (int l = 0; l < layers; ++l) {
    INFO("layer " << l);
    auto sv = headlab::core::load_tensor(file, "logit_singular_values." + std::to_string(l)).to(torch::kFloat64);
    REQUIRE(sv.size(0) == tiny.model->config.encoder->attention.heads);
    REQUIRE(sv.size(1) == T);
    const auto L = trace->encoder.layers[size_t(l)].self.mixed_logits.squeeze(0).to(torch::kFloat64);  // [h, T, T]
    for (int64_t h = 0; h < sv.size(0); ++h) {
      INFO("head " << h);
      const auto eig = at::linalg_eigvalsh(torch::matmul(L[h], L[h].t()), "L").clamp_min(0).sqrt();  // ascending
      const auto expected = eig.flip(0);  // descending, as the spectrum lists them
      const double scale = expected[0].item<double>();
      CHECK(scale > 0);
      CHECK(test::max_abs_diff(sv[h], expected) <= 1e-5 * scale);
      CHECK((sv[h].slice(0, 0, T - 1) >= sv[h].slice(0, 1, T)).all().item<bool>());  // descending
      CHECK((sv[h] > 1e-4 * sv[h][0]).sum().item<int64_t>() <= std::min<int64_t>(T, key_size));
    }
  }
}

TEST_CASE("the measures read U by default and W on request, they differ under a post-softmax mix", "[analysis][analyze]") {
  // Talking heads (Shazeer et al. 2020) mix the softmax weights W into U = W·P_w: the roles of the
  // maps that multiply the values are not those of the softmax output.
  TinyModel tiny;
  test::TempDir data("analyze-stage");
  const auto& words = kTinyWords;
  std::ofstream(data.str("x.conllu")) << tree_file(words, 6);
  auto model = talking_heads_twin(tiny, 5);
  const auto& config = model->config;
  {
    torch::NoGradGuard no_grad;
    // P_w: a cyclic permutation of the heads, so U's head h is W's head h+1.
    for (int l = 0; l < config.encoder->layers; ++l) {
      auto& post = model->module->block(headlab::core::Stack::Encoder, l)->attn->post_mix;
      post.zero_();
      for (int h = 0; h < 4; ++h) post[(h + 1) % 4][h] = 1.0f;
    }
  }
  analysis::AnalyzeOptions o;
  o.data = {data.str("x.conllu")};
  o.settings.metrics = {"confidence", "positional"};
  const auto values = analysis::analyze(*model, o).report;
  o.settings.stage = core::Stage::W;
  const auto softmax = analysis::analyze(*model, o).report;
  CHECK(analysis::to_json(softmax)["settings"]["stage"] == "softmax");
  for (int l = 0; l < config.encoder->layers; ++l)
    for (int h = 0; h < 4; ++h) {
      const auto& u = *values.find(headlab::core::Stack::Encoder, l, h);
      const auto& w = *softmax.find(headlab::core::Stack::Encoder, l, (h + 1) % 4);
      CHECK(u.confidence == Approx(w.confidence));
      CHECK(u.offsets == w.offsets);
    }
  CHECK(values.find(headlab::core::Stack::Encoder, 0, 0)->confidence != Approx(softmax.find(headlab::core::Stack::Encoder, 0, 0)->confidence));
  // The report's and the command line's stage names are "values" and "softmax" only; the measures
  // read U or W.
  CHECK_THROWS_WITH(analysis::stage_from_key("logits"), Catch::Contains("unknown stage 'logits'"));
  o.settings.stage = core::Stage::J;
  CHECK_THROWS_WITH(analysis::analyze(*model, o), Catch::Contains("stage U (values) or W (softmax), not J"));
}

TEST_CASE("an encoder-decoder is measured on every stack: encoder, decoder and cross-attention", "[analysis][analyze]") {
  TinyModel tiny;
  test::TempDir data("analyze-encdec");
  const auto& words = kTinyWords;
  std::ofstream(data.str("x.conllu")) << tree_file(words, 5);
  auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/encoder-decoder.json");
  config.vocab_size = static_cast<int>(tiny.model->tokenizer->vocab_size());
  auto model = core::make_random_model(config, 7);
  model->tokenizer = tiny.model->tokenizer;
  analysis::AnalyzeOptions o;
  o.data = {data.str("x.conllu")};
  o.settings.min_relation_count = 1;
  const auto r = analysis::analyze(*model, o).report;  // every measure
  CHECK(r.sentences == 5);
  for (const headlab::core::Stack stack : headlab::core::kStacks) {
    INFO(headlab::core::stack_name(stack));
    const auto* h = r.find(stack, 1, 1);
    REQUIRE(h);
    CHECK(h->queries > 0);
    CHECK(h->lrp_sentences == 5);
    CHECK(h->importance_sentences == 5);
    CHECK(h->spectrum.has_value());
    CHECK(r.relations.count(stack) == 1);
  }
  CHECK(r.lrp_sentences_over_tolerance == 0);
  CHECK(std::any_of(r.notes.begin(), r.notes.end(),
                    [](const std::string& n) { return n.find("encoder-decoder") != std::string::npos; }));
}

TEST_CASE("a one-token sentence under a causal model has no next-token loss: importance leaves it out, the rest measure it",
          "[analysis][analyze]") {
  // GPT-2's tokenizer adds no begin token, so "Hello" is one token: nothing to predict.
  auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/gqa.json");
  auto tokenizer = core::Tokenizer::load(std::string(HEADLAB_SOURCE_DIR) + "/tests/data/tokenizers/gpt2/tokenizer.json");
  config.vocab_size = static_cast<int>(tokenizer->vocab_size());
  auto model = core::make_random_model(config, 3);
  model->tokenizer = tokenizer;
  test::TempDir data("analyze-one-token");
  std::ofstream(data.str("x.txt")) << "Hello\nThe cat sat on the mat.\n";
  REQUIRE(tokenizer->encode("Hello", false).ids.size() == 1);
  analysis::AnalyzeOptions o;
  o.data = {data.str("x.txt")};
  o.settings.metrics = {"confidence", "importance"};
  const auto r = analysis::analyze(*model, o).report;
  CHECK(r.sentences == 2);
  const auto* h = r.find(headlab::core::Stack::Decoder, 0, 0);
  REQUIRE(h);
  CHECK(h->importance_sentences == 1);
  CHECK(h->importance > 0);
}

TEST_CASE("Ctrl-C or SIGTERM during headlab analyze writes what is complete, marked partial", "[analysis][cli]") {
  TinyModel tiny;
  test::TempDir out("analyze-sigint");
  {
    std::ofstream text(out.str("long.txt"));
    for (int i = 0; i < 200000; ++i) text << "the cat sat on the mat and the dog ate a red bone at home\n";
  }
  std::string output;
  // Ctrl-C, or the SIGTERM a Slurm time limit, scancel or timeout sends: the same partial report.
  std::string signal = "INT";
  int expected = 130;
  SECTION("Ctrl-C") {}
  SECTION("SIGTERM") { signal = "TERM", expected = 143; }
  // The signal a second after the first progress line (the pass has begun, so the handler is in
  // place, however slowly a loaded machine starts the binary); the whole file would take far longer.
  const std::string log = out.str("stderr.txt");
  const int code = test::run_command(
      "sh -c '" + std::string(HEADLAB_BINARY) + " analyze --model " + tiny.dir.str("model") + " --data " +
          out.str("long.txt") + " --metrics confidence,positional --out " + out.str("report") + " 2>" + log +
          " & pid=$!; i=0; while ! grep -q sentences " + log +
          " && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; sleep 1; kill -" + signal + " $pid; wait $pid'",
      output);
  INFO(output);
  CHECK(code == expected);
  const auto report = analysis::read_head_report(out.str("report"));
  CHECK(report.partial);
  CHECK(report.sentences > 0);
  CHECK(report.sentences < 200000);
  CHECK(report.heads[0].queries == report.tokens - 2 * report.sentences);  // [CLS]/[SEP] are not queries
}

TEST_CASE("the shipped default on 100 UD EWT sentences: its positional, rare-word and syntactic heads show", "[analysis][assets]") {
  // The sample ships in tests/data/ud (CC BY-SA 4.0); the full dev set is checked by the [shared] test.
  auto model = core::load_model(std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default");
  analysis::AnalyzeOptions o;
  o.data = {std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu"};
  o.settings.metrics = {"confidence", "positional", "rare", "syntactic", "spectra"};
  const auto r = analysis::analyze(*model, o).report;
  CHECK(r.sentences == 100);
  CHECK(r.settings.frequency_source == "model-folder");
  // assets/README.md, "Shipped models": layer 4's L4 H1 looks one token ahead, L4 H4 one behind.
  const auto& plus_one = *r.find(headlab::core::Stack::Encoder, 4, 1);
  const auto& minus_one = *r.find(headlab::core::Stack::Encoder, 4, 4);
  CHECK(plus_one.positional_offset == 1);
  CHECK(plus_one.positional_share > 0.85);
  CHECK(minus_one.positional_offset == -1);
  CHECK(minus_one.positional_share > 0.85);
  // The rare-word head: L3 H2 puts its maximum on the sentence's rarest token (ranks from the model
  // folder's token_counts.json) for 58.9% of the queries here.
  const auto& rare = *r.find(headlab::core::Stack::Encoder, 3, 2);
  CHECK(rare.rare);
  CHECK(rare.rare_share > 0.5);
  // Syntactic evidence: L4 H6 beats its best fixed offset by 10 points or more on a relation with
  // 20 arcs or more (here case, 238 arcs: 55.0% against 35.3%). The other syntactic heads need the
  // whole dev set to show (the [shared] test).
  bool beats = false;
  for (const auto& s : r.find(headlab::core::Stack::Encoder, 4, 6)->syntactic)
    beats = beats || (s.count >= 20 && s.accuracy >= s.baseline + 0.10);
  CHECK(beats);
  CHECK(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) { return n.find("RoPE") != std::string::npos; }));
  REQUIRE(plus_one.spectrum);
  CHECK(plus_one.spectrum->singular_values.size() == 256);
  CHECK(plus_one.spectrum->rank99 <= 32);  // a head's form has rank ≤ d_k = 32
}

TEST_CASE("an arc touching a word with no token of its own is skipped and counted, not scored as a miss", "[analysis][analyze]") {
  // "cannot" is one token of the default model's vocabulary, written as the UD words "can" + "not":
  // "not" lies inside a token that starts in "can", so no row or column of the maps is its.
  test::TempDir dir("unscorable-arcs");
  std::ofstream(dir.str("cannot.conllu")) << "# text = I cannot go.\n"
                                             "1\tI\tI\tPRON\t_\t_\t4\tnsubj\t_\t_\n"
                                             "2\tcan\tcan\tAUX\t_\t_\t4\taux\t_\tSpaceAfter=No\n"
                                             "3\tnot\tnot\tPART\t_\t_\t4\tadvmod\t_\t_\n"
                                             "4\tgo\tgo\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No\n"
                                             "5\t.\t.\tPUNCT\t_\t_\t4\tpunct\t_\t_\n\n";
  auto model = core::load_model(std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default");
  analysis::AnalyzeOptions o;
  o.data = {dir.str("cannot.conllu")};
  o.settings.metrics = {"syntactic"};
  const auto r = analysis::analyze(*model, o).report;
  CHECK(r.skipped_arcs == 1);  // not → go
  const auto& rel = r.relations.at(headlab::core::Stack::Encoder);
  CHECK(rel.count("advmod") == 0);  // never counted, so no head can "miss" it
  CHECK(rel.at("nsubj").count == 1);
  CHECK(rel.at("aux").count == 1);
  // Written, read back and merged with it.
  const auto json = analysis::to_json(r);
  CHECK(json["data"]["skipped_arcs"] == 1);
  auto merged = analysis::head_report_from_json(json);
  analysis::merge_into(merged, analysis::head_report_from_json(json));
  CHECK(merged.skipped_arcs == 2);
  // The unit: words with a token of their own, and the arcs that stay.
  const auto has = analysis::words_with_tokens({-1, 0, 1, 3, 4, -1}, 5);  // [CLS] I can(not) go . [SEP]
  CHECK(has == std::vector<bool>{true, true, false, true, true});
  int64_t unscorable = 0;
  const auto arcs = analysis::scored_arcs({3, 3, 3, -1, 3}, {"nsubj", "aux", "advmod", "root", "punct"}, false, has, &unscorable);
  CHECK(arcs.size() == 2);
  CHECK(unscorable == 1);
}

TEST_CASE("analyze: a stop while the spectra are computed leaves a partial report with the layers done",
          "[analysis][spectra]") {
  TinyModel tiny;
  auto& model = *tiny.model;
  test::TempDir data("analyze-stop-spectra");
  std::ofstream(data.str("x.conllu")) << tree_file(kTinyWords, 4);
  analysis::AnalyzeOptions o;
  o.data = {data.str("x.conllu")};
  o.settings.metrics = {"spectra", "confidence"};
  std::vector<std::pair<int64_t, int64_t>> seen;
  o.preparing = [&](const std::string& what, int64_t done, int64_t total) {
    CHECK(what == "key-query spectra");
    seen.emplace_back(done, total);
    return done < 1;  // Stop after the first layer
  };
  const auto r = analysis::analyze(model, o).report;
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == std::pair<int64_t, int64_t>{1, 2});
  CHECK(r.partial);
  CHECK(r.layers.size() == 1);
  CHECK(r.sentences == 0);

  o.preparing = [&](const std::string&, int64_t, int64_t) { return true; };
  const auto whole = analysis::analyze(model, o).report;
  CHECK_FALSE(whole.partial);
  CHECK(whole.layers.size() == 2);
  CHECK(whole.sentences == 4);
}
