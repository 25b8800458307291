#include "analysis/dataset.h"

#include "core/tokenizer/framing.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/unicode.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace headlab::analysis {
namespace fs = std::filesystem;

namespace {

bool has_extension(const fs::path& p, const char* ext) { return p.extension() == ext; }

// CoNLL-U by name: .conllu, .conll or .conllx, any case.
bool is_conllu(const fs::path& p) {
  std::string ext = p.extension().string();
  for (auto& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == ".conllu" || ext == ".conll" || ext == ".conllx";
}

// Word spans of a plain-text line: maximal runs of non-whitespace code points.
std::vector<std::pair<int64_t, int64_t>> whitespace_words(const std::string& text) {
  const std::u32string cps = core::tok::utf8_to_u32(text);
  std::vector<std::pair<int64_t, int64_t>> spans;
  int64_t start = -1;
  for (int64_t i = 0; i <= static_cast<int64_t>(cps.size()); ++i) {
    const bool space = i == static_cast<int64_t>(cps.size()) || core::tok::is_whitespace(cps[size_t(i)]);
    if (!space && start < 0) start = i;
    if (space && start >= 0) {
      spans.emplace_back(start, i);
      start = -1;
    }
  }
  return spans;
}

}  // namespace

std::vector<std::string> expand_dataset_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> conllu, text;
      for (const auto& entry : fs::directory_iterator(path)) {
        if (!entry.is_regular_file()) continue;
        if (is_conllu(entry.path())) conllu.push_back(entry.path().string());
        if (has_extension(entry.path(), ".txt")) text.push_back(entry.path().string());
      }
      auto& chosen = conllu.empty() ? text : conllu;
      if (chosen.empty()) throw std::runtime_error(path + ": the folder holds no .conllu or .txt file");
      std::sort(chosen.begin(), chosen.end());
      files.insert(files.end(), chosen.begin(), chosen.end());
    } else if (fs::exists(path, ec)) {
      files.push_back(path);
    } else {
      throw std::runtime_error(path + ": no such file or folder");
    }
  }
  if (files.empty()) throw std::runtime_error("no data files given");
  return files;
}

struct DatasetReader::Impl {
  size_t file = 0;
  std::unique_ptr<ConlluReader> conllu;
  std::unique_ptr<std::ifstream> text;
  size_t line_no = 0;
};

DatasetSentence dataset_sentence(const UdSentence& ud) {
  DatasetSentence out;
  out.source = ud.source;
  for (size_t w = 0; w < ud.words.size(); ++w) {
    const auto& word = ud.words[w];
    const int64_t start = static_cast<int64_t>(core::tok::utf8_to_u32(out.text).size());
    out.text += word.form;
    out.word_spans.emplace_back(start, start + static_cast<int64_t>(core::tok::utf8_to_u32(word.form).size()));
    if (word.space_after && w + 1 < ud.words.size()) out.text += ' ';
    out.heads.push_back(word.head - 1);
    out.relations.push_back(word.relation);
  }
  return out;
}

namespace {

bool is_space(char32_t c) { return c == U' ' || c == U'\t' || c == U'\n' || c == U'\r' || c == 0xA0 || c == 0x3000; }

// The first characters of `cps` from `at`, for messages.
std::string excerpt(const std::u32string& cps, size_t at) {
  const size_t n = std::min<size_t>(cps.size() - std::min(at, cps.size()), 24);
  std::string out = core::tok::u32_to_utf8(cps.substr(std::min(at, cps.size()), n));
  return at + n < cps.size() ? out + "…" : out;
}

// Lays the parse's words on the text; "" on success, else why not. Spans in code points.
std::string lay_parse(const UdSentence& parse, const std::u32string& cps,
                      std::vector<std::pair<int64_t, int64_t>>* spans) {
  size_t at = 0;
  for (size_t w = 0; w < parse.words.size(); ++w) {
    while (at < cps.size() && is_space(cps[at])) ++at;
    const std::u32string form = core::tok::utf8_to_u32(parse.words[w].form);
    if (cps.compare(at, form.size(), form) != 0)
      return "word " + std::to_string(w + 1) + " '" + parse.words[w].form + "' of the parse does not match the input at '" +
             (at < cps.size() ? excerpt(cps, at) : std::string("(end of the input)")) + "'";
    if (spans) spans->emplace_back(int64_t(at), int64_t(at + form.size()));
    at += form.size();
  }
  while (at < cps.size() && is_space(cps[at])) ++at;
  if (at < cps.size()) return "the input goes on after the parse's last word: '" + excerpt(cps, at) + "'";
  return {};
}

}  // namespace

DatasetSentence parse_on_text(const UdSentence& parse, const std::string& text) {
  DatasetSentence out;
  const std::string why = lay_parse(parse, core::tok::utf8_to_u32(text), &out.word_spans);
  if (!why.empty()) throw std::runtime_error(parse.source + ": " + why);
  out.source = parse.source;
  out.text = text;
  for (const auto& word : parse.words) {
    out.heads.push_back(word.head - 1);
    out.relations.push_back(word.relation);
  }
  return out;
}

bool parse_spells(const UdSentence& parse, const std::string& text) {
  return lay_parse(parse, core::tok::utf8_to_u32(text), nullptr).empty();
}

DatasetReader::DatasetReader(std::vector<std::string> files) : files_(std::move(files)), impl_(std::make_unique<Impl>()) {}
DatasetReader::~DatasetReader() = default;

bool DatasetReader::next(DatasetSentence& out) {
  auto& s = *impl_;
  while (s.file < files_.size()) {
    const std::string& path = files_[s.file];
    if (is_conllu(path)) {
      if (!s.conllu) s.conllu = std::make_unique<ConlluReader>(path);
      UdSentence ud;
      if (s.conllu->next(ud)) {
        out = dataset_sentence(ud);
        return true;
      }
      s.conllu.reset();
    } else {
      if (!s.text) {
        s.text = std::make_unique<std::ifstream>(path);
        if (!*s.text) throw std::runtime_error(path + ": cannot open");
        s.line_no = 0;
      }
      std::string line;
      while (std::getline(*s.text, line)) {
        ++s.line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (s.line_no == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // byte-order mark
        auto spans = whitespace_words(line);
        if (spans.empty()) continue;
        out = DatasetSentence{};
        out.source = path + ":" + std::to_string(s.line_no);
        out.text = std::move(line);
        out.word_spans = std::move(spans);
        return true;
      }
      if (s.text->bad()) throw std::runtime_error(path + ": read error");
      s.text.reset();
    }
    ++s.file;
  }
  return false;
}

TokenizedSentence tokenize_sentence(const core::ModelConfig& config, const core::Tokenizer& tokenizer,
                                    const DatasetSentence& sentence) {
  const auto encoding = core::model_encoding(config, tokenizer, sentence.text);
  const std::u32string cps = core::tok::utf8_to_u32(sentence.text);
  TokenizedSentence out;
  out.ids = encoding.ids;
  out.tokens = encoding.tokens;
  out.words = static_cast<int>(sentence.word_spans.size());
  out.word_of.assign(encoding.ids.size(), -1);
  out.special.assign(encoding.ids.size(), false);
  for (size_t t = 0; t < encoding.ids.size(); ++t) {
    auto [start, end] = encoding.offsets[t];
    if (start >= end) {  // no character span: a special token
      out.special[t] = true;
      continue;
    }
    while (start < end && start < static_cast<int64_t>(cps.size()) && core::tok::is_whitespace(cps[size_t(start)])) ++start;
    if (start >= end) continue;
    // Word spans are sorted: the last span starting at or before `start`.
    auto it = std::upper_bound(sentence.word_spans.begin(), sentence.word_spans.end(), start,
                               [](int64_t value, const std::pair<int64_t, int64_t>& span) { return value < span.first; });
    if (it == sentence.word_spans.begin()) continue;
    --it;
    if (start < it->second) out.word_of[t] = static_cast<int>(it - sentence.word_spans.begin());
  }
  return out;
}

}  // namespace headlab::analysis
