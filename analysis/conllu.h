// Reading Universal Dependencies treebanks (CoNLL-U): sentences of words with their syntactic
// head and relation. Multi-word token lines ("1-2") and empty nodes ("1.1") are skipped.
#pragma once

#include <string>
#include <vector>

namespace headlab::analysis {

struct UdWord {
  std::string form;
  int head = 0;          // 1-based index of the head word; 0 = root
  std::string relation;  // universal relation without subtype ("obl:on" → "obl")
};

struct UdSentence {
  std::string id;
  std::vector<UdWord> words;
};

// Parses a .conllu file; throws std::runtime_error naming the file and line of a malformed entry.
std::vector<UdSentence> read_conllu(const std::string& path);

}  // namespace headlab::analysis
