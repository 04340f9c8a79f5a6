"""Quiet datasets (refresh.quiet): a refresh that reuses a dataset's kept block writes the
very stats and state a refresh that counts it would, and it is taken only when nothing moved.

The oracle is the same refresh at the same instant over a copy of the state dir, with the
quiet path turned off (`collect._quiet` finding none): both stats JSONs must be equal byte
for byte, and both records' files equal (bar why each file was last read, which the quiet
path leaves as it was: it only restarts rates, and an unchanged file never does). A third
state dir takes the quiet path without the records' sidecars (`ledger.quietfile`), reading
each record: its stats must be the same bytes too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genledger.config import Config
from genledger.ledger.records import DatasetRecord
from genledger.refresh import collect
from genledger.refresh.collect import refresh
from genledger.refresh.reading import SETTLE_SECONDS
from genledger.refresh.state import StateStore

from ..parse.sdk_records import openai_chat

SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
SHARDS = ("raw_responses_0.jsonl", "part-1/raw_responses_1.jsonl", "raw_responses_2.jsonl")


def chat_line(i: int) -> bytes:
    """One chat completion (openai-python's own model): 11 prompt tokens, 30 + i % 7 out."""
    return openai_chat(f"chatcmpl-{i}", 11, 30 + i % 7, f"answer {i}").model_dump_json().encode()


class Twins:
    """One data root refreshed through two state dirs: one with the quiet path, one without."""

    def __init__(self, base: Path) -> None:
        self.base, self.root = base, base / "data"
        (self.root / "ds").mkdir(parents=True)
        self.now = time.time()
        self.written = 0
        self.kept_sidecar: tuple[Path, bytes] | None = None  # a sidecar's bytes, to put back

    def config(self, side: str) -> Config:
        where = self.base / side
        return Config(data_root=self.root, stats_path=where / "s.json", state_dir=where / "st")

    def write(self, shard: str, lines: int, newline: bool = True) -> None:
        path = self.root / "ds" / shard
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as fh:
            for _ in range(lines):
                fh.write(chat_line(self.written) + b"\n")
                self.written += 1
            if not newline:
                fh.write(chat_line(self.written)[:20])

    def refresh_both(self, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, bytes]:
        """The three refreshes at the same instant; the stats JSONs of the one with the
        quiet path and of the one without, as written (the one reading no sidecar is
        asserted equal to the first here)."""
        refresh(self.config("quiet"), now=self.now)
        with monkeypatch.context() as patch:
            patch.setattr(StateStore, "load_quiet", StateStore.load_kept)
            refresh(self.config("kept"), now=self.now)
        with monkeypatch.context() as patch:
            patch.setattr(collect, "_quiet", lambda *args: {})
            refresh(self.config("counted"), now=self.now)
        quiet, kept, counted = (
            (self.base / side / "s.json").read_bytes() for side in ("quiet", "kept", "counted")
        )
        assert quiet == kept
        return quiet, counted

    def records(self) -> tuple[DatasetRecord, DatasetRecord]:
        found = []
        for side in ("quiet", "counted"):
            config = self.config(side)
            store = collect._store(config)
            found.append(store.load("ds"))
        return found[0], found[1]


def files_of(record: DatasetRecord) -> dict[str, Any]:
    out = {}
    for name, state in record.files.items():
        entry = state.to_dict()
        entry.pop("last_read")
        out[name] = entry
    return out


def assert_twins(twins: Twins, monkeypatch: pytest.MonkeyPatch) -> None:
    quiet, counted = twins.refresh_both(monkeypatch)
    assert orjson.loads(quiet) == orjson.loads(counted)
    assert quiet == counted
    a, b = twins.records()
    assert files_of(a) == files_of(b)
    assert (a.history, a.rules, a.windows, a.fleet_first) == (b.history, b.rules, b.windows,
                                                              b.fleet_first)  # fmt: skip


STEP = st.one_of(
    st.tuples(st.just("nothing")),
    st.tuples(st.just("append"), st.sampled_from(SHARDS), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("finish"), st.sampled_from(SHARDS)),  # end a torn last line
    st.tuples(st.just("wait"), st.sampled_from([1.0, SETTLE_SECONDS, 2 * SETTLE_SECONDS])),
    st.tuples(st.just("clock back"), st.floats(1, 100)),
    st.tuples(st.just("touch"), st.sampled_from(SHARDS)),
    st.tuples(st.just("chmod"), st.sampled_from(SHARDS)),
    st.tuples(
        st.just("stray"),
    ),  # a file named like no pattern
    st.tuples(st.just("delete"), st.sampled_from(SHARDS)),
    # the quiet side's sidecar damaged, dropped, kept and put back later, or its record
    # replaced by a copy of itself (a new inode): never a different stats JSON
    st.tuples(
        st.just("sidecar"),
        st.sampled_from(["truncate", "flip", "drop", "keep", "restore", "replace record"]),
        st.integers(0, 1 << 20),
    ),
)


def damage_state(twins: Twins, how: str, at: int) -> None:
    """Do `how` to the quiet side's sidecar (`at`: where, in its bytes) or record."""
    folder = twins.base / "quiet" / "st" / "datasets"
    sidecars, records = list(folder.glob("*.quiet")), list(folder.glob("*.json"))
    if how == "restore" and twins.kept_sidecar is not None:
        twins.kept_sidecar[0].write_bytes(twins.kept_sidecar[1])
    elif how == "replace record" and records:
        copy = records[0].with_suffix(".copy")
        shutil.copy2(records[0], copy)
        os.replace(copy, records[0])
    if not sidecars:
        return
    path, raw = sidecars[0], sidecars[0].read_bytes()
    if how == "truncate":
        path.write_bytes(raw[: at % max(len(raw), 1)])
    elif how == "flip" and raw:
        i = at % len(raw)
        path.write_bytes(raw[:i] + bytes([raw[i] ^ (1 + at % 255)]) + raw[i + 1 :])
    elif how == "drop":
        path.unlink()
    elif how == "keep":
        twins.kept_sidecar = (path, raw)


def apply(twins: Twins, step: tuple[Any, ...]) -> None:
    kind = step[0]
    shard = len(step) > 1 and isinstance(step[1], str) and kind != "sidecar"
    path = twins.root / "ds" / step[1] if shard else None
    if kind == "append":
        twins.write(step[1], step[2], newline=step[3])
    elif kind == "finish":
        twins.write(step[1], 0)
        with (twins.root / "ds" / step[1]).open("ab") as fh:
            fh.write(b"\n")
    elif kind == "wait":
        twins.now += step[1]
    elif kind == "clock back":
        twins.now -= step[1]
    elif kind == "touch" and path is not None and path.exists():
        os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000))
    elif kind == "chmod" and path is not None and path.exists():
        path.chmod(path.stat().st_mode ^ 0o444)
    elif kind == "stray":
        (twins.root / "ds" / "notes.txt").write_bytes(b"x")
    elif kind == "delete" and path is not None and path.exists():
        path.unlink()
    elif kind == "sidecar":
        damage_state(twins, step[1], step[2])


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(STEP, min_size=1, max_size=8))
def test_a_quiet_refresh_writes_what_counting_writes(
    steps: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() == 0:
        steps = [s for s in steps if s[0] != "chmod"]  # root reads whatever the mode says
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        twins = Twins(Path(tmp))
        twins.write(SHARDS[0], 2)
        twins.refresh_both(monkeypatch)
        for step in steps:
            apply(twins, step)
            assert_twins(twins, monkeypatch)


@pytest.fixture
def settled_root(tmp_path: Path) -> Config:
    """A dataset of 30 one-record shards written long ago (settled), refreshed once."""
    root = tmp_path / "data"
    for i in range(30):
        path = root / "ds" / f"part-{i // 10}" / f"raw_responses_{i:03d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(chat_line(i) + b"\n")
        long_ago = time.time_ns() - int(2 * SETTLE_SECONDS * 1e9)
        os.utime(path, ns=(long_ago, long_ago))
    config = Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    refresh(config)
    return config


def test_a_no_op_refresh_counts_no_file(
    settled_root: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_counting(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a dataset none of whose files moved was counted")

    monkeypatch.setattr(collect, "refresh_record", no_counting)
    monkeypatch.setattr(DatasetRecord, "from_bytes", no_counting)  # no file's counts decoded
    result = refresh(settled_root)
    block = result.stats["datasets"]["ds"]
    assert block["n_done"] == 30 and len(block["files"]) == 30
    assert block["total_comp"] == sum(30 + i % 7 for i in range(30))
    monkeypatch.undo()
    # the records handed on (Dagster's file assets read them) hold every file
    assert len(result.records["ds"].files) == 30


def test_one_append_among_quiet_shards_is_counted(settled_root: Config) -> None:
    assert settled_root.data_root is not None
    shard = Path(settled_root.data_root) / "ds" / "part-1" / "raw_responses_017.jsonl"
    with shard.open("ab") as fh:
        fh.write(chat_line(30) + b"\n")
    block = refresh(settled_root).stats["datasets"]["ds"]
    assert block["n_done"] == 31
    assert block["files"]["part-1/raw_responses_017.jsonl"]["lines"] == 2


def listing_of(store: StateStore) -> str:
    """The listing digest the dataset's kept quiet block was made under."""
    key: str = orjson.loads(store.path("ds").read_bytes())["quiet"]["listing"]
    return key


def test_a_damaged_quiet_block_costs_only_counting(settled_root: Config) -> None:
    store = collect._store(settled_root)
    path = store.path("ds")
    listing = listing_of(store)
    assert store.load_kept("ds", listing) is not None
    raw = orjson.loads(path.read_bytes())
    raw["quiet"]["sections"]["n_done"] = 7  # edited, or damaged: its checksum no longer holds
    path.write_bytes(orjson.dumps(raw))
    assert store.load_kept("ds", listing) is None
    assert refresh(settled_root).stats["datasets"]["ds"]["n_done"] == 30
    raw = orjson.loads(path.read_bytes())
    raw["quiet"] = ["damaged"]
    raw["kept_crc"] = zlib.crc32(orjson.dumps(["damaged"]), zlib.crc32(orjson.dumps(raw["files"])))
    path.write_bytes(orjson.dumps(raw))
    assert refresh(settled_root).stats["datasets"]["ds"]["n_done"] == 30


def test_files_damaged_under_a_quiet_block_are_read_again_with_a_notice(
    settled_root: Config,
) -> None:
    store = collect._store(settled_root)
    path = store.path("ds")
    raw = orjson.loads(path.read_bytes())
    raw["files"]["part-0/raw_responses_000.jsonl"]["tally"] = None
    path.write_bytes(orjson.dumps(raw))
    result = refresh(settled_root)
    assert len(result.notices) == 1 and "damaged" in result.notices[0]
    assert result.stats["datasets"]["ds"]["n_done"] == 30


def test_a_file_that_settles_is_counted_again(tmp_path: Path) -> None:
    twins = Twins(tmp_path)
    twins.write(SHARDS[0], 2, newline=False)  # an unterminated last line: settling fails it
    refresh(twins.config("quiet"), now=twins.now)
    stats = refresh(twins.config("quiet"), now=twins.now + 1)
    assert stats.stats["datasets"]["ds"]["quality"]["unterminated_line"] == 0
    later = refresh(twins.config("quiet"), now=twins.now + SETTLE_SECONDS + 1)
    assert later.stats["datasets"]["ds"]["quality"]["unterminated_line"] == 1


def test_state_keeps_one_quiet_block_per_dataset(settled_root: Config) -> None:
    store: StateStore = collect._store(settled_root)
    listing = listing_of(store)
    kept = store.load_kept("ds", listing)
    assert kept is not None and kept.quiet is not None and kept.kept_files is not None
    assert kept.to_bytes() == store.path("ds").read_bytes()  # written back as it was read
    # a record without a block made under the listing now is not decoded for one
    assert store.load_kept("ds", "0" * len(listing)) is None
    shutil.rmtree(store.state_dir / "datasets")
    assert store.load_kept("ds", listing) is None


def test_a_quiet_refresh_writes_only_its_rates_beside_the_record(settled_root: Config) -> None:
    store = collect._store(settled_root)
    written = store.path("ds").read_bytes()
    samples = len(store.load("ds").history)
    now = time.time()
    refresh(settled_root, now=now + 1)
    refresh(settled_root, now=now + 2)
    assert store.path("ds").read_bytes() == written  # the 30 files' record stands as it was
    assert list(store.rates.book()) == [store.path("ds").stem]  # its rates in the rates file
    assert [s[0] for s in store.load("ds").history][-2:] == [now + 1, now + 2]
    assert len(store.load("ds").history) == samples + 2
    assert settled_root.data_root is not None
    shard = Path(settled_root.data_root) / "ds" / "part-0" / "raw_responses_001.jsonl"
    with shard.open("ab") as fh:
        fh.write(chat_line(31) + b"\n")
    refresh(settled_root, now=now + 3)  # counted: the record is written whole, rates in it
    assert store.rates.book() == {}
    assert [s[0] for s in store.load("ds").history][-3:] == [now + 1, now + 2, now + 3]


def test_a_no_op_reads_each_sidecar_and_no_record(
    settled_root: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = collect._store(settled_root)
    assert store.quiet_path("ds").exists()

    def no_record(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a quiet dataset's record was read")

    monkeypatch.setattr(StateStore, "load_kept", no_record)
    monkeypatch.setattr(StateStore, "load", no_record)
    block = refresh(settled_root).stats["datasets"]["ds"]
    assert block["n_done"] == 30 and block["total_comp"] == sum(30 + i % 7 for i in range(30))


def test_a_record_changed_under_its_sidecar_is_read_itself(settled_root: Config) -> None:
    store = collect._store(settled_root)
    path, listing = store.path("ds"), listing_of(store)
    assert store.load_quiet("ds", listing) is not None
    raw = path.read_bytes()
    # edited in place, same size, its mtime put back: the sidecar's record no longer (its
    # ctime moved; a tick later than the write, as the clock that stamps files is coarse)
    time.sleep(0.05)
    stat = path.stat()
    at = raw.index(b'"n_done":') + len(b'"n_done":')
    with path.open("r+b") as fh:
        fh.seek(at)
        fh.write(b"8" if raw[at : at + 1] != b"8" else b"9")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_ino == stat.st_ino
    assert store.load_quiet("ds", listing) is None  # the record's own checksum fails it
    assert refresh(settled_root).stats["datasets"]["ds"]["n_done"] == 30


def test_a_sidecar_goes_with_its_record(settled_root: Config) -> None:
    store = collect._store(settled_root)
    assert store.quiet_path("ds").exists()
    refresh(settled_root, full=True)  # written whole again: a new sidecar for it
    assert store.load_quiet("ds", listing_of(store)) is not None
    store.forget(["ds"])
    assert not store.quiet_path("ds").exists()


def test_rates_an_older_genledger_kept_beside_a_record_are_read_once(
    settled_root: Config,
) -> None:
    store = collect._store(settled_root)
    now = time.time()
    refresh(settled_root, now=now + 1)
    rates = store.rates.book()[store.path("ds").stem]
    # as an older genledger left it: the rates beside the record, no rates file
    store.rates_path("ds").write_bytes(rates.to_bytes())
    (store.state_dir / "rates.json").unlink()
    refresh(settled_root, now=now + 2)
    assert not store.rates_path("ds").exists()
    assert [s[0] for s in store.load("ds").history][-2:] == [now + 1, now + 2]


def test_a_sidecar_that_cannot_be_written_costs_only_reading_the_record(
    settled_root: Config,
) -> None:
    store = collect._store(settled_root)
    store.quiet_path("ds").unlink()
    store.quiet_path("ds").mkdir()  # in the way of the sidecar, as a folder would be
    assert refresh(settled_root, full=True).stats["datasets"]["ds"]["n_done"] == 30
    assert store.quiet_path("ds").is_dir()
    assert store.load_quiet("ds", listing_of(store)) is not None  # from the record itself
    assert refresh(settled_root).stats["datasets"]["ds"]["n_done"] == 30


def test_a_quiet_record_read_whole_gets_its_sidecar_again(
    settled_root: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as an older genledger left the state dir: the record with its quiet block, no sidecar
    store = collect._store(settled_root)
    store.quiet_path("ds").unlink()
    first = refresh(settled_root).stats["datasets"]["ds"]  # reads the record, checks it
    assert store.quiet_path("ds").exists()
    monkeypatch.setattr(StateStore, "load_kept", lambda *args: pytest.fail("record read"))
    again = refresh(settled_root).stats["datasets"]["ds"]
    assert (
        (again["n_done"], again["files"])
        == (first["n_done"], first["files"])
        == (
            30,
            again["files"],
        )
    )
