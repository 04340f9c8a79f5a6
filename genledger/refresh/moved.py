"""Files followed by identity: a counted file that reappears under a name no pattern matches.

logrotate's `create` renames `raw_responses.jsonl` to `raw_responses.jsonl.1` (same inode)
and starts a new file; its `copytruncate` copies the bytes to `raw_responses.jsonl.1` and
truncates the original. Either way the records counted from the old name would vanish from
the totals (the old name restarts from 0, the new name matches no pattern). Here such a file
is found and keeps its records: a name no pattern matches that the dataset's record counted
before is read on under its recorded role; and one first seen now that is the same file as a
counted one whose own name no longer holds it — the same (device, inode), or, where the
bytes were copied (and on remote roots, which have no inode), the same first line and the
same bytes before the checkpoint — takes over that file's checkpoint and counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from genledger.ledger.records import DatasetRecord, FileState
from genledger.refresh.gone import source_in
from genledger.tail.checkpoint import Checkpoint, resume_decision
from genledger.tail.discovery import DataFile, Dataset, form_of
from genledger.tail.fingerprint import checksum
from genledger.tail.roots import Handle, open_source
from genledger.tail.sealed import mark_of


def follow_moves(ds: Dataset, old: DatasetRecord) -> tuple[Dataset, DatasetRecord]:
    """`ds` with the unrecognised files that are counted files under a new name taken in
    (their recorded role), and `old` with those files' states under their new names."""
    if not ds.unrecognised or not old.files:
        return ds, old
    listed = {f.name: f for f in ds.files}
    counted = [] if old.files_only_named else _counted(old.files.values())
    moved: dict[str, FileState] = {}  # new name -> the state it goes on from
    taken: set[str] = set()  # the names whose state went to a new name
    for name in ds.unrecognised:  # matched against the states as they were: a chain of
        pool = [s for s in counted if s.name not in taken]  # renames moves each one on
        found = _moved_here(ds, name, pool, listed)
        if found is not None:
            taken.add(found[0].name)
            moved[name] = found[1]
    for name in ds.unrecognised:  # taken in at an earlier refresh, now another file
        known = old.files.get(name)
        if name not in moved and name not in taken and known is not None and known.ever_read:
            moved[name] = known
    if not moved:
        return ds, old
    states = {k: v for k, v in old.files.items() if k not in taken or k in moved}
    states.update(moved)
    new = [DataFile(ds.name, n, s.role, source_in(ds.path, n)) for n, s in moved.items()]
    files = tuple(sorted((*ds.files, *new), key=lambda f: f.name))
    unrecognised = tuple(n for n in ds.unrecognised if n not in moved)
    record = dataclasses.replace(old, files=states)
    return dataclasses.replace(ds, files=files, unrecognised=unrecognised), record


def _counted(states: Iterable[FileState]) -> list[FileState]:
    """The states a new name may be: files read and counted."""
    return [s for s in states if s.ever_read and s.error is None and s.checkpoint.file.size]


def _orphaned(state: FileState, listed: dict[str, DataFile]) -> bool:
    """The counted file's own name no longer holds it: not listed, or listed and replaced,
    truncated or rewritten since its checkpoint."""
    here = listed.get(state.name)
    return here is None or here.error is not None or not _still_there(here, state.checkpoint)


def _still_there(data_file: DataFile, cp: Checkpoint) -> bool:
    """The file under its own name is still the one `cp` was taken of."""
    try:
        handle = open_source(data_file.path)
    except OSError:
        return False
    try:
        if data_file.sealed:
            return _same_sealed(handle, cp, by_node=True)
        return resume_decision(cp, handle)[0] == cp.offset
    except OSError:
        return False
    finally:
        handle.close()


def _moved_here(
    ds: Dataset, name: str, counted: list[FileState], listed: dict[str, DataFile]
) -> tuple[FileState, FileState] | None:
    """(the counted file, its state under `name`) when the file `name` is a counted one
    whose own name no longer holds it. Each counted file is compared by identity, then by
    its first line (one checksum per distinct head length), and only one that matches is
    opened under its own name: a README beside 50,000 shards costs a few reads."""
    if not counted:
        return None
    try:
        handle = open_source(source_in(ds.path, name))
    except OSError:
        return None
    try:
        for state in _candidates(handle, name, counted):
            cp = _same(handle, state, name)
            if cp is not None and _orphaned(state, listed):
                why = f"followed from {state.name} (the same file under a new name)"
                return state, dataclasses.replace(state, name=name, checkpoint=cp, last_read=why)
    except OSError:
        return None
    finally:
        handle.close()
    return None


HEAD_PROBE = 1 << 16  # bytes read to find a file's first line


def _candidates(handle: Handle, name: str, counted: list[FileState]) -> list[FileState]:
    """The counted files `handle` may be: the same (device, inode) first, then those whose
    first line (a sealed file's first bytes) it shares; its first bytes are read once."""
    if handle.identity is not None:
        same = [s for s in counted if s.checkpoint.file.node == handle.identity]
        if same:
            return same
    start = handle.read_at(0, min(HEAD_PROBE, handle.size))
    newline = start.find(b"\n")
    first_line = newline + 1 if newline >= 0 else None  # a plain file's head is its first line
    sums: dict[int, str] = {}
    found = []
    for state in counted:
        seen = state.checkpoint.file
        sealed = _sealed(state.name)
        if sealed != _sealed(name) or seen.head_len > len(start):
            continue
        if not sealed and seen.head_len != first_line:
            continue
        if seen.head_len not in sums:
            sums[seen.head_len] = checksum(start[: seen.head_len])
        if sums[seen.head_len] == seen.head_sum:
            found.append(state)
    return found


def _sealed(name: str) -> bool:
    return form_of(name) != "jsonl"


def _same(handle: Handle, state: FileState, name: str) -> Checkpoint | None:
    """The counted file's checkpoint, made this file's, when this file is that one: the
    same (device, inode), or the same bytes where they were counted (a copy)."""
    cp = state.checkpoint
    seen = cp.file
    if handle.identity is not None and handle.identity == seen.node:
        return cp
    if _sealed(name):
        return cp if _same_sealed(handle, cp, by_node=False) else None
    if handle.size < cp.offset or checksum(handle.read_at(0, seen.head_len)) != seen.head_sum:
        return None
    if checksum(handle.read_at(cp.tail_start, cp.offset - cp.tail_start)) != cp.tail_sum:
        return None
    device, inode = handle.identity or (0, 0)
    return dataclasses.replace(cp, file=dataclasses.replace(seen, device=device, inode=inode))


def _same_sealed(handle: Handle, cp: Checkpoint, by_node: bool) -> bool:
    """A sealed file's content is the one `cp` marked (`by_node`: its identity too)."""
    mark = mark_of(handle)
    if by_node and handle.identity is not None and handle.identity != cp.file.node:
        return False
    return (mark.file.head_sum, mark.tail_sum, mark.file.size) == (
        cp.file.head_sum,
        cp.tail_sum,
        cp.file.size,
    )
