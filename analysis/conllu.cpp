#include "analysis/conllu.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace headlab::analysis {

std::vector<UdSentence> read_conllu(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::vector<UdSentence> out;
  UdSentence current;
  std::string line;
  size_t line_no = 0;
  auto flush = [&] {
    if (!current.words.empty()) out.push_back(std::move(current));
    current = UdSentence{};
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      flush();
      continue;
    }
    if (line[0] == '#') {
      if (line.rfind("# sent_id = ", 0) == 0) current.id = line.substr(12);
      continue;
    }
    std::vector<std::string> cols;
    std::stringstream s(line);
    for (std::string c; std::getline(s, c, '\t');) cols.push_back(c);
    if (cols.size() < 8) throw std::runtime_error(path + ":" + std::to_string(line_no) + ": expected 10 columns");
    if (cols[0].find_first_of("-.") != std::string::npos) continue;
    UdWord w;
    w.form = cols[1];
    try {
      w.head = cols[6] == "_" ? 0 : std::stoi(cols[6]);
    } catch (const std::exception&) {
      throw std::runtime_error(path + ":" + std::to_string(line_no) + ": bad head '" + cols[6] + "'");
    }
    w.relation = cols[7].substr(0, cols[7].find(':'));
    current.words.push_back(std::move(w));
  }
  flush();
  return out;
}

}  // namespace headlab::analysis
