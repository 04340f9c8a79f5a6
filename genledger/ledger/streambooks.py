"""The rows of the requests streams assemble into (`ledger.streams`): one `stream_chunk` row
per event, then the request's facts, read by the declarations from its final object exactly
as a reply that was never streamed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from genledger.ledger.books import account
from genledger.ledger.streams import Partial, request_object
from genledger.ledger.tally import FileTally
from genledger.parse.declarations import BUILT_IN_ONLY, FormatSet
from genledger.parse.formats import response_facts
from genledger.parse.schema import FRAGMENT, RESPONSES, Facts
from genledger.parse.streams import INCOMPLETE
from genledger.parse.table import TableBuilder

NAMES = [column.name for column in RESPONSES.facts]
CHUNK, FORMAT = NAMES.index("stream_chunk"), NAMES.index("format")  # read on every line


def request_facts(
    p: Partial,
    formats: FormatSet = BUILT_IN_ONLY,
    read: Callable[[dict[str, Any]], Facts] | None = None,
) -> list[Facts]:
    """The rows of a settled request: its events, then its facts (an unfinished stream is a
    failed request, `stream ended without its final event`); `read`: what reads the final
    object's facts in place of `response_facts` (the fast tiers', equal to it)."""
    events = 0 if p.acc.get("n") == 1 and "o" in p.acc else int(p.acc.get("n", 0))
    if p.absorbed:
        return [FRAGMENT] * events
    final = request_object(p)
    facts: Any = response_facts(final, formats) if read is None else read(final)
    if p.incomplete:
        facts = facts._replace(
            failed_request=True,
            request_detail=INCOMPLETE,
            missing_detail=None,
            count_raw=None,
            n_samples=0,
        )
    return [FRAGMENT] * events + [facts]


@dataclass(frozen=True)
class StreamBooks:
    """Accounts the requests a merge of two stretches settles (picklable: it travels with a
    forked worker's tally)."""

    name: str
    formats: FormatSet = BUILT_IN_ONLY
    params: tuple[tuple[str, Any], ...] = ()

    def __call__(self, done: list[Partial]) -> FileTally:
        """The tally of the settled requests."""
        builder = TableBuilder("responses", self.name)
        for p in done:
            for item, facts in enumerate(request_facts(p, self.formats)):
                builder.add(p.line, p.offset, item, facts)
        if not builder.rows:
            return FileTally()
        return FileTally.accounted(account("responses", self.params)(builder.rows))
