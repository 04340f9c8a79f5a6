"""Time the duplicate rules: the Python definition's sets against the walk in C.

    python benchmarks/repeats.py [--keys 100000 300000 1000000] [--files 10] [--repeats 5]
                                 [--corpus DIR]

For each number of keys, a dataset of `--files` files: record ids like the providers' own
(`chatcmpl-` and 29 random characters) in `IdList`s and answer keys (random int64s) in
`HashList`s, once all distinct (a clean dataset: the usual refresh) and twice with 1 % of
them repeated (the rules then find examples: the first repeats, and for answers where each
was first seen): anywhere, and late (in the last file, of keys first seen in the one
before). Prints the milliseconds of the duplicate-id and duplicate-answer rules by the
definition alone (`rules.rows`) and with the walk in C (`genledger.fast.repeats`: the count
and the examples' places in one pass), best of `--repeats`; the two results are checked
equal first.
"""

from __future__ import annotations

import argparse
import random
import string
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from genledger.fast import repeats
from genledger.ledger.hashlist import HashList
from genledger.ledger.idlist import IdList
from genledger.refresh.count import tally_blocks
from genledger.rules import rows
from genledger.rules.result import MAX_EXAMPLES
from genledger.tail.lines import Block

ALPHABET = string.ascii_letters + string.digits


def dataset(
    keys: int, files: int, repeated: float, rng: random.Random, late: bool = False
) -> dict[str, list[Any]]:
    """`files` files of ids and of answer keys, `keys` of each in all, `repeated` of them
    copies of an earlier one (`late`: copies in the last file of keys of the one before, so
    where they were first seen is found far into the dataset)."""
    ids = ["chatcmpl-" + "".join(rng.choices(ALPHABET, k=29)) for _ in range(keys)]
    answers = [rng.getrandbits(64) - 2**63 for _ in range(keys)]
    per = -(-keys // files)
    last = (files - 1) * per
    places = range(last, keys) if late else range(1, keys)
    for at in rng.sample(places, min(len(places), int(keys * repeated))):
        source = rng.randrange(last - per, last) if late else rng.randrange(at)
        ids[at], answers[at] = ids[source], answers[source]
    id_files, answer_files = [], []
    for f in range(files):
        span = range(f * per, min(keys, (f + 1) * per))
        id_files.append((f"raw_responses_{f}.jsonl", IdList.of((k + 1, ids[k]) for k in span)))
        hashes = HashList()
        for k in span:
            hashes.append(k + 1, answers[k])
        answer_files.append((f"raw_responses_{f}.jsonl", hashes))
    return {"ids": id_files, "answers": answer_files}


def corpus(folder: Path) -> dict[str, list[Any]]:
    """The ids and answer keys of a dataset folder's JSONL files, as a refresh reads them."""
    data: dict[str, list[Any]] = {"ids": [], "answers": []}
    for path in sorted(folder.rglob("*.jsonl")):
        raw = path.read_bytes()
        tally = tally_blocks([Block(raw, 0, 0, len(raw))], path.name, "responses")
        data["ids"].append((path.name, tally.ids))
        data["answers"].append((path.name, tally.hashes.get("answers", HashList())))
    return data


def best_ms(run: Callable[[], object], times: int) -> float:
    """The fastest of `times` runs, in milliseconds."""
    best = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def id_rule(data: dict[str, list[Any]], native: bool) -> object:
    """The duplicate-id rule, by the definition alone or with the C walk."""
    ids = data["ids"]
    buffers = [(i.data, i.lengths, i.lines) for _, i in ids]
    return rows.id_failures(ids, repeats.repeated_ids(buffers, MAX_EXAMPLES) if native else None)


def answer_rule(data: dict[str, list[Any]], native: bool) -> object:
    """The duplicate-answer rule, by the definition alone or with the C walk."""
    answers = data["answers"]
    buffers = [(h.keys, h.lines) for _, h in answers]
    found = repeats.repeated_ints(buffers, MAX_EXAMPLES) if native else None
    return rows.answer_failures(answers, found)


def _rules(native: bool, data: dict[str, list[Any]]) -> tuple[object, object]:
    return id_rule(data, native), answer_rule(data, native)


def _timed(native: bool, data: dict[str, list[Any]], times: int) -> tuple[float, float]:
    """The best milliseconds of the duplicate-id rule and of the duplicate-answer rule."""
    return (
        best_ms(lambda: id_rule(data, native), times),
        best_ms(lambda: answer_rule(data, native), times),
    )


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--keys", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--corpus", type=Path, help="time each dataset folder of DIR instead")
    args = parser.parse_args()
    if not repeats.NATIVE:
        raise SystemExit("genledger.fast._repeats is not built: run `pip install -e .`")
    header = ("dataset (keys, repeated)", "keys", "rule", "definition ms", "C walk ms", "x")
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, (30, 9, 8, 14, 11, 6), strict=True)))
    if args.corpus:
        sets = [(f.name, corpus(f)) for f in sorted(args.corpus.iterdir()) if f.is_dir()]
    else:
        sets = [
            (
                f"{keys:,} {repeated:.0%}{' late' if late else ''}",
                dataset(keys, args.files, repeated, random.Random(keys), late),
            )
            for keys in args.keys
            for repeated, late in ((0.0, False), (0.01, False), (0.01, True))
        ]
    for name, data in sets:
        timings: dict[str, list[float]] = {"ids": [], "answers": []}
        results = []
        for native in (False, True):
            results.append(_rules(native, data))
            for rule, ms in zip(timings, _timed(native, data, args.repeats), strict=True):
                timings[rule].append(ms)
        assert results[0] == results[1], "the C walk and the definition disagree"
        for rule, (slow, fast) in timings.items():
            keys = sum(len(found) for _, found in data[rule])
            print(
                f"{name:>30} {keys:>9,} {rule:>8} {slow:>14.1f} {fast:>11.1f} {slow / fast:>6.1f}"
            )


if __name__ == "__main__":
    main()
