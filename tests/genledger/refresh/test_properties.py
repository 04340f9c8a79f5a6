"""Property tests: incremental refresh == full scan after every step, and a model-based reader test.

Detection contract exercised here (docs/tailing.md): a file is re-read from 0 when its inode
changed, it shrank below the checkpoint, its first complete line changed, or any of the last
`TAIL_WINDOW` bytes before the checkpoint changed. Replacements below always change the first
line (a generation marker), as the contract requires; truncations and torn appends are arbitrary.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from genledger.refresh.collect import VANISHED
from genledger.tail.checkpoint import Checkpoint
from genledger.tail.lines import BOM
from genledger.tail.reader import FileReader

from .. import shards
from ..conftest import Ledger, comparable

SHARDS = (
    "raw_responses.jsonl",
    "raw_responses_b.jsonl",
    "part-00001/raw_responses.jsonl",
    "tokenized_data.jsonl",
    "prompts.jsonl",
)
# Sealed shards (read whole when changed), nested or not, in every compressed form.
SEALED = (
    "raw_responses-s.jsonl.gz",
    "part-00002/raw_responses.jsonl.zst",
    "part-00003/deep/tokenized_data.jsonl.gz",
    "prompts-s.jsonl.zst",
    "raw_responses-p.parquet",
    "part-00004/tokenized_data.parquet",
)
# Hundreds of refreshes each fsync their writes: on tmpfs that costs nothing.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
IDS = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "é", "🙂"]))
TEXT = st.sampled_from(["ok", "é🙂", "x\u2028y\u2029z\u0085", "</think> leak", "ünï"])


@st.composite
def record_line(draw: st.DrawFn) -> bytes:
    """One line (with `\\n`) of a mix of formats, defects, blanks, CRLF and junk."""
    rid = draw(IDS)
    text = draw(TEXT)
    tokens: Any = draw(st.one_of(st.integers(0, 40), st.sampled_from([-1, 1.5, "3", True])))
    kinds = ["flat", "sglang", "chat", "batch", "array", "tokenized", "blank", "junk"]
    kind = draw(st.sampled_from(kinds))
    record: Any
    if kind == "flat":
        record = {"id": rid, "text": text, "completion_tokens": tokens}
    elif kind == "sglang":
        record = {"text": text, "meta_info": {"id": rid, "completion_tokens": tokens}}
    elif kind == "chat":
        message = {"content": text}
        record = {
            "id": rid,
            "choices": [{"message": message}],
            "usage": {"completion_tokens": tokens},
        }
    elif kind == "batch":
        record = {
            "custom_id": rid or "n",
            "response": None if tokens == 0 else {"status_code": 500},
        }
    elif kind == "array":
        record = [{"meta_info": {"completion_tokens": tokens}}, {"output_ids": [1, 2]}]
    elif kind == "tokenized":
        ids = draw(st.lists(st.integers(0, 9), max_size=4))
        mask = draw(st.lists(st.integers(0, 1), max_size=4))
        record = {"input_ids": [ids] if draw(st.booleans()) else ids, "loss_mask": mask}
    elif kind == "blank":
        return draw(st.sampled_from([b"\n", b"  \n", b"\r\n", b"\t\r\n"]))
    else:
        return draw(st.sampled_from([b"{oops\n", b"[1, 2]\n", b'"s"\n', b"\xff\xfe\n"]))
    data = orjson.dumps(record)
    return data + draw(st.sampled_from([b"\n", b"\r\n"]))


def block_of(lines: list[bytes], bom: bool = False) -> bytes:
    return (BOM if bom else b"") + b"".join(lines)


def first_line(generation: int) -> bytes:
    """A first line no earlier version of the file had: what makes a replacement detectable."""
    return orjson.dumps({"id": f"gen{generation}", "completion_tokens": generation}) + b"\n"


APPEND = st.tuples(
    st.just("append"),
    st.sampled_from(SHARDS),
    st.lists(record_line(), min_size=1, max_size=4),
    st.lists(st.floats(0, 1), max_size=3),  # tear points: each piece is its own write
)
TRUNCATE = st.tuples(st.just("truncate"), st.sampled_from(SHARDS), st.floats(0, 1))
REPLACE = st.tuples(
    st.just("replace"),
    st.sampled_from(SHARDS),
    st.lists(record_line(), max_size=4),
    st.sampled_from(["os.replace", "in place"]),
    st.booleans(),  # BOM
)
PARQUET_RESPONSE = st.fixed_dictionaries(
    {"id": IDS, "completion_tokens": st.integers(0, 40), "text": TEXT}
)
PARQUET_TOKENIZED = st.fixed_dictionaries(
    {
        "input_ids": st.lists(st.integers(0, 9), max_size=4),
        "loss_mask": st.lists(st.integers(0, 1), max_size=4),
    }
)
SEALED_WRITE = st.tuples(
    st.just("sealed"),
    st.sampled_from(SEALED),
    st.lists(record_line(), max_size=5),
    st.one_of(st.lists(PARQUET_RESPONSE, max_size=5), st.lists(PARQUET_TOKENIZED, max_size=5)),
    st.booleans(),  # still being written (compressed forms): the stream has no end yet
    st.sampled_from(["os.replace", "in place"]),
)
DELETE = st.tuples(st.just("delete"), st.sampled_from(SHARDS[1:] + SEALED))
OPS = st.lists(
    st.one_of(APPEND, APPEND, TRUNCATE, REPLACE, SEALED_WRITE, SEALED_WRITE, DELETE),
    min_size=1,
    max_size=8,
)


def sealed_bytes(op: tuple[Any, ...]) -> bytes:
    """The whole shard a sealed write leaves: compressed lines, or Parquet rows."""
    _, shard, lines, rows, writing, _ = op
    if shard.endswith(".parquet"):
        wanted = "completion_tokens" if "raw_responses" in shard else "input_ids"
        return shards.parquet([r for r in rows if wanted in r])
    data = block_of(lines)
    if shard.endswith(".gz"):
        return shards.gzip_being_written(data) if writing else shards.gz(data)
    return shards.zstd_being_written(data) if writing else shards.zst(data)


def steps(ops: list[tuple[Any, ...]], ledger: Ledger) -> Any:
    """Apply the ops one write at a time; yield after each write so the caller can refresh."""
    generation = 0
    for op in ops:
        kind, shard = op[0], op[1]
        path = ledger.file(shard)
        if kind == "append":
            data = block_of(op[2])
            cuts = sorted({int(f * len(data)) for f in op[3]} | {0, len(data)})
            for start, stop in itertools.pairwise(cuts):
                ledger.append(data[start:stop], shard)
                yield
        elif kind == "truncate":
            if path.exists():
                ledger.truncate(int(op[2] * path.stat().st_size), shard)
                yield
        elif kind == "sealed":
            shards.write(path, sealed_bytes(op), replace=op[5] == "os.replace")
            yield
        elif kind == "delete":
            if path.exists():
                path.unlink()
                yield
        else:
            generation += 1
            data = block_of([first_line(generation), *op[2]], bom=op[4])
            if op[3] == "os.replace" or not path.exists():
                ledger.replace(data, shard)
            else:
                ledger.rewrite_in_place(data, shard)
            yield


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(ops=OPS)
def test_incremental_refresh_equals_a_full_scan_after_every_write(ops: list[Any]) -> None:
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        ledger = Ledger(Path(tmp))
        ledger.append(first_line(0))  # the dataset exists from the start
        ledger.refresh()
        for _ in steps(ops, ledger):
            incremental = ledger.refresh()
            assert comparable(without_vanished(incremental)) == comparable(ledger.fresh_scan())


def without_vanished(stats: dict[str, Any]) -> dict[str, Any]:
    """The stats minus the entries of files deleted since the previous refresh: only an
    incremental refresh knows they were there (and says so, once)."""
    for block in stats["datasets"].values():
        block["files"] = {k: v for k, v in block["files"].items() if v.get("error") != VANISHED}
    return stats


def complete_lines(data: bytes) -> list[bytes]:
    """The reader's contract, written independently: `\\n`-split, CR and BOM-at-0 stripped."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    *complete, _pending = data.split(b"\n")
    return [line[:-1] if line.endswith(b"\r") else line for line in complete]


LINE_BYTES = st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")) | st.sampled_from(
    ["é🙂".encode(), b"\r", BOM, "\u2028".encode()]
)


class TailerMachine(RuleBasedStateMachine):
    """Random write/tear/rotate/truncate/read actions against an in-memory model of the file."""

    @initialize()
    def start(self) -> None:
        self.dir = tempfile.TemporaryDirectory(dir=SCRATCH)
        self.path = Path(self.dir.name) / "f.jsonl"
        self.path.write_bytes(b"")
        self.model = b""  # what the file holds
        self.seen: list[bytes] = []  # lines the reader yielded since it last restarted
        self.cp: Checkpoint | None = None
        self.pending = 0
        self.generation = 0

    def teardown(self) -> None:
        if hasattr(self, "dir"):
            self.dir.cleanup()

    def _append(self, data: bytes) -> None:
        with self.path.open("ab") as handle:
            handle.write(data)
        self.model += data

    @rule(lines=st.lists(LINE_BYTES, min_size=1, max_size=4))
    def write(self, lines: list[bytes]) -> None:
        self._append(b"".join(line + b"\n" for line in lines))

    @rule(line=LINE_BYTES, cut=st.integers(0, 20))
    def tear(self, line: bytes, cut: int) -> None:
        data = line + b"\n"
        self._append(data[: min(cut, len(data) - 1)])

    @rule(lines=st.lists(LINE_BYTES, max_size=3), bom=st.booleans())
    def rotate(self, lines: list[bytes], bom: bool) -> None:
        self.generation += 1
        head = b"gen %d\n" % self.generation
        data = (BOM if bom else b"") + head + b"".join(line + b"\n" for line in lines)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, self.path)
        self.model = data

    @rule(fraction=st.floats(0, 1))
    def truncate(self, fraction: float) -> None:
        size = int(len(self.model) * fraction)
        os.truncate(self.path, size)
        self.model = self.model[:size]

    @rule()
    def read(self) -> None:
        with FileReader(self.path, self.cp, chunk_size=7) as reader:
            got = [line.content for line in reader.lines()]
            result = reader.result()
        if result.restarted:
            self.seen = []
        self.seen += got
        self.cp = result.checkpoint
        self.pending = result.pending_bytes
        assert self.seen == complete_lines(self.model)
        assert self.pending == len(self.model) - (self.model.rfind(b"\n") + 1)

        if self.cp.offset:
            assert self.model[: self.cp.offset].endswith(b"\n")


TailerMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)
test_tailer_matches_its_model_under_random_faults = TailerMachine.TestCase
