"""Split one file's new bytes into pieces at line starts, and join the pieces' scans back.

The parallel lever hands out pieces rather than whole files, so two cores stay busy to the
end whatever the file sizes (one big file, or an odd number of equal ones). The parent decides
where the read starts (`checkpoint.resume_decision`, as a whole read would), cuts the new bytes
at line starts, and joins the pieces' tallies in file order with their line numbers moved on;
the joined scan equals the whole read's. A piece that did not end where it was cut (the file
changed meanwhile) voids the join, and the file is read whole instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise

from genledger.ledger.chain import Chain
from genledger.ledger.idlist import drained
from genledger.refresh.filescan import FileScan
from genledger.tail.checkpoint import START, Checkpoint, resume_decision
from genledger.tail.reader import ReadResult, Span
from genledger.tail.roots import Handle, Source, open_source

PIECE_BYTES = 16 << 20  # small enough to balance ~1 GB over 2 cores, big enough to amortise
CUT_WINDOW = 1 << 16  # bytes searched for a line start after each cut; none found: no cut there


@dataclass(frozen=True)
class Plan:
    """Where a split read of one file starts, why, and the spans of its pieces."""

    checkpoint: Checkpoint  # the read's own (START for a new file)
    start: int
    reason: str
    spans: tuple[Span, ...]
    file_id: tuple[int, int]  # (device, inode) the plan was made on


def plan(path: Source, checkpoint: Checkpoint | None, piece_bytes: int = 0) -> Plan | None:
    """Pieces of about `piece_bytes` (default PIECE_BYTES) for reading `path` from its
    checkpoint; None when one piece would do (or the file cannot be opened: the whole read
    then reports why)."""
    cp = checkpoint or START
    piece_bytes = piece_bytes or PIECE_BYTES
    try:
        handle = open_source(path)
    except OSError:
        return None
    try:
        start, reason = resume_decision(cp, handle)
        cuts = _cuts(handle, start, handle.size, piece_bytes)
    except OSError:
        return None
    finally:
        handle.close()
    if not cuts:
        return None
    edges = [start, *cuts]
    spans = [Span(a, b) for a, b in pairwise(edges)] + [Span(edges[-1])]
    return Plan(cp, start, reason, tuple(spans), handle.identity or (0, 0))


def _cuts(handle: Handle, start: int, size: int, piece_bytes: int) -> list[int]:
    pieces = (size - start) // piece_bytes
    if pieces < 2:
        return []
    cuts: list[int] = []
    for k in range(1, pieces):
        at = start + (size - start) * k // pieces
        window = handle.read_at(at - 1, CUT_WINDOW)  # from the byte before: `at` may be a start
        newline = window.find(b"\n")
        if newline >= 0 and at + newline < size and (not cuts or at + newline > cuts[-1]):
            cuts.append(at + newline)
    return cuts


def join(plan_: Plan, scans: list[FileScan]) -> FileScan | None:
    """The scan of the whole read from its pieces' scans (in span order); None when a piece
    failed or did not end at its cut, so the file must be read whole. Empties `scans`."""
    joining = Joining(plan_)
    for index, scan in enumerate(drained(scans)):
        joining.take(index, scan)
    return joining.result()


class Joining:
    """A split read's pieces joined as they come in (in any order: each once those before it
    are), so the parent holds only pieces that came early, never all of them at once."""

    def __init__(self, plan_: Plan) -> None:
        self.plan = plan_
        self.early: dict[int, FileScan] = {}  # pieces waiting for one before them
        self.chain: Chain | None = Chain()  # None: a piece voided the join
        self.joined = 0
        self.lines = plan_.checkpoint.lines if plan_.start else 0
        self.first: ReadResult | None = None
        self.last: ReadResult | None = None

    def take(self, index: int, scan: FileScan) -> None:
        """The scan of piece `index`."""
        self.early[index] = scan
        while self.chain is not None and self.joined in self.early:
            self._join(self.early.pop(self.joined))
        if self.chain is None:
            self.early.clear()

    def _join(self, scan: FileScan) -> None:
        read, spans, index = scan.read, self.plan.spans, self.joined
        if self.chain is None or read is None or not self._whole(read, index, spans):
            self.chain = None
            return
        self.chain.add(scan.delta, self.lines)
        self.lines += read.checkpoint.lines
        self.first, self.last, self.joined = self.first or read, read, index + 1

    def _whole(self, read: ReadResult, index: int, spans: tuple[Span, ...]) -> bool:
        """Whether the piece read what the plan cut: the planned file (a file replaced since,
        a rotation, would be read at the old file's cuts), up to its cut."""
        if read.checkpoint.file.node != self.plan.file_id:
            return False
        if index == len(spans) - 1:
            return True
        return read.checkpoint.offset == spans[index].stop and not read.pending_bytes

    def result(self) -> FileScan | None:
        """The whole read's scan; None unless every piece came in and joined."""
        if self.chain is None or self.joined != len(self.plan.spans):
            return None
        first, last, plan_ = self.first, self.last, self.plan
        if first is None or last is None:  # a plan has one piece at least
            return None
        head = first.checkpoint.file if plan_.start == 0 else plan_.checkpoint.file
        seen = replace(last.checkpoint.file, head_len=head.head_len, head_sum=head.head_sum)
        checkpoint = replace(last.checkpoint, lines=self.lines, file=seen)
        read = replace(last, checkpoint=checkpoint, restarted=plan_.start == 0, reason=plan_.reason)
        return FileScan(self.chain.tally(), read)
