"""Atomic writes in turn: one round of syncs, each group's renames durable before the next's."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.refresh.atomic import atomic_write_in_turn

from .syncs import recorded


def _events(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    return recorded(monkeypatch)


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*.tmp"))


@settings(deadline=None, max_examples=25)
@given(sizes=st.lists(st.integers(0, 3), min_size=1, max_size=4))
def test_every_sync_comes_first_and_each_group_settles_before_the_next_is_renamed(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int]
) -> None:
    base = tmp_path_factory.mktemp("turns")
    groups = [
        [(base / f"g{g}" / f"f{i}.json", f"{g}.{i}".encode()) for i in range(n)]
        for g, n in enumerate(sizes)
    ]
    other = base / "open.seg"
    fd = os.open(other, os.O_WRONLY | os.O_CREAT, 0o644)
    with pytest.MonkeyPatch.context() as patch:
        events = _events(patch)
        try:
            os.write(fd, b"appended bytes")
            atomic_write_in_turn(groups, synced=[fd])
            os.fstat(fd)  # the caller's fd is left open
        finally:
            os.close(fd)
    for group in groups:
        for path, data in group:
            assert path.read_bytes() == data
    renames = [i for i, (what, _) in enumerate(events) if what == "rename"]
    file_syncs = [
        i
        for i, (what, path) in enumerate(events)
        if what == "sync" and path.endswith((".tmp", ".seg"))
    ]
    assert ("sync", str(other)) in events
    assert len(file_syncs) == sum(sizes) + 1
    assert not renames or max(file_syncs) < min(renames)  # one round, before any rename
    for earlier, later in itertools.pairwise(groups):
        if not earlier or not later:
            continue
        folder_sync = events.index(("sync", str(earlier[0][0].parent)))
        assert folder_sync < events.index(("rename", str(later[0][0])))
        assert max(events.index(("rename", str(p))) for p, _ in earlier) < folder_sync
    assert _temps(base) == []


def test_a_failed_sync_renames_nothing_of_any_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync = os.fsync
    seg = tmp_path / "x.seg"
    fd = os.open(seg, os.O_WRONLY | os.O_CREAT, 0o644)

    def fsync(f: int) -> None:
        if f == fd:  # the caller's file fails: no group may be renamed in
            raise OSError(5, "Input/output error")
        real_fsync(f)

    monkeypatch.setattr(os, "fsync", fsync)
    (tmp_path / "a.json").write_bytes(b"old")
    groups = [[(tmp_path / "a.json", b"new")], [(tmp_path / "b.json", b"new")]]
    try:
        with pytest.raises(OSError) as caught:
            atomic_write_in_turn(groups, synced=[fd])
    finally:
        os.close(fd)
    assert caught.value.errno == 5
    assert (tmp_path / "a.json").read_bytes() == b"old"
    assert not (tmp_path / "b.json").exists()
    assert _temps(tmp_path) == []


def test_a_failed_rename_in_the_first_group_leaves_the_later_groups_as_they_were(
    tmp_path: Path,
) -> None:
    (tmp_path / "stats.json").mkdir()  # a folder where the first group's file goes
    (tmp_path / "record.json").write_bytes(b"old")
    groups = [[(tmp_path / "stats.json", b"new")], [(tmp_path / "record.json", b"new")]]
    with pytest.raises(OSError) as caught:
        atomic_write_in_turn(groups)
    assert caught.value.filename == str(tmp_path / "stats.json")
    assert (tmp_path / "record.json").read_bytes() == b"old"
    assert _temps(tmp_path) == []
