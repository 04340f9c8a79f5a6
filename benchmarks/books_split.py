"""Where the books' pass spends its time a row, by kind of entry, on real OpenAI records.

    python benchmarks/books_split.py [--repeats 5] [--rows 15000]

The rows are the table rows of `../shared/realworld/data/openai_chat/raw_responses.jsonl`
(read by the general path, `parse.formats.response_facts`), repeated to `--rows` rows. The
responses' pass (`ledger.books.account`) is compiled again with every entry, with no entry
(the rules alone, and nothing), and with each kind of entry left out (`Priced` goes with
`Count` or `Sum`, which it reads); the difference is that kind's cost. Also timed: turning
the row tuples into columns (`zip(*rows)`, then the int columns into numpy arrays), and the
books' pass over columns (`ledger.arraybooks`): its columns taken in C (`fast.columns`), then
the whole pass. Prints microseconds a row, best of `--repeats`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson
from realcorpus import OPENAI_CHAT, SHARED

from genledger.fast import vector
from genledger.ledger import books
from genledger.ledger.arraybooks import column_account
from genledger.parse.formats import response_facts
from genledger.parse.table import TableBuilder
from genledger.refresh.count import _taker
from genledger.rules import catalogue

KINDS = (books.Count, books.Sum, books.Tally, books.Ids, books.Hashes, books.Priced,
         books.Quantile, books.Trail)  # fmt: skip


def real_rows(n: int) -> list[tuple[Any, ...]]:
    """The table rows of the recorded OpenAI chat completions, repeated to `n` rows."""
    path = SHARED.joinpath(OPENAI_CHAT[0], "data", OPENAI_CHAT[1]) / "raw_responses.jsonl"
    builder = TableBuilder("responses", path.name)
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    for number, line in enumerate((lines * (n // len(lines) + 1))[:n], start=1):
        builder.add(number, number, 0, response_facts(orjson.loads(line)))
    return builder.rows


def best(run: Callable[[], object], repeats: int) -> float:
    """The fastest of `repeats` runs, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def pass_time(rows: list[Any], entries: tuple[Any, ...], rules: bool, repeats: int) -> float:
    """µs a row of the responses' pass compiled with `entries` (and the rules or none)."""
    full = books.BOOKS["responses"]
    books.BOOKS["responses"] = entries
    if not rules:
        books.rules_of = lambda table: ()  # type: ignore[assignment]
    try:
        run = books.account.__wrapped__("responses", ())  # not the cached compile
        return best(lambda: run(rows), repeats) / len(rows) * 1e6
    finally:
        books.BOOKS["responses"] = full
        books.rules_of = catalogue.rules_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rows", type=int, default=15_000)
    args = parser.parse_args()
    rows, full = real_rows(args.rows), books.BOOKS["responses"]
    print(f"{len(rows):,} rows; µs a row, best of {args.repeats}")
    print(f"  nothing (the loop)          {pass_time(rows, (), False, args.repeats):5.2f}")
    print(f"  the rules alone             {pass_time(rows, (), True, args.repeats):5.2f}")
    whole = pass_time(rows, full, True, args.repeats)
    print(f"  every entry and the rules   {whole:5.2f}")
    for kind in KINDS:
        drop = (kind, books.Priced) if kind in (books.Count, books.Sum) else (kind,)
        kept = tuple(e for e in full if not isinstance(e, drop))
        name = "+".join(d.__name__ for d in drop)
        n = sum(isinstance(e, kind) for e in full)
        cost = whole - pass_time(rows, kept, True, args.repeats)
        print(f"  {name:14s} ({n:2d} entries)  {cost:5.2f}")
    seconds = best(lambda: list(zip(*rows, strict=True)), args.repeats)
    columns = list(zip(*rows, strict=True))
    ints = [c for c in columns if all(type(v) is int for v in c)]
    print(f"  rows into {len(columns)} columns       {seconds / len(rows) * 1e6:5.2f}")
    numpy = best(lambda: [np.fromiter(c, dtype=np.int64, count=len(c)) for c in ints], args.repeats)
    print(f"  {len(ints)} int columns into numpy {numpy / len(rows) * 1e6:5.2f}")
    vector.load(numpy=True)
    take = _taker("responses")
    taken = best(lambda: take(rows), args.repeats)
    print(f"  columns taken in C          {taken / len(rows) * 1e6:5.2f}")
    over = best(lambda: column_account("responses", take)(rows), args.repeats)
    print(f"  the pass over columns, all  {over / len(rows) * 1e6:5.2f}")


if __name__ == "__main__":
    main()
