"""What a rule found: how many rows fail it and the first few of them (mergeable)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

MAX_EXAMPLES = 5


@dataclass
class RuleTally:
    """How many rows fail one rule, and the first few of them."""

    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)

    def __add__(self, other: RuleTally) -> RuleTally:
        return RuleTally(self.count + other.count, (self.examples + other.examples)[:MAX_EXAMPLES])

    def by_line(self, other: RuleTally) -> RuleTally:
        """The sum of two tallies of one file whose rows interleave: the first examples by line."""
        examples = sorted(self.examples + other.examples, key=lambda e: int(e.get("line", 0)))
        return RuleTally(self.count + other.count, examples[:MAX_EXAMPLES])

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {"count": self.count, "examples": self.examples}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RuleTally:
        """Inverse of `to_dict`."""
        return cls(int(data["count"]), list(data["examples"]))


def merge_failures(
    a: dict[str, RuleTally], b: dict[str, RuleTally], by_line: bool = False
) -> dict[str, RuleTally]:
    """Rule-wise sum of two failure maps (`by_line`: of one file, rows interleaved)."""
    out = dict(a)
    for name, tally in b.items():
        mine = out.get(name)
        if mine is None:
            out[name] = tally
        else:
            out[name] = mine.by_line(tally) if by_line else mine + tally
    return out


# The duplicate rules' walk done elsewhere (`genledger.fast.repeats`): how many keys were seen
# before, and the first `MAX_EXAMPLES` of them in the rules' order, each as (file, index, key,
# first file, first index): indices into the files given and their arrays, the first pair
# where the key was first seen.
Repeats = tuple[int, list[tuple[int, int, Any, int, int]]]


class Ids(Protocol):
    """A file's record ids with their line numbers (`genledger.ledger.idlist.IdList`)."""

    @property
    def lines(self) -> Sequence[int]:
        """Each id's line, in order."""
        ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[tuple[int, str]]: ...

    def keys(self) -> list[bytes]:
        """The ids as UTF-8 bytes, in order."""
        ...

    def encoded(self) -> Iterator[tuple[int, bytes]]:
        """(line, id as UTF-8 bytes) pairs."""
        ...
