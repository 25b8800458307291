// The report `headlab analyze` writes for the bundled UD sample with every measure matches the golden
// one in tests/data/golden (tests/data/golden/analyze-default-ud100/SOURCES.md): code that only
// reshapes the analysis changes no column, no word of the Markdown and no number beyond what float32
// kernels leave to the CPU. Measured between an AVX-512/AMX machine and an AVX2 one: most numbers
// agree to 1e-9 relative, LRP's cancelling sums and measures near 1e-12 to 3e-5, and two counts of a
// head's argmax offset moved by one where two keys tie to float32 rounding. A changed measure moves
// its numbers by far more.
#include "test_common.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

using headlab::test::run_command;
using headlab::test::TempDir;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A number starts at a digit (or a minus before one) that does not continue a word or a number.
bool number_starts(const std::string& s, size_t i) {
  const bool digit = std::isdigit(static_cast<unsigned char>(s[i])) ||
                     (s[i] == '-' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])));
  if (!digit || i == 0) return digit;
  const unsigned char before = static_cast<unsigned char>(s[i - 1]);
  return !std::isalnum(before) && before != '.' && before != '_';
}

// Splits text into its words and its numbers: "conf 0.25 (L3)" → text "conf # (L3)", numbers {0.25}.
void split_numbers(const std::string& s, std::string& text, std::vector<double>& numbers) {
  for (size_t i = 0; i < s.size();) {
    if (number_starts(s, i)) {
      char* end = nullptr;
      numbers.push_back(std::strtod(s.c_str() + i, &end));
      text += '#';
      i = static_cast<size_t>(end - s.c_str());
    } else {
      text += s[i++];
    }
  }
}

// Two numbers agree when within 1e-4 of each other relative to the larger; when both lie below 1e-6
// (rounding floors such as LRP's conservation residual, which is itself float32 rounding); or when
// both are counts and differ by one (an argmax that a float32 tie sends to the other key).
bool numbers_agree(double a, double b) {
  const double scale = std::max(std::abs(a), std::abs(b));
  const bool counts = a == std::floor(a) && b == std::floor(b);
  return scale < 1e-6 || std::abs(a - b) <= 1e-4 * scale || (counts && std::abs(a - b) <= 1);
}

// "" when `written` matches `expected`, else what first differs.
std::string mismatch(const std::string& expected, const std::string& written) {
  std::string expected_text, written_text;
  std::vector<double> expected_numbers, written_numbers;
  split_numbers(expected, expected_text, expected_numbers);
  split_numbers(written, written_text, written_numbers);
  if (expected_text != written_text) {
    const auto at = std::mismatch(expected_text.begin(), expected_text.end(), written_text.begin(), written_text.end());
    const size_t i = static_cast<size_t>(at.first - expected_text.begin());
    const size_t from = i < 60 ? 0 : i - 60;
    return "the text differs near «" + expected_text.substr(from, 120) + "» against «" + written_text.substr(from, 120) + "»";
  }
  if (expected_numbers.size() != written_numbers.size()) return "the count of numbers differs";
  for (size_t i = 0; i < expected_numbers.size(); ++i)
    if (!numbers_agree(expected_numbers[i], written_numbers[i])) {
      std::ostringstream out;
      out.precision(17);
      out << "number " << i << " is " << written_numbers[i] << ", golden " << expected_numbers[i];
      return out.str();
    }
  return "";
}

}  // namespace

TEST_CASE("the rule the golden comparison applies: text exact and numbers within float32's reach", "[analysis][golden]") {
  CHECK(mismatch("conf 0.048006760675718289 (L3 H2)", "conf 0.048006760651922116 (L3 H2)").empty());
  CHECK(mismatch("raw 0.002586114568111919", "raw 0.002586067862546335").empty());  // 1.8e-5
  CHECK(mismatch("residual: 6.414e-07", "residual: 3.041e-07").empty());  // both rounding floors
  CHECK(mismatch("\"-19\": 74", "\"-19\": 75").empty());                      // a tie's count
  CHECK(mismatch("conf 0.0480", "conf 0.0481").rfind("number 0 is ", 0) == 0);
  CHECK_FALSE(mismatch("raw 0.0025861", "raw 0.0025871").empty());  // 4e-4
  CHECK_FALSE(mismatch("\"-19\": 74", "\"-19\": 76").empty());
  CHECK(mismatch("L3 H2 0.5", "L3 H3 0.5").rfind("the text differs", 0) == 0);  // a head's name is text
  CHECK(mismatch("rare 0.5", "Rare 0.5").rfind("the text differs", 0) == 0);
  CHECK(mismatch("[1, 2]", "[1, 2, 3]").rfind("the text differs", 0) == 0);
  CHECK_FALSE(mismatch("share 0.5", "share 0.5001").empty());
  CHECK_FALSE(mismatch("x -0.25", "x 0.25").empty());
}

TEST_CASE("the default model's report on the bundled UD sample matches the golden report", "[analysis][golden]") {
  TempDir out("golden-report");
  const std::string golden = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/golden/analyze-default-ud100/";
  std::string log;
  // From the repository root with relative paths and 2 threads, as the golden report was written
  // (floating-point sums depend on how the work is split between threads; the command's own count
  // follows the machine's load).
  REQUIRE(run_command("cd " + std::string(HEADLAB_SOURCE_DIR) + " && HEADLAB_THREADS=2 " + HEADLAB_BINARY +
                          " analyze --model assets/models/default --data assets/data/en_ewt-dev-100.conllu --out " +
                          out.str("report"),
                      log) == 0);
  INFO(log);
  for (const std::string file : {"head_report.json", "head_report.csv", "head_report.md"}) {
    INFO(file);
    const std::string expected = slurp(golden + file), written = slurp(out.str("report/" + file));
    REQUIRE(!expected.empty());
    CHECK(mismatch(expected, written) == "");
  }
}
