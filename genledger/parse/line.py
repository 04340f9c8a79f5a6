"""The facts of one JSONL line: the definition of correct that every faster path must equal."""

from __future__ import annotations

from typing import Any

from genledger.parse.declarations import BUILT_IN_ONLY, FormatSet
from genledger.parse.formats import response_facts
from genledger.parse.jsonline import records_of
from genledger.parse.schema import Facts
from genledger.parse.tokenized import tokenized_facts


def facts_of_line(content: bytes, role: str, formats: FormatSet = BUILT_IN_ONLY) -> list[Facts]:
    """orjson, then the fact functions of `role`, one tuple per record; raises `Malformed`."""
    return [facts_of_record(record, role, formats) for record in records_of(content)]


def facts_of_record(record: dict[str, Any], role: str, formats: FormatSet = BUILT_IN_ONLY) -> Facts:
    """The facts of one record of `role`: a JSON object, or a Parquet row as a dict."""
    return response_facts(record, formats) if role == "responses" else tokenized_facts(record)
