"""Write a benchmark corpus of the shape asked (`genledger.synth.corpus`), without measuring.

    python benchmarks/corpus.py OUT_DIR [--mb 800] [--seed 1] [--shape reference|second|tokens]

The shapes, their formats and sizes are described in genledger/synth/corpus.py and
docs/performance.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from genledger.synth.corpus import SHAPES, write_corpus


def main() -> None:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=800.0, help="target size in MB")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="reference")
    args = parser.parse_args()
    sizes = write_corpus(args.out, args.mb, args.seed, args.shape)
    print(f"{len(sizes)} files, {sum(sizes.values()) / 1e6:.0f} MB in {args.out}")


if __name__ == "__main__":
    main()
