"""Segment files: a record's arrays written once, then only what they gained, and read back
equal; damage is found, never trusted."""

from __future__ import annotations

import math
from array import array
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.ledger import segments
from genledger.ledger.hashlist import HashList
from genledger.ledger.idlist import IdList
from genledger.ledger.records import DatasetRecord, FileState
from genledger.ledger.segments import COMPACT_SLACK, Blob, Segments, SegmentsHead
from genledger.ledger.tally import FileTally
from genledger.refresh.state import StateStore


class Disk:
    """A segment file in memory, committed as a record write would commit it."""

    def __init__(self) -> None:
        self.files: dict[int, bytearray] = {}
        self.head: SegmentsHead | None = None

    def commit(self, added: Segments) -> None:
        data = self.files.setdefault(added.head.gen, bytearray())
        if added.fresh:
            data.clear()
        del data[added.start :]
        for piece in added.pieces:
            data += bytes(piece)
        self.head = added.new_head()
        assert len(data) == self.head.length

    def blob(self) -> Blob:
        assert self.head is not None
        return Blob(bytes(self.files[self.head.gen][: self.head.length]))


def _write(disk: Disk, lists: list[IdList]) -> list[dict[str, object]]:
    with segments.writing(Segments.after(disk.head)) as added:
        forms = [ids.to_dict() for ids in lists]
    disk.commit(added)
    return forms


def _read(disk: Disk, forms: list[dict[str, object]]) -> list[IdList]:
    with segments.reading(disk.blob()):
        return [IdList.from_dict(form) for form in forms]


ids_text = st.text(max_size=6)
growth = st.lists(st.lists(ids_text, max_size=30), min_size=1, max_size=25)


@settings(max_examples=200, deadline=None)
@given(growth, st.booleans())
def test_an_id_list_that_grows_refresh_after_refresh_reads_back_equal(
    steps: list[list[str]], reread: bool
) -> None:
    """Each refresh loads the list, adds ids, and writes it; what it loads is what was written,
    the extents stay few, and the file never holds much more than its live bytes."""
    disk, line = Disk(), 0
    current = IdList()
    forms = _write(disk, [current])
    for new in steps:
        (loaded,) = _read(disk, forms)
        assert loaded == current
        more = IdList.of((line := line + 1, rid) for rid in new)
        # a refresh reading a file again starts from nothing (no stored extents to reuse)
        current = (IdList() if reread and len(new) % 3 == 0 else loaded) + more
        forms = _write(disk, [current])
        for ref in forms[0].values():
            assert len(ref["at"]) <= 2 + math.log(max(ref["n"], 1), segments.MERGE_RATIO)
        assert disk.head is not None
        assert disk.head.length <= 3 * disk.head.live + 2 * COMPACT_SLACK
    assert _read(disk, forms) == [current]


def test_an_append_writes_only_what_the_list_gained() -> None:
    disk = Disk()
    big = IdList.of((n, f"id-{n:06d}") for n in range(1, 10_001))
    forms = _write(disk, [big])
    (loaded,) = _read(disk, forms)
    grown = loaded + IdList.of([(10_001, "id-010001")])
    with segments.writing(Segments.after(disk.head)) as added:
        grown.to_dict()
    # the new id's 9 bytes, its length and its line: nothing of the 10,000 before
    assert added.added == 9 + 8 + 8


@pytest.mark.parametrize("shift", [0, 10])
def test_a_loaded_list_joined_with_its_lines_moved_writes_the_moved_lines(shift: int) -> None:
    # (big enough that a write keeps the loaded extents: `test_an_append_writes_only_...`)
    disk, pairs = Disk(), [(n, f"id-{n:06d}") for n in range(1, 1001)]
    (loaded,) = _read(disk, _write(disk, [IdList.of(pairs)]))
    joined = IdList.joined([loaded, IdList.of([(1001, "c")])], [shift, shift])
    (again,) = _read(disk, _write(disk, [joined]))
    assert list(again) == [(n + shift, rid) for n, rid in [*pairs, (1001, "c")]]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40), min_size=1, max_size=12))
def test_answer_keys_grow_and_read_back_equal(steps: list[list[int]]) -> None:
    disk, current, line = Disk(), HashList(), 0
    expected: list[tuple[int, int]] = []
    for new in steps:
        more = HashList()
        for key in new:
            more.append(line := line + 1, key)
            expected.append((line, key))
        current = current + more
        with segments.writing(Segments.after(disk.head)) as added:
            form = current.to_dict()
        disk.commit(added)
        with segments.reading(disk.blob()):
            current = HashList.from_dict(form)  # the next refresh's load
        assert list(current) == expected


@pytest.mark.parametrize(
    "ref",
    [
        {"at": [[0, 100]], "n": 100},  # past the committed bytes
        {"at": [[0, 8]], "n": 16},  # a length its extents do not add up to
        {"at": [[-8, 8]], "n": 8},
        {"at": [[0, 0]], "n": 0},
        {"at": [["0", 8]], "n": 8},
        {"at": "0:8", "n": 8},
    ],
)
def test_a_damaged_reference_is_an_error(ref: dict[str, object]) -> None:
    with segments.reading(Blob(bytes(16))), pytest.raises(ValueError):
        segments.get(ref)


def test_ids_that_are_not_utf8_or_ints_cut_short_are_errors() -> None:
    with segments.reading(Blob(b"\xff\xfe" + bytes(16))):
        with pytest.raises(ValueError):
            IdList.from_dict(
                {
                    "data": {"at": [[0, 2]], "n": 2},
                    "lengths": {"at": [[2, 8]], "n": 8},
                    "lines": {"at": [[10, 8]], "n": 8},
                }
            )
        with pytest.raises(ValueError):
            segments.get_ints({"at": [[0, 7]], "n": 7}, {}, "keys")


def _record(tmp_path: Path, ids: IdList, name: str = "ds") -> DatasetRecord:
    tally = FileTally.of(records=len(ids), counted=len(ids))
    tally.ids = ids
    state = FileState(name, "raw_responses.jsonl", "responses", tally=tally)
    return DatasetRecord(name, "/data", {state.name: state}, signature="s")


def test_the_store_keeps_arrays_in_a_segment_file_and_reads_them_back(tmp_path: Path) -> None:
    store = StateStore(tmp_path, "/data", "s")
    record = _record(tmp_path, IdList.of((n, f"r{n}") for n in range(1, 501)))
    store.save(record)
    assert store.segments_path("ds", 1).stat().st_size > 500 * 16
    assert b"r499" not in store.path("ds").read_bytes()  # not in the JSON
    loaded = store.load("ds")
    assert loaded == record and loaded.notice is None
    loaded.files["raw_responses.jsonl"].tally.ids += IdList.of([(501, "r501")])
    before = store.segments_path("ds", 1).stat().st_size
    store.save(loaded)
    assert store.segments_path("ds", 1).stat().st_size - before < 100
    again = store.load("ds")
    assert [rid for _, rid in again.files["raw_responses.jsonl"].tally.ids][-2:] == ["r500", "r501"]


@pytest.mark.parametrize("damage", ["truncate", "remove"])
def test_a_damaged_segment_file_costs_a_reread_and_says_so(tmp_path: Path, damage: str) -> None:
    store = StateStore(tmp_path, "/data", "s")
    store.save(_record(tmp_path, IdList.of((n, f"r{n}") for n in range(1, 101))))
    path = store.segments_path("ds", 1)
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:-1])
    else:
        path.unlink()
    loaded = store.load("ds")
    assert loaded.files == {}
    assert loaded.notice is not None and "segment file" in loaded.notice


def test_bytes_left_past_the_committed_length_are_ignored_then_written_over(
    tmp_path: Path,
) -> None:
    store = StateStore(tmp_path, "/data", "s")
    record = _record(tmp_path, IdList.of((n, f"r{n}") for n in range(1, 101)))
    store.save(record)
    with store.segments_path("ds", 1).open("ab") as handle:
        handle.write(b"a writer stopped before its commit")  # never named by a record
    loaded = store.load("ds")
    assert loaded == record
    loaded.files["raw_responses.jsonl"].tally.ids += IdList.of([(101, "r101")])
    store.save(loaded)
    assert store.load("ds") == loaded
    assert b"stopped" not in store.segments_path("ds", 1).read_bytes()


def test_a_file_of_mostly_dead_bytes_is_replaced_by_a_new_generation(tmp_path: Path) -> None:
    store = StateStore(tmp_path, "/data", "s")
    big = IdList.of((n, "x" * 40 + str(n)) for n in range(1, 120_001))
    store.save(_record(tmp_path, big))
    for _ in range(2):  # the file read again from the start: its arrays written anew
        loaded = store.load("ds")
        loaded.files["raw_responses.jsonl"].tally.ids = IdList.of(
            (n, "y" * 40 + str(n)) for n in range(1, 120_001)
        )
        store.save(loaded)
    assert [p.name[-7:] for p in (tmp_path / "datasets").glob("*.seg")] == ["-g1.seg"]
    store.save(store.load("ds"))  # two thirds of its bytes are dead: a new generation
    gens = sorted(p.name for p in (tmp_path / "datasets").glob("*.seg"))
    assert len(gens) == 1 and gens[0].endswith("-g2.seg")
    assert store.load("ds").files["raw_responses.jsonl"].tally.ids.data.startswith(b"y" * 40)
    store.forget(["ds"])
    assert not list((tmp_path / "datasets").glob("*.seg"))


def test_a_record_written_without_a_head_never_reuses_a_committed_file(tmp_path: Path) -> None:
    store = StateStore(tmp_path, "/data", "s")
    store.save(_record(tmp_path, IdList.of([(1, "a")])))
    store.save(_record(tmp_path, IdList.of([(1, "b")])))  # built afresh, not loaded
    assert [p.name[-7:] for p in (tmp_path / "datasets").glob("*.seg")] == ["-g2.seg"]
    assert [rid for _, rid in store.load("ds").files["raw_responses.jsonl"].tally.ids] == ["b"]


def test_a_record_without_a_segment_file_still_loads(tmp_path: Path) -> None:
    """Records written before segment files (arrays as base64 in the JSON) read as before."""
    store = StateStore(tmp_path, "/data", "s")
    record = _record(tmp_path, IdList.of([(1, "a"), (2, "b")]))
    store.path("ds").parent.mkdir(parents=True)
    store.path("ds").write_bytes(record.to_bytes())  # no record write under way: base64
    assert b'"text":"ab"' in store.path("ds").read_bytes()
    assert store.load("ds") == record


def test_int_arrays_keep_their_values() -> None:
    disk = Disk()
    keys = HashList()
    for n, key in enumerate([-(2**63), 2**63 - 1, 0, -1]):
        keys.append(n + 1, key)
    with segments.writing(Segments.after(disk.head)) as added:
        form = keys.to_dict()
    disk.commit(added)
    with segments.reading(disk.blob()):
        back = HashList.from_dict(form)
    assert back.keys == array("q", [-(2**63), 2**63 - 1, 0, -1])


def test_a_record_written_back_with_its_files_as_stored_keeps_its_segment_file(
    tmp_path: Path,
) -> None:
    """A quiet record's files are written back as the bytes they were (`kept_files`): they
    name the committed file, which must survive even when that file is due a new generation."""
    store = StateStore(tmp_path, "/data", "s")
    store.save(_record(tmp_path, IdList.of((n, "x" * 40 + str(n)) for n in range(1, 120_001))))
    loaded = store.load("ds")
    assert loaded.segments is not None
    files = orjson.dumps(orjson.loads(store.path("ds").read_bytes())["files"])
    due = SegmentsHead(loaded.segments.gen, loaded.segments.length, live=0)  # all "dead"
    assert due.compacts()
    kept = replace(loaded, files={}, kept_files=files, segments=due)
    store.save(kept)
    assert store.segments_path("ds", loaded.segments.gen).exists()
    assert store.load("ds").files == loaded.files
