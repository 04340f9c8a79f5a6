"""Corpora of real recorded responses for the benchmarks: `../shared/realworld*/data`, repeated.

- `real`: every JSONL dataset of every `realworld*/data` folder, each file repeated whole (a
  stream stays whole) to an equal share of the size asked, one dataset folder each.
- `real-openai`: the OpenAI chat completions recorded from api.openai.com, repeated to the size
  asked, each copy's ids and message texts made unique (`-<copy>` after the id, `<copy>: `
  before each text), so no check sees the copies as duplicates; DuckDB's query computes its
  totals (`benchmarks/peers.py`).

The records are written as recorded, byte for byte (only the unique marks are added).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

# ../shared beside the checkout (GENLEDGER_SHARED: elsewhere, e.g. for a copy of the tree)
SHARED = Path(os.environ.get("GENLEDGER_SHARED") or Path(__file__).resolve().parents[2] / "shared")
OPENAI_CHAT = ("realworld", "openai_chat")
_ID = re.compile(rb'("id": ?"chatcmpl-[^"]*)"')
_TEXT = re.compile(rb'("content": ?")')


def sources(shared: Path = SHARED) -> list[Path]:
    """Every JSONL file of the real datasets, in a stable order."""
    return sorted(shared.glob("realworld*/data/*/*.jsonl"))


def _dataset(path: Path) -> str:
    """The benchmark dataset folder of a source file: `<realworld folder>_<dataset>`."""
    return f"{path.parents[2].name}_{path.parent.name}"


def _same(data: bytes, copy: int) -> bytes:
    return data


def _unique(data: bytes, copy: int) -> bytes:
    """Copy `copy` of an OpenAI chat file: every id and message text marked with it."""
    data = _ID.sub(rb'\g<1>-%d"' % copy, data)
    return _TEXT.sub(rb"\g<1>%d: " % copy, data)


def _repeat(source: Path, out: Path, size: float, mark: Callable[[bytes, int], bytes]) -> int:
    """Write `source` whole again and again to `out` until it holds `size` bytes; returns
    the copies written."""
    data = source.read_bytes()
    if not data.endswith(b"\n"):
        data += b"\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    copies = max(1, round(size / len(data)))
    with out.open("wb") as fh:
        for copy in range(copies):
            fh.write(mark(data, copy))
    return copies


def _plan(
    shape: str, shared: Path, only: tuple[str, ...] = ()
) -> list[tuple[Path, Callable[[bytes, int], bytes]]]:
    """The source files of `shape` (`only`: of these dataset folders) and how each copy is
    marked."""
    if shape == "real-openai":
        return [(shared.joinpath(OPENAI_CHAT[0], "data", OPENAI_CHAT[1]) / "raw_responses.jsonl",
                 _unique)]  # fmt: skip
    return [(path, _same) for path in sources(shared) if not only or path.parent.name in only]


def write_real(
    root: Path, mb: float, shape: str, shared: Path = SHARED, only: tuple[str, ...] = ()
) -> int:
    """Write the real corpus `shape` of about `mb` MB under `root` (`only`: of these
    datasets); returns its files."""
    plan = _plan(shape, shared, only)
    if not plan or not all(path.is_file() for path, _ in plan):
        raise SystemExit(f"no real records under {shared}/realworld*/data")
    for path, mark in plan:
        _repeat(path, root / _dataset(path) / path.name, mb * 1e6 / len(plan), mark)
    return len(plan)


def append_real(
    root: Path,
    share: float,
    seed: int,
    shape: str,
    shared: Path = SHARED,
    only: tuple[str, ...] = (),
) -> int:
    """Append whole copies of the sources (a stream stays whole) adding up to about `share`
    of the corpus: each file gets its share in whole copies, the bytes a copy cannot fill
    carried on to the next file (so a source bigger than its file's share is not appended to
    every file: one copy each would append 8 % of the real corpus, not 1 %); `seed` numbers
    the copies' marks. Returns the bytes added."""
    added, owed = 0, 0.0
    for path, mark in _plan(shape, shared, only):
        target = root / _dataset(path) / path.name
        data = path.read_bytes()
        if not data.endswith(b"\n"):
            data += b"\n"
        owed += target.stat().st_size * share
        copies = int(owed // len(data))
        owed -= copies * len(data)
        if not copies:
            continue
        extra = b"".join(mark(data, 1_000_000 * seed + k) for k in range(copies))
        with target.open("ab") as fh:
            fh.write(extra)
        added += len(extra)
    return added
