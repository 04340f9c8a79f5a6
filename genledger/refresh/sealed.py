"""Scan one sealed file (gzip, zstd, Parquet): all of it when new or changed, else nothing.

The scan of a changed file is `restarted`: its tally replaces the file's earlier one (the
refresh drops the old counts and ids), so a rewritten shard is never counted twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from genledger.fast import arrowtok, vector
from genledger.fast.lines import raw_keys
from genledger.ledger import books
from genledger.ledger.chain import Chain
from genledger.ledger.prompts import PromptIds, PromptKey
from genledger.ledger.tally import FileTally
from genledger.parse.formats import keys_read
from genledger.parse.line import facts_of_record
from genledger.parse.schema import TOKENIZED
from genledger.parse.table import TableBuilder
from genledger.refresh.assemble import Assembler
from genledger.refresh.count import CHUNK_ROWS, prompt_tally, tally_blocks, tally_table
from genledger.refresh.filescan import FileScan
from genledger.refresh.reading import DEFAULT_READING, Reading
from genledger.tail.checkpoint import Checkpoint, seen_since
from genledger.tail.discovery import form_of
from genledger.tail.parquet import MAGIC, Batch, CorruptRowGroup, ParquetShard
from genledger.tail.reader import ReadResult
from genledger.tail.roots import Source, open_source, stream_source
from genledger.tail.sealed import (
    DAMAGED_OUT_BYTES,
    DAMAGED_READ_BYTES,
    Damage,
    Inflater,
    NotThisFormat,
    StreamTail,
    before_damage,
    lines_of,
    mark_of,
    same_file,
    settled,
)

TOKENIZED_COLUMNS = ("input_ids", "loss_mask")


def scan_sealed(
    path: Source,
    name: str,
    role: str,
    checkpoint: Checkpoint | None,
    now: float,
    reading: Reading = DEFAULT_READING,
    groups: range | None = None,
) -> FileScan:
    """Tally `path` whole if its fingerprint moved since `checkpoint` (or an early end of its
    stream has now settled into an error); else report it unchanged. `groups`: of a Parquet
    file, only these row groups (a piece of the parallel lever: rows numbered as in the whole
    file, the checkpoint the whole file's)."""
    try:
        handle = open_source(path)
    except FileNotFoundError:
        return FileScan(FileTally(), error="vanished (no such file)")
    except OSError as exc:
        return FileScan(FileTally(), error=f"unreadable: {exc.strerror or exc}")
    try:
        # No inode, same size and mtime: no bytes are spent re-reading a remote file's ends.
        found = checkpoint if checkpoint and _same_remote(handle, checkpoint) else None
        found = found or mark_of(handle)
    except OSError as exc:
        return FileScan(FileTally(), error=f"unreadable: {exc.strerror or exc}")
    finally:
        handle.close()
    # the refresh keeps when it first saw the file as it is (`refresh.collect`); a read's
    # checkpoint does not, so the same bytes read alike in one piece or many
    since = seen_since(checkpoint, found.file, now)
    is_settled = settled(found.file.mtime_ns, now, reading.settle_seconds, since)
    # Unchanged keeps its counts, unless an early end of stream has since become final.
    settling = checkpoint is not None and checkpoint.unsettled and is_settled
    if checkpoint is not None and same_file(checkpoint, found) and not settling:
        return FileScan(FileTally(), _result(checkpoint, False, "unchanged"))
    reason = "new" if checkpoint is None else "changed (read whole)"
    try:
        if form_of(name) == "parquet":
            return _scan_parquet(path, name, role, found, is_settled, reason, reading, groups)
        return _scan_stream(path, name, role, found, is_settled, reason, reading)
    except NotThisFormat as exc:
        return FileScan(FileTally(), error=str(exc))
    except OSError as exc:
        return FileScan(FileTally(), error=f"unreadable: {exc.strerror or exc}")


def _same_remote(handle: Any, checkpoint: Checkpoint) -> bool:
    """A remote file (no inode) whose size and mtime are those of its checkpoint."""
    if handle.identity is not None:
        return False
    return (handle.size, handle.mtime_ns) == (checkpoint.file.size, checkpoint.file.mtime_ns)


def _result(cp: Checkpoint, restarted: bool, reason: str) -> ReadResult:
    return ReadResult(cp, restarted, reason, cp.pending, cp.file.size, cp.file.mtime_ns / 1e9)


def _scan_stream(
    path: Source,
    name: str,
    role: str,
    mark: Checkpoint,
    is_settled: bool,
    reason: str,
    reading: Reading,
) -> FileScan:
    read = _read_stream(path, name, role, mark, reading)
    if read.inflater.error is not None:
        # Corrupt: read again, counting nothing from the damage on (`before_damage`).
        read = _read_stream(path, name, role, mark, reading, read.inflater)
    inflater, tail, delta = read.inflater, read.tail, read.delta
    lines = tail.lines
    unsettled = False
    problem = inflater.error
    if problem is None and not inflater.complete:
        unsettled = not is_settled
        problem = inflater.reason if is_settled else None
    at = inflater.consumed - tail.pending
    if read.damage.line is not None:
        lines, at = read.damage.line - 1, read.damage.offset
        problem = f"{read.damage_error}; nothing from this line on is counted"
    if problem is not None and role != "prompts":
        delta = delta + _malformed(name, role, lines + 1, at, problem, reading)
    cp = _whole(mark, lines, unsettled, tail.pending)
    if unsettled:
        reason += f"; stream incomplete, {tail.pending} bytes pending"
    return FileScan(delta, _result(cp, True, reason))


@dataclass
class _StreamRead:
    delta: FileTally
    inflater: Inflater
    tail: StreamTail
    damage: Damage
    damage_error: str | None = None


def _read_stream(
    path: Source,
    name: str,
    role: str,
    mark: Checkpoint,
    reading: Reading,
    damaged: Inflater | None = None,
) -> _StreamRead:
    """Tally a compressed stream; `damaged`: the first read of a stream found corrupt, whose
    damaged member this read stops at (fed in small pieces, to lose little before the error)."""
    stream = stream_source(path)
    damage = Damage()
    try:
        if damaged is None:
            inflater = Inflater(stream, form_of(name))
        else:
            inflater = Inflater(stream, form_of(name), DAMAGED_READ_BYTES, DAMAGED_OUT_BYTES)
        tail = StreamTail()
        blocks = lines_of(inflater, tail, reading.zstd_ahead, reading.max_line_bytes)
        if damaged is not None:
            blocks = before_damage(blocks, damaged.member_start, damage)
        if role == "prompts":
            delta = prompt_tally(blocks, reading, name)
        else:
            if mark.file.size >= vector.BULK_BYTES // 8:
                vector.load()
            delta = tally_blocks(blocks, name, role, reading)
    finally:
        stream.close()
    error = damaged.error if damaged is not None else None
    return _StreamRead(delta, inflater, tail, damage, error)


def _whole(mark: Checkpoint, lines: int, unsettled: bool, pending: int = 0) -> Checkpoint:
    """The checkpoint of a sealed file read whole: its mark (what it looked like), its lines."""
    return replace(mark, offset=mark.file.size, lines=lines, unsettled=unsettled, pending=pending)


def _malformed(
    name: str, role: str, line: int, offset: int, reason: str, reading: Reading
) -> FileTally:
    builder = TableBuilder(role, name)
    builder.add_malformed(line, offset, reason)
    return tally_table(builder, reading)


def _scan_parquet(
    path: Source,
    name: str,
    role: str,
    mark: Checkpoint,
    is_settled: bool,
    reason: str,
    reading: Reading,
    groups: range | None = None,
) -> FileScan:
    unsettled = False
    try:
        shard = ParquetShard(path)
    except NotThisFormat:
        if is_settled or not _starts_like_parquet(path):
            raise
        # A writer's file before its footer: nothing to count yet, no error yet.
        unsettled, rows, delta = True, 0, FileTally()
        reason += "; no Parquet footer yet"
    else:
        with shard:
            rows = shard.num_rows
            if role == "prompts":
                delta = _prompts(shard, reading, groups)
            elif role == "tokenized":
                delta = _tokenized(shard, name, reading, groups)
            else:
                delta = _responses(shard, name, reading, groups)
    cp = _whole(mark, rows, unsettled)
    return FileScan(delta, _result(cp, True, reason))


def _prompts(shard: ParquetShard, reading: Reading, groups: range | None) -> FileTally:
    """A Parquet prompts file: its rows, and each row's id from the key columns alone."""
    key = PromptKey(reading.prompt_key)
    tops = [m.decode().strip('"') for m in key.markers]
    columns = [c for c in shard.column_names if c in tops]
    if not columns:
        return FileTally.of(
            prompt_lines=shard.rows_in(groups), prompts_without_id=shard.rows_in(groups)
        )
    found = PromptIds(key)
    try:
        for batch in shard.batches(columns, groups):
            for index, record in enumerate(batch.data.to_pylist(), start=batch.first):
                found.add(index + 1, key.of(record))
    except CorruptRowGroup:
        # rows whose ids cannot be read are prompts without an id: the join says so
        rows = shard.rows_in(groups)
        return FileTally.of(prompt_lines=rows, prompts_without_id=rows)
    return found.tally()


def _starts_like_parquet(path: Source) -> bool:
    handle = open_source(path)
    try:
        return handle.read_at(0, len(MAGIC)) == MAGIC
    finally:
        handle.close()


def _batches(
    shard: ParquetShard,
    columns: list[str] | None,
    groups: range | None,
    name: str,
    role: str,
    reading: Reading,
) -> Iterator[Batch | FileTally]:
    """The shard's batches, then the tally of the malformed row if one cannot be decoded."""
    try:
        yield from shard.batches(columns, groups)
    except CorruptRowGroup as exc:
        yield _corrupt(exc, name, role, reading)


def _corrupt(exc: CorruptRowGroup, name: str, role: str, reading: Reading) -> FileTally:
    row = exc.first_row
    return _malformed(name, role, row + 1, row, exc.reason, reading)


def _responses(
    shard: ParquetShard, name: str, reading: Reading, groups: range | None = None
) -> FileTally:
    """Each row is a record, read through the same format facts as a JSON object (struct
    columns are nested objects). Only the columns the declarations read are decoded; a row
    with no count is read again whole, so its reason names every key it has. Rows that are
    stream events are assembled into requests as a JSONL file's lines are."""
    wanted = keys_read(reading.formats)
    counted = raw_keys("responses", reading.formats)  # id lists only counted: not decoded
    columns = [c for c in shard.column_names if c in wanted]
    pruned = 0 < len(columns) < len(shard.column_names)
    done = Chain()  # chunk by chunk: each chunk's lists copied once
    builder = TableBuilder("responses", name)
    streams = Assembler(name, reading, anchored=groups is None or groups.start == 0)
    read = columns if pruned else None
    for batch in _batches(shard, read, groups, name, "responses", reading):
        if isinstance(batch, FileTally):
            return _with_streams(_chained(done, tally_table(builder, reading), batch), streams)
        first = batch.first
        records = arrowtok.records_with_stand_ins(batch.data, counted)
        facts = [facts_of_record(record, "responses", reading.formats) for record in records]
        if pruned:
            try:
                facts = _whole_where_missing(batch, facts, reading)
            except CorruptRowGroup as exc:  # an unread column of these rows is corrupt
                corrupt = _corrupt(exc, name, "responses", reading)
                return _with_streams(
                    _chained(done, tally_table(builder, reading), corrupt), streams
                )
        for index, row_facts in enumerate(facts, start=first):
            if streams.takes([row_facts]):
                record = [_as_json(records[index - first])]
                streams.records(builder, index + 1, index, record, [row_facts])
            else:
                builder.add(index + 1, index, 0, row_facts)
            if len(builder) >= CHUNK_ROWS:
                done.add(tally_table(builder, reading))
                builder = TableBuilder("responses", name)
    return _with_streams(_chained(done, tally_table(builder, reading)), streams)


def _chained(done: Chain, *last: FileTally) -> FileTally:
    for tally in last:
        done.add(tally)
    return done.tally()


def _with_streams(tally: FileTally, streams: Assembler) -> FileTally:
    """The tally with the streams still open at its end (settled with the file)."""
    tally.streams, tally.books = streams.state, streams.books
    return tally


def _as_json(value: Any) -> Any:
    """A Parquet row as the JSON object it was written from: a null of the shard's schema
    (the union of its rows' keys) is a key that row did not have, so `has(...)` tells stream
    events apart as in JSONL."""
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_as_json(v) for v in value]
    return value


def _whole_where_missing(batch: Batch, facts: list[Any], reading: Reading) -> list[Any]:
    """The facts of rows that name the keys they saw, from the rows read with every column
    (the others do not depend on the columns left unread)."""
    return [
        facts_of_record(batch.record(index), "responses", reading.formats)
        if f.missing_detail
        else f
        for index, f in enumerate(facts)
    ]


def _tokenized(
    shard: ParquetShard, name: str, reading: Reading, groups: range | None = None
) -> FileTally:
    """Token counts from the list columns in bulk; only rows that may fail a rule (or
    columns of an unusual type) are read row by row."""
    vector.load(numpy=True)
    columns = [c for c in TOKENIZED_COLUMNS if c in shard.column_names]
    done = FileTally()
    for batch in _batches(shard, columns, groups, name, "tokenized", reading):
        if isinstance(batch, FileTally):
            return done + batch
        done = done + _tokenized_group(batch.data, batch.first, name, reading)
    return done


def _tokenized_group(table: Any, first: int, name: str, reading: Reading) -> FileTally:
    """The books over a row group's list columns in bulk; the rows that fail a rule (for
    their examples), or every row of a column of an unusual type, go through the row pass."""
    builder = TableBuilder("tokenized", name)
    found = arrowtok.columns_of(table)
    failing = (
        None
        if found is None
        else books.failing_rows("tokenized", found.arrays, found.rows, reading.params)
    )
    clean = None
    if found is not None and failing is not None:
        clean = books.array_sums("tokenized", found.arrays, ~failing)
    if found is None or failing is None or clean is None:  # an unusual column: row by row
        for index, record in enumerate(table.to_pylist(), start=first):
            builder.add(index + 1, index, 0, facts_of_record(record, "tokenized"))
        return tally_table(builder, reading)
    done = FileTally.of(**clean)
    for index in failing.nonzero()[0].tolist():
        row = first + index
        builder.add(row + 1, row, 0, TOKENIZED.facts_type(*found.row(index)))
    return done + tally_table(builder, reading)
