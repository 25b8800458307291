// The report `headlab analyze` writes for the bundled UD sample with every measure is byte-identical
// to the golden one in tests/data/golden (tests/data/golden/analyze-default-ud100/SOURCES.md): code
// that only reshapes the analysis changes no number, no column and no line of the Markdown.
#include "test_common.h"

#include <fstream>
#include <iterator>

using headlab::test::run_command;
using headlab::test::TempDir;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("the default model's report on the bundled UD sample is byte-identical to the golden report", "[analysis][golden]") {
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
    CHECK(written.size() == expected.size());
    CHECK(written == expected);
  }
}
