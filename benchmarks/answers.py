"""Time the answer keys' whitespace collapse: the Python definition against the C scan.

    python benchmarks/answers.py [--mb 40] [--shape reference] [--repeats 5]

The answers are those an answer key collapses: each record's visible answer (its
declaration's answer paths, reasoning left out, joined by a space) as orjson escapes it,
stripped at its ends (`genledger.fast.answerkeys`), from the generated corpus of `--shape`
file by file and from every record of ../shared/realworld*/data. For each set: MB/s of the
definition (`genledger.parse.answer.collapsed_escaped`), of the C scan
(`genledger.fast._collapse`) and of the xxh3 hash that follows it (the pace to reach), best
of `--repeats`; the two collapses' results are checked equal first.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from genledger.fast import answerkeys
from genledger.fast.answerkeys import _strip_escaped
from genledger.parse.answer import Buffer, collapsed_escaped, escaped, hash64, part_text
from genledger.parse.formats import find_declaration
from genledger.synth.corpus import SHAPES, write_corpus

SHARED = Path(__file__).resolve().parents[2] / "shared"


def _records(line: bytes) -> Iterator[dict[str, Any]]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return
    for record in value if isinstance(value, list) else [value]:
        if isinstance(record, dict):
            yield record


def answers(path: Path) -> list[bytes]:
    """The escaped, stripped answer of every record of a JSONL file that has one."""
    found = []
    for line in path.read_bytes().splitlines():
        for record in _records(line):
            decl = find_declaration(record)
            if decl is None or not decl.answer:
                continue
            texts = [
                text
                for p in decl.answer
                for v in p.values(record, skip_thoughts=True)
                if (text := part_text(v)) is not None
            ]
            body = _strip_escaped(escaped(" ".join(texts)))
            if body:
                found.append(bytes(body))
    return found


def best(work: Callable[[Buffer], object], bodies: list[bytes], repeats: int) -> float:
    """The best of `repeats` timings of `work` over every body, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for body in bodies:
            work(body)
        times.append(time.perf_counter() - start)
    return min(times)


def row(name: str, bodies: list[bytes], repeats: int) -> str:
    """One set's line: answers, mean size, MB/s of each step, and the C scan's speed-up."""
    native = answerkeys.collapse
    for body in bodies:  # equal results first: a fast wrong answer is no result
        assert bytes(native(body)) == bytes(collapsed_escaped(body)), body[:80]
    size = sum(map(len, bodies))
    python, c, xxh3 = (best(f, bodies, repeats) for f in (collapsed_escaped, native, hash64))
    mb = size / 1e6
    return (
        f"{name:<34} {len(bodies):>7,} {size / max(len(bodies), 1):>8,.0f} "
        f"{mb / python:>9,.0f} {mb / c:>9,.0f} {mb / xxh3:>9,.0f} {python / c:>7.1f}x"
    )


def main() -> None:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=40.0, help="generated corpus size")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="reference")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if not answerkeys.NATIVE:
        raise SystemExit("genledger.fast._collapse is not built: run `pip install -e .`")
    print(
        f"{'answers of':<34} {'answers':>7} {'mean B':>8} {'Python':>9} {'C MB/s':>9} "
        f"{'xxh3':>9} {'C/Py':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_corpus(root, args.mb, shape=args.shape)
        every: list[bytes] = []
        for path in sorted(root.rglob("*.jsonl")):
            found = answers(path)
            every += found
            if found:
                print(row(f"{args.shape}: {path.parent.name}/{path.stem}", found, args.repeats))
        print(row(f"{args.shape}: all ({args.mb:g} MB)", every, args.repeats))
    real = [a for path in sorted(SHARED.glob("realworld*/data/*/*.jsonl")) for a in answers(path)]
    if real:
        print(row("real: ../shared/realworld*/data", real, args.repeats))
        long = [a for a in real if len(a) >= 1000]
        if long:
            print(row("real: answers of 1 kB or more", long, args.repeats))


if __name__ == "__main__":
    main()
