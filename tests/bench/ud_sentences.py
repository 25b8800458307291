#!/usr/bin/env python3
"""ud_sentences.py CONLLU OUT.TXT: a UD treebank's sentences as text, one a line.

The "# text = " line of each sentence, and a blank line where a document starts ("# newdoc"), so a
trainer that packs by document keeps documents apart. The training scripts read UD English-EWT train
this way (assets/README.md, "Shipped models").
"""
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[0])
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        for line in open(sys.argv[1], encoding="utf-8"):
            if line.startswith("# newdoc"):
                out.write("\n")
            elif line.startswith("# text = "):
                out.write(line[9:].rstrip("\n") + "\n")


if __name__ == "__main__":
    main()
