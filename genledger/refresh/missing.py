"""`genledger missing`: the prompt lines with no successful response, ready to run again.

Every file of the chosen datasets is read whole (no state is used or written): the responses
for their ids and which failed, the prompts for their ids; the join (`ledger.prompts`) says
which prompts have no successful response — missing or failed — and those lines are written
as the prompts file holds them (a Parquet row as a JSON object), one a line, in prompts
order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from genledger.config import Config
from genledger.ledger.prompts import Join, join
from genledger.ledger.tally import FileTally
from genledger.refresh.parallel import ScanJob, scan_job
from genledger.refresh.reading import Reading
from genledger.tail.discovery import DataFile, Dataset, discover, form_of
from genledger.tail.lines import is_blank
from genledger.tail.parquet import ParquetShard
from genledger.tail.reader import FileReader
from genledger.tail.roots import stream_source
from genledger.tail.sealed import Inflater, StreamTail, lines_of
from genledger.terminal import printable

READ_CHUNK = 1 << 20


class MissingError(ValueError):
    """The prompts to run again cannot be told; the message says why (exit 2)."""


@dataclass
class Missing:
    """What `missing` found: per dataset its join, and the prompt lines to write."""

    joins: dict[str, Join] = field(default_factory=dict)
    lines: list[bytes] = field(default_factory=list)

    @property
    def skipped(self) -> list[str]:
        """The datasets whose prompts could not be joined (nothing written for them)."""
        return [name for name, found in self.joins.items() if found.block is None]

    def summary(self) -> list[str]:
        """One line per dataset: how many prompts to run again, of how many; or why it was
        skipped. Control characters of names and reasons are escaped (`genledger.terminal`)."""
        out = []
        for name, found in self.joins.items():
            block = found.block
            if block is None:
                out.append(printable(f"{name}: skipped ({found.reason})"))
                continue
            again = block["missing"] + block["failed"]
            out.append(
                printable(
                    f"{name}: {again:,} of {block['n_prompts']:,} prompts to run again "
                    f"({block['missing']:,} missing, {block['failed']:,} failed; "
                    f"key {block['key']})"
                )
            )
        return out


def find_missing(config: Config, dataset: str | None = None) -> Missing:
    """The prompts of `dataset` (or of every dataset with a prompts file) that have no
    successful response; raises `MissingError` when those of `dataset` cannot be told. Of
    every dataset, one whose prompts cannot be joined (a line that is no JSON, a file that
    cannot be read) is skipped with its reason (`Missing.skipped`); the others are written."""
    assert config.data_root is not None
    datasets = discover(config.data_root, config)
    if dataset is not None:
        datasets = [ds for ds in datasets if ds.name == dataset]
        if not datasets:
            raise MissingError(f"no dataset named {dataset!r} under {config.data_root}")
    out = Missing()
    for ds in datasets:
        prompts = ds.of_role("prompts")
        if not prompts and dataset is None:
            continue  # nothing to run again where nothing was asked
        found = _join(ds, config)
        if found.block is None and dataset is not None:
            raise MissingError(f"{ds.name}: the prompts cannot be joined: {found.reason}")
        out.joins[ds.name] = found
        if found.block is not None:
            out.lines += _lines(prompts, found)
    return out


def _join(ds: Dataset, config: Config) -> Join:
    reading = Reading.of(config, ds.name)
    tallies: dict[str, list[FileTally]] = {"responses": [], "prompts": []}
    for f in ds.files:
        if f.role == "tokenized":
            continue
        scan = scan_job(ScanJob(f.key, f.path, f.name, f.role, None, reading, None))
        if scan.error is not None:
            return Join(None, f"{f.name} cannot be read: {scan.error}", [])
        tallies[f.role].append(scan.delta)
    return join(tallies["prompts"], tallies["responses"], reading.prompt_key)


def _lines(prompts: Sequence[DataFile], found: Join) -> list[bytes]:
    wanted: dict[int, set[int]] = {}
    for index, line in found.rerun:
        wanted.setdefault(index, set()).add(line)
    out: list[bytes] = []
    for index, f in enumerate(prompts):
        lines = wanted.get(index)
        if lines:
            out += [content for number, content in _prompt_lines(f) if number in lines]
    return out


def _prompt_lines(f: DataFile) -> Iterator[tuple[int, bytes]]:
    """(line number, the line as the file holds it) of each non-blank line; a Parquet row's
    number and its JSON."""
    form = form_of(f.name)
    if form == "parquet":
        with ParquetShard(f.path) as shard:
            for batch in shard.batches(None, None):
                for index, row in enumerate(batch.data.to_pylist(), start=batch.first):
                    yield index + 1, orjson.dumps(row, default=str)
        return
    if form == "jsonl":
        with FileReader(f.path, None, READ_CHUNK) as reader:
            yield from _rows(reader.blocks())
        return
    stream = stream_source(f.path)
    try:
        yield from _rows(lines_of(Inflater(stream, form), StreamTail()))
    finally:
        stream.close()


def _rows(blocks: Iterator[object]) -> Iterator[tuple[int, bytes]]:
    for block in blocks:
        for number, _, content in block.rows():  # type: ignore[attr-defined]
            if not is_blank(content):
                yield number, content


def write_lines(lines: list[bytes], output: Path | None) -> None:
    """The lines, each ending in a newline, to `output` atomically (None: stdout)."""
    data = b"".join(line + b"\n" for line in lines)
    if output is None:
        import sys

        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    from genledger.refresh.atomic import atomic_write_bytes

    atomic_write_bytes(output, data)
