"""What a refresh no longer finds: files and datasets counted before, and now gone.

A file of a dataset's record that the walk no longer lists is reported as such in the stats
(`files[name].error`, counted in `unreadable_files`, an error) with the OS's reason, on every
refresh, until it is back or the operator forgets it (`genledger collect --forget-missing`):
a shard deleted, a folder that lost its permissions, a share that was unmounted must never
turn into a quiet drop of the totals, nor into a note that is gone one refresh later. A
dataset the state dir knows and the root no longer holds is reported the same way, file by
file. Their counts are no longer in the totals: the bytes behind them cannot be read.
"""

from __future__ import annotations

import os

from genledger.ledger.books import RECORDS
from genledger.ledger.records import DatasetRecord, FileState
from genledger.tail.roots import RemoteFile, Source

GONE = ("gone:", "not listed:")  # how the error of a file counted before and gone now begins


def is_gone(state: FileState) -> bool:
    """A file counted before and not listed now (`gone_files`)."""
    return state.error is not None and state.error.startswith(GONE)


def source_in(folder: Source, name: str) -> Source:
    """The file `name` (relative, '/'-separated) of a dataset folder."""
    if isinstance(folder, RemoteFile):
        return RemoteFile(folder.root, f"{folder.path.rstrip('/')}/{name}")
    return folder / name


def why_missing(source: Source) -> str:
    """Why a file counted before is not listed now, in the OS's words: `gone: ...` when it
    is not there, `not listed: ...` when it may be (its folder cannot be listed)."""
    if isinstance(source, RemoteFile):
        return "gone: no such file"
    try:
        os.stat(source)
    except FileNotFoundError:
        return f"gone: {os.strerror(2)}"
    except OSError as exc:  # its folder cannot be listed, say
        return f"not listed: {exc.strerror or exc}"
    return "not listed: no longer found with the dataset's files"


def gone_files(record: DatasetRecord, folder: Source, listed: set[str]) -> list[FileState]:
    """The files of `record` that were read at some refresh and are not in `listed` (the names
    the walk found), each as gone: its name, role, why, and how many records it had counted
    (no longer in the totals). What was never read (a FIFO, a folder that could not be
    listed) was reported while it was there, and is not missed."""
    found = []
    for old in record.files.values():
        if not old.ever_read or old.name in listed:
            continue
        lost = old.lost if is_gone(old) else old.tally[RECORDS[old.role]]
        why = why_missing(source_in(folder, old.name))
        if lost:  # the loss in numbers, refresh after refresh
            why += f" ({lost:,} records counted before)"
        found.append(FileState(old.dataset, old.name, old.role, error=why, ever_read=True))
        found[-1].lost = lost
    return found


def kind_of_files(files: list[FileState]) -> str:
    """`pretokenized` when only tokenized files were known, else `inference`."""
    roles = {f.role for f in files}
    return "pretokenized" if "tokenized" in roles and "responses" not in roles else "inference"
