// `headlab tokenize`: JSON-lines tokenization for scripts and conformance checks.
#pragma once

#include <iosfwd>
#include <string>

namespace headlab::app {

// Reads one JSON string per line from `in` and writes one JSON object per line to `out`:
// {"ids": [...], "tokens": [...], "offsets": [[start, end], ...]} (offsets in code points).
// Returns 0 on success, 1 when the tokenizer cannot be loaded, 2 on the first input line that is
// not a JSON string (a message naming the line goes to stderr; earlier output stays written).
int run_tokenize_command(const std::string& tokenizer_path, bool add_special, std::istream& in, std::ostream& out);

}  // namespace headlab::app
