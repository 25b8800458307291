#include "analysis/conllu.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace headlab::analysis {
namespace {

int parse_int(const std::string& text, const std::string& where, const char* what) {
  try {
    size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    return value;
  } catch (const std::exception&) {
    throw std::runtime_error(where + ": " + what + " '" + text + "' is not a number");
  }
}

}  // namespace

ConlluReader::ConlluReader(const std::string& path) : path_(path), in_(std::make_unique<std::ifstream>(path)) {
  if (!*in_) throw std::runtime_error(path + ": cannot open");
}

ConlluReader::ConlluReader(std::unique_ptr<std::istream> in, std::string name)
    : path_(std::move(name)), in_(std::move(in)) {}

bool ConlluReader::next(UdSentence& sentence) {
  sentence = UdSentence{};
  std::string line;
  int mwt_first = 0, mwt_last = 0;  // the word ids the current multi-word token covers
  std::string mwt_form;             // its surface form
  bool mwt_space_after = true;      // its own SpaceAfter
  while (std::getline(*in_, line)) {
    ++line_no_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no_ == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // a UTF-8 byte-order mark
    const std::string where = path_ + ":" + std::to_string(line_no_);
    if (line.empty()) {
      if (!sentence.words.empty()) break;
      continue;
    }
    if (line[0] == '#') {
      if (line.rfind("# sent_id = ", 0) == 0) sentence.id = line.substr(12);
      continue;
    }
    std::vector<std::string> cols;
    std::stringstream s(line);
    for (std::string c; std::getline(s, c, '\t');) cols.push_back(c);
    if (cols.size() != 10)
      throw std::runtime_error(where + ": expected 10 tab-separated columns, found " + std::to_string(cols.size()));
    const bool space_after = cols[9].find("SpaceAfter=No") == std::string::npos;
    if (cols[0].find('.') != std::string::npos) continue;  // empty node
    if (const auto dash = cols[0].find('-'); dash != std::string::npos) {
      mwt_first = parse_int(cols[0].substr(0, dash), where, "multi-word token range start");
      mwt_last = parse_int(cols[0].substr(dash + 1), where, "multi-word token range end");
      mwt_form = cols[1];
      mwt_space_after = space_after;
      continue;
    }
    const int id = parse_int(cols[0], where, "word id");
    if (id != static_cast<int>(sentence.words.size()) + 1)
      throw std::runtime_error(where + ": word id " + cols[0] + " out of order (expected " +
                               std::to_string(sentence.words.size() + 1) + ")");
    if (sentence.words.empty()) sentence.source = where;
    UdWord w;
    w.form = cols[1];
    w.head = cols[6] == "_" ? 0 : parse_int(cols[6], where, "head");
    if (w.head < 0) throw std::runtime_error(where + ": head " + cols[6] + " is negative");
    w.relation = cols[7] == "_" ? "" : cols[7];
    // Words inside a multi-word token are written together ("do" + "n't" = "don't"); the token's
    // own SpaceAfter applies after its last word.
    w.space_after = id < mwt_last ? false : id == mwt_last ? mwt_space_after : space_after;
    sentence.words.push_back(std::move(w));
    if (id == mwt_last && mwt_first >= 1 && mwt_first < mwt_last) {
      // "do" + "n't" spell "don't", but Spanish "del" is "de" + "el": where the words do not spell the
      // token, they are written apart so each keeps its own tokens.
      std::string joined;
      for (int i = mwt_first; i <= mwt_last; ++i) joined += sentence.words[size_t(i - 1)].form;
      if (joined != mwt_form)
        for (int i = mwt_first; i < mwt_last; ++i) sentence.words[size_t(i - 1)].space_after = true;
    }
  }
  if (sentence.words.empty()) return false;
  const int n = static_cast<int>(sentence.words.size());
  for (int i = 0; i < n; ++i)
    if (sentence.words[i].head > n)
      throw std::runtime_error(sentence.source + ": sentence has " + std::to_string(n) + " words, but word " +
                               std::to_string(i + 1) + "'s head is " + std::to_string(sentence.words[i].head));
  // A tree: every word reaches the root (0) by its heads. A word headed by itself or a cycle is a
  // damaged file, whose arcs would be scored as if they were relations.
  for (int i = 0; i < n; ++i) {
    std::string path = std::to_string(i + 1);
    int at = i + 1;
    for (int steps = 0; at != 0; ++steps) {
      if (steps > n)
        throw std::runtime_error(sentence.source + ": word " + std::to_string(i + 1) +
                                 "'s heads never reach the root (0): " + path + " — a word headed by itself or a cycle");
      at = sentence.words[static_cast<size_t>(at - 1)].head;
      if (steps < 8) path += " → " + std::to_string(at);
    }
  }
  return true;
}

std::vector<UdSentence> read_conllu(const std::string& path) {
  ConlluReader reader(path);
  std::vector<UdSentence> out;
  for (UdSentence s; reader.next(s);) out.push_back(std::move(s));
  return out;
}

std::vector<UdSentence> parse_conllu(const std::string& text, const std::string& name) {
  ConlluReader reader(std::make_unique<std::istringstream>(text), name);
  std::vector<UdSentence> out;
  for (UdSentence s; reader.next(s);) out.push_back(std::move(s));
  return out;
}

std::string normalize_relation(const std::string& relation, bool strip_subtypes) {
  std::string r = strip_subtypes ? relation.substr(0, relation.find(':')) : relation;
  if (r == "dobj" || r.rfind("dobj:", 0) == 0) r = "obj" + r.substr(4);
  return r;
}

}  // namespace headlab::analysis
