"""A record's sidecar (`<record>.quiet` in the state dir): the part of a state record with a
quiet block (`refresh.quiet`) that a refresh finding the dataset quiet reuses, so that it
reads a few kB instead of the record of every file.

It holds the quiet block, the rate history and the fleet's first write as the record was
written, the checksum the record names for its files and quiet block (the `.rates` beside
it are matched against that), and the record file's identity once written: its size, mtime,
ctime, inode and device. It is good only for that very file: a record replaced (a new
inode), edited in place (a new mtime and ctime), copied or restored elsewhere no longer
matches, and the record is then read as before. A checksum of its own bytes leads it, so a
damaged or truncated sidecar is never trusted either.
"""

from __future__ import annotations

import os
import zlib

import msgspec
import msgspec.json

from genledger.ledger import jsonio
from genledger.ledger.records import STATE_VERSION, DatasetRecord, DatasetState

SIDECAR_VERSION = 1  # the layout of a sidecar


class Sidecar(msgspec.Struct, frozen=True):
    """What a quiet dataset's refresh reads of its record, and which record file it is of."""

    version: int
    record_version: int  # the record's layout (`STATE_VERSION`)
    name: str
    data_root: str
    signature: str
    record: list[int]  # the record file's `identity`
    kept_crc: int
    history: list[list[float]]
    fleet_first: float | None
    quiet: msgspec.Raw


def identity(stat: os.stat_result) -> list[int]:
    """What tells one record file from another: size, mtime, ctime, inode and device."""
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev]


def encode(record: DatasetRecord, kept_crc: int, stat: os.stat_result) -> bytes | None:
    """The sidecar of `record`, written with checksum `kept_crc` into the file `stat`
    describes; None when its quiet block holds integers past 64 bits (read whole then)."""
    if record.quiet is None or record.quiet.startswith(jsonio.BIG):
        return None
    side = Sidecar(SIDECAR_VERSION, STATE_VERSION, record.name, record.data_root,
                   record.signature, identity(stat), kept_crc, record.history,
                   record.fleet_first, msgspec.Raw(record.quiet))  # fmt: skip
    body = msgspec.json.encode(side)
    return b"%08x\n" % zlib.crc32(body) + body


def decode(
    raw: bytes, name: str, data_root: str, signature: str, stat: os.stat_result
) -> DatasetRecord | None:
    """The quiet record (no files, a quiet block) the sidecar `raw` keeps of this dataset's
    record as counted under `signature`, when it is of the record file `stat` describes;
    None when it is damaged, of another record or of another layout."""
    head, body = raw[:9], raw[9:]
    if len(head) != 9 or head[8:] != b"\n" or head[:8] != b"%08x" % zlib.crc32(body):
        return None
    try:
        side = msgspec.json.decode(body, type=Sidecar)
    except (msgspec.DecodeError, ValueError, TypeError):
        return None
    known = (side.version, side.record_version, side.name, side.data_root, side.signature)
    if known != (SIDECAR_VERSION, STATE_VERSION, name, data_root, signature):
        return None
    if side.record != identity(stat):
        return None
    return DatasetRecord(name, data_root, {}, DatasetState(), side.history, signature,
                         fleet_first=side.fleet_first, quiet=bytes(side.quiet),
                         kept_crc=side.kept_crc)  # fmt: skip
