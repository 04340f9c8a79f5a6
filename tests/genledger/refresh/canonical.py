"""A tally's state form with its lists in a canonical order: a request a join of pieces
settles (a stream crossing the cut) is listed after the later piece's rows, where one pass
lists it at its last event's line; every count, id, answer key and value is the same."""

from __future__ import annotations

import base64
from array import array
from typing import Any

from genledger.ledger.idlist import unpack_ints


def _ids(data: dict[str, Any]) -> list[tuple[int, bytes]]:
    text = str(data["text"]).encode()
    lengths, lines = unpack_ints(data["lengths"]), unpack_ints(data["lines"])
    out, at = [], 0
    for length, line in zip(lengths, lines, strict=True):
        out.append((line, text[at : at + length]))
        at += length
    return sorted(out)


def _values(blob: str) -> list[int]:
    values = array("q")
    values.frombytes(base64.b64decode(blob))
    return sorted(values)


def canonical(tally: dict[str, Any]) -> dict[str, Any]:
    """`FileTally.to_dict()` with ids, other id lists, answer keys, pending quantile values and
    price groups sorted."""
    out = dict(tally)
    out["ids"] = _ids(tally["ids"])
    out["lists"] = {k: _ids(v) for k, v in tally["lists"].items()}
    out["hashes"] = {
        k: sorted(zip(unpack_ints(v["lines"]), unpack_ints(v["keys"]), strict=True))
        for k, v in tally["hashes"].items()
    }
    out["quantiles"] = {
        k: {"parts": v["parts"], "pending": _values(v["pending"])}
        for k, v in tally["quantiles"].items()
    }
    out["groups"] = {k: sorted(map(repr, v)) for k, v in tally["groups"].items()}
    return out
