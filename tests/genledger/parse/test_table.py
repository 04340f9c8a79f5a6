"""Row tuples of a role's table (parse/table.py): records added at once are the rows added one
by one."""

from __future__ import annotations

from genledger.parse.formats import response_facts
from genledger.parse.schema import FRAGMENT
from genledger.parse.table import TableBuilder


def test_records_added_at_once_are_those_added_one_by_one() -> None:
    facts = [FRAGMENT, FRAGMENT, response_facts({"id": "r", "usage": {"prompt_tokens": 3}})]
    one, all_ = TableBuilder("responses", "f.jsonl"), TableBuilder("responses", "f.jsonl")
    for item, fact in enumerate(facts):
        one.add(7, 120, item, fact)
    all_.add_all(7, 120, facts)
    assert all_.rows == one.rows
    assert [row[3] for row in all_.rows] == [0, 1, 2]
