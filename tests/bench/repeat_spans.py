#!/usr/bin/env python3
"""repeat_spans.py OUT BOOK… : text in which spans of the books recur, for training the induction model.

Each line of OUT is a span of 24–96 consecutive words of one book followed by the same span again
(seeded, deterministic). Trained on the books themselves plus this file, a two-layer attention-only
model meets repeated text often enough that the previous-token and induction heads Olsson et al.
(2022) saw form after billions of tokens of natural text form within a CPU's budget.
"""
import random
import sys


def main() -> None:
    out, books = sys.argv[1], sys.argv[2:]
    rng = random.Random(0)
    with open(out, "w", encoding="utf-8") as f:
        for path in books:
            words = open(path, encoding="utf-8").read().split()
            at = 0
            while at < len(words):
                n = rng.randint(24, 96)
                span = " ".join(words[at:at + n])
                f.write(span + " " + span + "\n")
                at += n


if __name__ == "__main__":
    main()
