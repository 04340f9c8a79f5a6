"""What reading one file gave: the counts it added, where it stopped, or why it failed."""

from __future__ import annotations

from dataclasses import dataclass

from genledger.ledger.tally import FileTally
from genledger.tail.reader import ReadResult


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
