"""The state store: versioned per-dataset records, atomic saves, and a per-dataset lock."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from genledger.ledger import jsonio
from genledger.ledger.idlist import IdList
from genledger.ledger.records import STATE_VERSION, DatasetRecord, FileState
from genledger.ledger.tally import FileTally
from genledger.refresh.atomic import STALE_TEMP_S, atomic_write_bytes, atomic_write_many
from genledger.refresh.collect import refresh
from genledger.refresh.state import StateBusy, StateStore
from genledger.rules.result import RuleTally
from genledger.tail.checkpoint import Checkpoint

from ..conftest import Ledger, comparable
from ..lock_holder import hold
from .syncs import recorded


def a_record(name: str = "ds ü/1", root: str = "/data") -> DatasetRecord:
    tally = FileTally.of(records=2, counted=2, nonzero=2, total_comp=9)
    tally.ids = IdList.of([(1, "a"), (2, "b")])
    tally.failures["zero_tokens"] = RuleTally(1, [{"file": "f", "line": 1, "reason": "0"}])
    state = FileState(
        name, "raw_responses.jsonl", "responses", Checkpoint(offset=10, lines=2), tally
    )
    return DatasetRecord(name, root, {state.name: state}, signature="old")


def test_a_saved_record_loads_back_equal(tmp_path: Path) -> None:
    store = StateStore(tmp_path, "/data", "old")
    record = a_record()
    store.save(record)
    assert store.load(record.name) == record
    assert orjson.loads(store.path(record.name).read_bytes())["version"] == STATE_VERSION


def test_stats_that_cannot_be_written_commit_no_record_and_leave_no_new_segment_file(
    tmp_path: Path,
) -> None:
    store = StateStore(tmp_path / "state", "/data", "old")
    kept = a_record("kept")
    store.save(kept)
    before = sorted(p.name for p in (tmp_path / "state" / "datasets").iterdir())
    grown, new = a_record("kept"), a_record("new")
    grown.files["raw_responses.jsonl"].tally.ids = IdList.of([(1, "a"), (2, "b"), (3, "c")])
    (tmp_path / "stats.json").mkdir()  # the stats' rename fails
    with pytest.raises(OSError):
        store.save_all([grown, new], first=[(tmp_path / "stats.json", b"{}")])
    assert sorted(p.name for p in (tmp_path / "state" / "datasets").iterdir()) == before
    assert store.load("kept") == kept  # bytes appended past its committed length are ignored
    assert store.load("new").files == {}


def test_a_full_reread_keeps_only_the_rate_history_and_the_names_of_the_files(
    tmp_path: Path,
) -> None:
    store = StateStore(tmp_path, "/data", "old")
    record = a_record()
    record.history = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    store.save(record)
    fresh = store.load(record.name, history_only=True)
    (state,) = record.files.values()
    named = FileState(state.dataset, state.name, state.role, error=state.error)
    assert fresh == DatasetRecord(
        record.name,
        "/data",
        {state.name: named},
        history=record.history,
        signature="old",
        files_only_named=True,
    )
    assert StateStore(tmp_path, "/other").load(record.name, history_only=True).history == []


def test_a_damaged_record_costs_a_full_reread_not_a_crash(tmp_path: Path) -> None:
    store = StateStore(tmp_path, "/data")
    store.save(a_record())
    store.path("ds ü/1").write_bytes(b'{"version": 1, "name": "ds')
    loaded = store.load("ds ü/1")
    assert loaded.files == {} and loaded.notice is not None
    assert "is damaged" in loaded.notice and "read again from the start" in loaded.notice


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw.update(files=[1, 2]),
        lambda raw: raw["files"]["raw_responses.jsonl"]["checkpoint"].update(offset="abc"),
        lambda raw: raw["files"]["raw_responses.jsonl"]["tally"].update(sums=[3]),
        lambda raw: raw.update(history=[["x"]]),
        lambda raw: raw["rules"].update(failures={"zero_tokens": 5}),
    ],
)
def test_a_record_of_the_wrong_shape_is_read_again_with_a_notice(
    tmp_path: Path, damage: Any
) -> None:
    store = StateStore(tmp_path, "/data", "old")
    store.save(a_record())
    raw = orjson.loads(store.path("ds ü/1").read_bytes())
    damage(raw)
    store.path("ds ü/1").write_bytes(orjson.dumps(raw))
    loaded = store.load("ds ü/1")
    assert loaded.files == {} and loaded.notice is not None
    assert "is damaged" in loaded.notice and str(store.path("ds ü/1")) in loaded.notice


def test_counts_made_under_another_counting_signature_are_read_again(tmp_path: Path) -> None:
    StateStore(tmp_path, "/data", "old").save(a_record())
    loaded = StateStore(tmp_path, "/data", "new").load("ds ü/1")
    assert loaded.notice is not None and "read again" in loaded.notice
    # Only the names of the files are kept (one gone later is still reported), no counts.
    assert loaded.files_only_named and loaded.signature == "new"
    assert all(
        f.tally == FileTally() and f.checkpoint == Checkpoint() for f in loaded.files.values()
    )
    again = StateStore(tmp_path, "/data", "new").load("ds ü/1", history_only=True)
    assert again.files_only_named and set(again.files) == set(loaded.files)


def test_a_record_of_another_data_root_or_version_is_ignored(tmp_path: Path) -> None:
    StateStore(tmp_path, "/other").save(a_record(root="/other"))
    assert StateStore(tmp_path, "/data").load("ds ü/1").files == {}
    raw = orjson.loads(StateStore(tmp_path, "/other").path("ds ü/1").read_bytes())
    raw["version"] = STATE_VERSION + 1
    StateStore(tmp_path, "/other").path("ds ü/1").write_bytes(orjson.dumps(raw))
    assert StateStore(tmp_path, "/other").load("ds ü/1").files == {}


def test_datasets_with_unsafe_names_get_distinct_record_files(tmp_path: Path) -> None:
    store = StateStore(tmp_path, "/data")
    names = ["a/b", "a_b", "a:b", "." * 3, "x" * 200]
    paths = {store.path(n) for n in names}
    assert len(paths) == len(names)
    assert all(p.parent == tmp_path / "datasets" for p in paths)


def test_the_dataset_lock_serialises_two_refreshes(tmp_path: Path) -> None:
    store = StateStore(tmp_path, "/data")
    events: list[str] = []

    def hold(tag: str) -> None:
        with store.locked("ds"):
            events.append(f"{tag} in")
            time.sleep(0.2)
            events.append(f"{tag} out")

    threads = [threading.Thread(target=hold, args=(t,)) for t in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert events in (["a in", "a out", "b in", "b out"], ["b in", "b out", "a in", "a out"])


@pytest.mark.timeout(60)
def test_a_refresh_waits_for_a_held_lock_only_so_long_and_names_its_holder(
    tmp_path: Path,
) -> None:
    holder = hold(tmp_path, "ds", 600)
    try:
        store = StateStore(tmp_path, "/data", lock_wait_s=0.3)
        busy = f"'ds'.*pid {holder.pid} since .*0.3 s"
        with pytest.raises(StateBusy, match=busy) as caught, store.locked("ds"):
            raise AssertionError("the lock was taken while another process held it")
        assert "lock_wait_seconds" in str(caught.value)
        with store.locked("other"):  # only the held dataset waits
            pass
    finally:
        holder.kill()
        holder.wait()
    with StateStore(tmp_path, "/data", lock_wait_s=0.0).locked("ds"):  # a dead holder's is free
        pass


@pytest.mark.timeout(60)
def test_a_lock_released_within_the_wait_is_taken(tmp_path: Path) -> None:
    holder = hold(tmp_path, "ds", 0.5)
    try:
        with StateStore(tmp_path, "/data", lock_wait_s=30).locked("ds"):
            assert not (tmp_path / "holding").exists(), "taken while another process held it"
    finally:
        holder.kill()
        holder.wait()


def test_temp_files_left_by_a_killed_writer_are_swept_once_stale(tmp_path: Path) -> None:
    target = tmp_path / "stats.json"
    stale, fresh = tmp_path / ".stats.json.dead1.tmp", tmp_path / ".stats.json.live2.tmp"
    other = tmp_path / ".other.json.dead3.tmp"
    for leftover in (stale, fresh, other):
        leftover.write_bytes(b"{")
    old = time.time() - STALE_TEMP_S - 60
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    atomic_write_bytes(target, b"{}")
    assert target.read_bytes() == b"{}"
    assert (stale.exists(), fresh.exists(), other.exists()) == (False, True, True)


def _temps(*folders: Path) -> list[str]:
    return sorted(p.name for folder in folders for p in folder.glob(".*.tmp"))


def test_several_files_are_written_at_once_each_atomically(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    files = [(one / "a.json", b"A" * 100_000), (two / "b.json", b"B"), (one / "c.json", b"")]
    (one).mkdir()
    (one / "a.json").write_bytes(b"old")
    atomic_write_many(files)
    assert [path.read_bytes() for path, _ in files] == [data for _, data in files]
    assert _temps(one, two) == []


@pytest.mark.parametrize("durable", [True, False])
def test_only_durable_writes_are_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool
) -> None:
    # Rates are written without fsync (a saving lost to a power cut costs a rate sample), yet
    # still atomically: the new bytes under the name, no temp file beside them.
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    files = [(tmp_path / "a.rates", b"new"), (tmp_path / "b.rates", b"B")]
    (tmp_path / "a.rates").write_bytes(b"old")
    atomic_write_many(files, durable=durable)
    assert [path.read_bytes() for path, _ in files] == [b"new", b"B"]
    assert _temps(tmp_path) == []
    assert bool(synced) is durable


def test_a_failed_write_leaves_every_target_as_it_was_and_no_temp_file(tmp_path: Path) -> None:
    # The third target cannot be written (its folder is a file): nothing is renamed yet, so
    # the first two keep their old bytes, and their temp files are gone.
    (tmp_path / "a.json").write_bytes(b"old a")
    (tmp_path / "blocker").write_bytes(b"a file, not a folder")
    files = [
        (tmp_path / "a.json", b"new a"),
        (tmp_path / "b.json", b"new b"),
        (tmp_path / "blocker" / "c.json", b"new c"),
    ]
    with pytest.raises(OSError) as caught:
        atomic_write_many(files)
    assert caught.value.filename == str(tmp_path / "blocker" / "c.json")
    assert (tmp_path / "a.json").read_bytes() == b"old a"
    assert not (tmp_path / "b.json").exists()
    assert _temps(tmp_path) == []


def test_a_failed_rename_names_its_target_and_keeps_the_renames_before_it(tmp_path: Path) -> None:
    (tmp_path / "b.json").mkdir()  # a folder where the second file goes: the rename fails
    files = [(tmp_path / "a.json", b"new a"), (tmp_path / "b.json", b"new b")]
    with pytest.raises(OSError) as caught:
        atomic_write_many(files)
    assert caught.value.filename == str(tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == b"new a"  # each file is atomic on its own
    assert (tmp_path / "b.json").is_dir()
    assert _temps(tmp_path) == []


def test_a_failed_sync_in_any_thread_fails_the_write_and_renames_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The syncs run in threads: an error in one of them must still reach the caller.
    real_fsync, calls = os.fsync, []

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 3:
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    files = [(tmp_path / f"{name}.json", b"new") for name in "abcd"]
    with pytest.raises(OSError) as caught:
        atomic_write_many(files)
    assert caught.value.errno == 5
    assert not any(path.exists() for path, _ in files)
    assert _temps(tmp_path) == []


def test_a_refresh_appends_to_the_segment_file_and_a_full_one_starts_a_new_generation(
    tmp_path: Path,
) -> None:
    ledger = Ledger(tmp_path)
    lines = b"".join(b'{"id": "id-%d", "completion_tokens": 3}\n' % i for i in range(200))
    ledger.append(lines)
    ledger.refresh()
    (first,) = (ledger.state_dir / "datasets").glob("*.seg")
    before = first.read_bytes()
    ledger.append(b'{"id": "one-more", "completion_tokens": 4}\n')
    ledger.refresh()
    (grown,) = (ledger.state_dir / "datasets").glob("*.seg")
    after = grown.read_bytes()
    # the same file, its committed bytes kept, and only what the arrays gained added after
    assert grown == first and after.startswith(before)
    assert 0 < len(after) - len(before) < len(before) // 4
    stats = ledger.refresh(full=True)
    (renewed,) = (ledger.state_dir / "datasets").glob("*.seg")
    assert renewed != first  # a full re-read loaded no array: the old bytes are all dead
    assert comparable(stats) == comparable(ledger.fresh_scan())


def test_a_refresh_syncs_once_then_renames_the_stats_before_any_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One round of data syncs for the stats, the records and their segment files' new bytes;
    # then the stats renamed in and their folder synced before a record moves a checkpoint.
    ledger = Ledger(tmp_path)
    ledger.append(b'{"id": "a", "completion_tokens": 3}\n')
    ledger.refresh()
    ledger.append(b'{"id": "b", "completion_tokens": 4}\n')
    events = recorded(monkeypatch)
    stats = ledger.refresh()
    assert stats["totals"]["total_comp"] == 7
    (record,) = (ledger.state_dir / "datasets").glob("*.json")
    (segments,) = (ledger.state_dir / "datasets").glob("*.seg")
    stats_at = events.index(("rename", str(ledger.stats_path)))
    record_at = events.index(("rename", str(record)))
    assert stats_at < events.index(("sync", str(ledger.stats_path.parent))) < record_at
    data_syncs = [
        i
        for i, (what, path) in enumerate(events)
        if what == "sync" and path.endswith((".tmp", ".seg"))
    ]
    assert ("sync", str(segments)) in events
    assert max(data_syncs) < stats_at  # every file's bytes durable before the first rename


# --- damaged records: a notice and a re-read, never a traceback -------------------------------


def _record_of(tmp_path: Path) -> tuple[Ledger, dict[str, Any]]:
    ledger = Ledger(tmp_path)
    ledger.append(b'{"id": "a", "completion_tokens": 3}\n{"oops\n')
    ledger.append(b'{"input_ids": [1, 2]}\n', name="tokenized_data.jsonl")
    ledger.refresh()
    (record,) = (ledger.state_dir / "datasets").glob("*.json")
    return ledger, orjson.loads(record.read_bytes())


def _damage(ledger: Ledger, data: Any) -> None:
    (record,) = (ledger.state_dir / "datasets").glob("*.json")
    record.write_bytes(jsonio.dumps(data))


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: r.update(files=[1, 2]),
        lambda r: r["files"]["raw_responses.jsonl"]["checkpoint"].update(offset="abc"),
        lambda r: r["files"]["raw_responses.jsonl"]["checkpoint"].update(offset=-5),
        lambda r: r["files"]["raw_responses.jsonl"]["tally"]["sums"].update(records=True),
        lambda r: r["files"]["raw_responses.jsonl"]["tally"].update(counters=[]),
        lambda r: r["files"]["raw_responses.jsonl"]["tally"]["ids"].update(lines=7),
        lambda r: r["files"]["raw_responses.jsonl"].update(tally=None),
        lambda r: r["rules"].update(failures={"x": {"count": "2", "examples": []}}),
        lambda r: r.update(history=[["a"]]),
    ],
    ids=[
        "files-list",
        "offset-text",
        "offset-negative",
        "records-bool",
        "counters-list",
        "ids-int",
        "tally-null",
        "count-text",
        "history-text",
    ],
)
def test_a_record_of_the_wrong_shape_is_discarded_with_one_notice_and_read_again(
    tmp_path: Path, edit: Any
) -> None:
    ledger, record = _record_of(tmp_path)
    edit(record)
    _damage(ledger, record)
    result = refresh(ledger.config)
    (notice,) = result.notices
    assert "is damaged" in notice and "read again from the start" in notice
    assert "\n" not in notice
    assert comparable(result.stats) == comparable(ledger.fresh_scan())
    assert refresh(ledger.config).notices == []  # the record written back is whole


RECORD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**65), 2**65),
    st.floats(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _places(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _places(inner, (*at, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _places(inner, (*at, index))
    return found


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_value_of_another_type_anywhere_in_a_record_costs_a_reread_never_a_crash(
    data: st.DataObject,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ledger, record = _record_of(Path(tmp))
        places = [p for p in _places(record) if p and p[0] not in ("version", "name", "data_root")]
        *parent, last = data.draw(st.sampled_from(places))
        node = record
        for key in parent:
            node = node[key]
        value = data.draw(RECORD_VALUES)
        # A value of another type (a value of the right type is a record edited, not damaged;
        # so is any value where a null was: a null field's type is not known from it).
        assume(node[last] is not None)
        assume(value is not None and type(value) is not type(node[last]))
        node[last] = value
        _damage(ledger, record)
        result = refresh(ledger.config)
        assert len(result.notices) <= 1
        assert comparable(result.stats) == comparable(ledger.fresh_scan())


SIGNATURE = """
from genledger.ledger.records import counting_signature
from genledger.parse.declarations import FormatSet, user_declaration
table = {"name": "m", "completion_tokens": "a.b", "detect": "x & y & z", "float_counts": FLOATS}
print(counting_signature(FormatSet((user_declaration(table, "t"),))))
"""


def _signature_in_a_new_process(seed: int, floats: bool) -> str:
    code = SIGNATURE.replace("FLOATS", str(floats))
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_counting_signature_is_the_same_in_every_process_and_moves_with_a_declaration() -> None:
    # String hashing differs between processes: a signature built on it would re-read
    # every file on every refresh.
    first = _signature_in_a_new_process(1, False)
    assert _signature_in_a_new_process(2, False) == first
    assert _signature_in_a_new_process(1, True) != first  # any field of a declaration counts


def test_the_holder_is_written_over_the_last_one(tmp_path: Path) -> None:
    store = StateStore(tmp_path, "/data")
    with store.locked("ds"):
        pass
    lock = next((tmp_path / "locks").glob("*.lock"))
    lock.write_text("pid 1 since long ago " + "x" * 500)  # an older genledger's longer line
    with store.locked("ds"):
        held = lock.read_text()
    assert held.split() == ["pid", str(os.getpid()), "since", held.split()[3]]
    assert held.split()[3].endswith("Z") and len(held) == 64
