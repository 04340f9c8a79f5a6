"""Scan one data file from its checkpoint: new lines → records → facts → validated tally."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from genledger.checkpoint import Checkpoint
from genledger.formats import response_facts
from genledger.jsonline import Malformed, records_of
from genledger.lines import is_blank
from genledger.reader import FileReader, FileUnreadable, ReadResult
from genledger.table import TableBuilder
from genledger.tally import FileTally
from genledger.tokenized import tokenized_facts


@dataclass
class FileScan:
    """The outcome of reading one file: what it added, or why it could not be read."""

    delta: FileTally
    read: ReadResult | None = None
    error: str | None = None

    @property
    def restarted(self) -> bool:
        """The delta replaces the file's earlier counts instead of adding to them."""
        return self.read is None or self.read.restarted


def scan_file(path: Path, name: str, role: str, checkpoint: Checkpoint | None) -> FileScan:
    """Read what `path` gained since `checkpoint` and tally it; never raises on bad data."""
    try:
        with FileReader(path, checkpoint) as reader:
            if role == "prompts":
                delta = FileTally(prompt_lines=sum(not is_blank(x.content) for x in reader.lines()))
            else:
                delta = _tally_lines(reader, name, role)
            return FileScan(delta, reader.result())
    except FileUnreadable as exc:
        return FileScan(FileTally(), error=str(exc))


def _tally_lines(reader: FileReader, name: str, role: str) -> FileTally:
    builder = TableBuilder(role, name)
    facts = response_facts if role == "responses" else tokenized_facts
    for line in reader.lines():
        if is_blank(line.content):
            continue
        try:
            records = records_of(line.content)
        except Malformed as exc:
            builder.add_malformed(line.number, line.offset, str(exc))
            continue
        for item, record in enumerate(records):
            builder.add(line.number, line.offset, item, facts(record))
    if not len(builder):
        return FileTally()
    # pandas and pandera load only when there is something new to validate.
    from genledger.quality import tally_responses, tally_tokenized

    tally = tally_responses if role == "responses" else tally_tokenized
    return tally(builder.frame())
