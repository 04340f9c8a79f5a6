"""The facts of one JSONL line: the definition of correct that every faster path must equal."""

from __future__ import annotations

from typing import Any

from genledger.parse.formats import response_facts
from genledger.parse.jsonline import records_of
from genledger.parse.tokenized import tokenized_facts

Facts = tuple[Any, ...]


def facts_of_line(content: bytes, role: str) -> list[Facts]:
    """orjson, then the fact functions of `role`, one tuple per record; raises `Malformed`."""
    facts = response_facts if role == "responses" else tokenized_facts
    return [facts(record) for record in records_of(content)]
