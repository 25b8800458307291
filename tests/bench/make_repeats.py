#!/usr/bin/env python3
"""make_repeats.py OUT.txt BOOK.txt… [--pairs N] [--seed S]: the induction model's training text.

Each line is a passage of the books written twice, "passage passage": a run of 4 to 30 consecutive
words, drawn at random from all the books' words (seeded, so the file is the same on every machine).
Text that repeats is what makes an induction head pay: in the second copy, every next word is the one
that followed the current word in the first. Natural text repeats too (names, phrases), but so seldom
that a two-layer model needs billions of tokens before induction forms (Olsson et al. 2022); here it
forms in a few million. The passage lengths vary, so no fixed offset predicts the second copy: only
"find the earlier occurrence of this token and copy what came after it" does.
"""
import argparse
import random


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("books", nargs="+")
    parser.add_argument("--pairs", type=int, default=200000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-words", type=int, default=4)
    parser.add_argument("--max-words", type=int, default=30)
    args = parser.parse_args()
    words = []
    for path in sorted(args.books):
        with open(path, encoding="utf-8") as f:
            words.extend(f.read().split())
    rng = random.Random(args.seed)
    with open(args.out, "w", encoding="utf-8") as out:
        for _ in range(args.pairs):
            n = rng.randint(args.min_words, args.max_words)
            start = rng.randrange(len(words) - n)
            passage = " ".join(words[start:start + n])
            out.write(passage + " " + passage + "\n")


if __name__ == "__main__":
    main()
