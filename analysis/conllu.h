// Reading Universal Dependencies treebanks (CoNLL-U): sentences of words with their syntactic head
// and relation, streamed one sentence at a time. Multi-word token lines ("1-2") give the surface
// spacing of their words; empty nodes ("1.1") are skipped.
#pragma once

#include <istream>
#include <memory>
#include <string>
#include <vector>

namespace headlab::analysis {

struct UdWord {
  std::string form;
  int head = 0;          // 1-based index of the head word; 0 = root
  std::string relation;  // as written, subtype included ("obl:on"); see normalize_relation
  bool space_after = true;  // false when MISC says SpaceAfter=No (or inside a multi-word token)
};

struct UdSentence {
  std::string id;      // "# sent_id" when given
  std::string source;  // "file:line" of its first word
  std::vector<UdWord> words;
};

// Streams the sentences of one .conllu file. Malformed entries throw std::runtime_error naming the
// file and line (wrong column count, an id or head that is not a number, a head outside the sentence).
class ConlluReader {
 public:
  explicit ConlluReader(const std::string& path);
  // Reads CoNLL-U from a stream (pasted text); `name` stands for the file in messages.
  ConlluReader(std::unique_ptr<std::istream> in, std::string name);
  // The next sentence; false at the end of the file.
  bool next(UdSentence& sentence);

 private:
  std::string path_;
  std::unique_ptr<std::istream> in_;
  size_t line_no_ = 0;
};

// Every sentence of a file.
std::vector<UdSentence> read_conllu(const std::string& path);
// Every sentence of CoNLL-U text (pasted); `name` stands for the file in messages and sources.
std::vector<UdSentence> parse_conllu(const std::string& text, const std::string& name);

// The relation HeadLab scores: UD v1's "dobj" is read as "obj" (UD v2), and with strip_subtypes
// "nsubj:pass" becomes "nsubj".
std::string normalize_relation(const std::string& relation, bool strip_subtypes);

}  // namespace headlab::analysis
