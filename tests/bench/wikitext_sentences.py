#!/usr/bin/env python3
"""wikitext_sentences.py TEST.TXT OUT.TXT: WikiText-2's test split as one sentence a line.

The held-out set the rare-word measurements use beside UD English-EWT dev (assets/README.md,
"Shipped models"): the article lines of test.txt (headings " = … = " and blank lines dropped), each
split where a sentence's final ".", "!" or "?" (with WikiText's space before it) is followed by a
space and a capital letter; sentences that contain "<unk>" are dropped, since their rarest word is
unknown. Prints how many sentences it wrote.
"""
import re
import sys

END = re.compile(r"(?<= [.!?]) (?=[A-Z])")


def sentences(lines):
    for line in lines:
        line = line.strip()
        if not line or line.startswith("="):
            continue
        for sentence in END.split(line):
            if "<unk>" not in sentence:
                yield sentence


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[0])
    with open(sys.argv[1], encoding="utf-8") as source:
        kept = list(sentences(source))
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        out.writelines(s + "\n" for s in kept)
    print(f"{len(kept)} sentences")


if __name__ == "__main__":
    main()
