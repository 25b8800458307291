// A parse laid on typed text: pasted CoNLL-U is read like a file, its words are found in the text in
// order with any whitespace between them, and a parse that does not spell the text is refused with
// the word and place where it stops matching.
#include "test_common.h"

#include "analysis/conllu.h"
#include "analysis/dataset.h"

#include <stdexcept>

using namespace headlab;

namespace {

// "The cat sat." with a multi-word token-free tree: The ← cat ← sat → .
const char* kParse =
    "# sent_id = t1\n"
    "1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_\n"
    "2\tcat\tcat\tNOUN\t_\t_\t3\tnsubj\t_\t_\n"
    "3\tsat\tsit\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No\n"
    "4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_\n";

}  // namespace

TEST_CASE("pasted CoNLL-U is read like a file, errors naming the paste", "[analysis][dataset]") {
  const auto parses = analysis::parse_conllu(kParse, "the pasted parse");
  REQUIRE(parses.size() == 1);
  REQUIRE(parses[0].words.size() == 4);
  CHECK(parses[0].id == "t1");
  CHECK(parses[0].source == "the pasted parse:2");
  CHECK(parses[0].words[1].head == 3);
  CHECK(!parses[0].words[2].space_after);
  CHECK(analysis::parse_conllu(std::string(kParse) + "\n" + kParse, "p").size() == 2);
  CHECK(analysis::parse_conllu("", "p").empty());
  CHECK_THROWS_WITH(analysis::parse_conllu("1\tThe\tthe\n", "the pasted parse"),
                    Catch::Contains("the pasted parse:1") && Catch::Contains("10 tab-separated columns"));
}

TEST_CASE("a parse lies on typed text with any whitespace between its words", "[analysis][dataset]") {
  const auto parse = analysis::parse_conllu(kParse, "p").at(0);
  // The file's own spelling gives the spans DatasetReader gives.
  const auto spelled = analysis::dataset_sentence(parse);
  CHECK(spelled.text == "The cat sat.");
  const auto same = analysis::parse_on_text(parse, spelled.text);
  CHECK(same.word_spans == spelled.word_spans);
  CHECK(same.heads == std::vector<int>{1, 2, -1, 2});
  CHECK(same.relations == spelled.relations);

  // Typed with other whitespace: the text is kept as typed and the spans follow it (code points).
  const auto typed = analysis::parse_on_text(parse, "  The\tcat   sat .\n");
  CHECK(typed.text == "  The\tcat   sat .\n");
  CHECK(typed.word_spans == std::vector<std::pair<int64_t, int64_t>>{{2, 5}, {6, 9}, {12, 15}, {16, 17}});
  CHECK(analysis::parse_spells(parse, "The cat sat ."));

  // Non-ASCII words count code points, not bytes.
  const auto cafe = analysis::parse_conllu("1\tCafé\t_\t_\t_\t_\t2\tnsubj\t_\t_\n2\topens\t_\t_\t_\t_\t0\troot\t_\t_\n", "p");
  CHECK(analysis::parse_on_text(cafe.at(0), "Café opens").word_spans ==
        std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {5, 10}});
}

TEST_CASE("a parse that does not spell the typed text is refused with where it stops", "[analysis][dataset]") {
  const auto parse = analysis::parse_conllu(kParse, "the pasted parse").at(0);
  CHECK(!analysis::parse_spells(parse, "The dog sat."));
  CHECK_THROWS_WITH(analysis::parse_on_text(parse, "The dog sat."),
                    Catch::Contains("the pasted parse:2") && Catch::Contains("word 2 'cat'") &&
                        Catch::Contains("'dog sat.'"));
  // A word may not be split by whitespace.
  CHECK_THROWS_WITH(analysis::parse_on_text(parse, "The c at sat."), Catch::Contains("word 2 'cat'"));
  // Text left over after the last word, and text that ends early.
  CHECK_THROWS_WITH(analysis::parse_on_text(parse, "The cat sat. And then?"),
                    Catch::Contains("goes on after the parse's last word: 'And then?'"));
  CHECK_THROWS_WITH(analysis::parse_on_text(parse, "The cat"),
                    Catch::Contains("word 3 'sat'") && Catch::Contains("(end of the input)"));
}
