"""The JSON Schema (draft 2020-12) of the stats JSON, generated from the declarations that
write it: the field order of every block (`ledger.stats`), the stats of the books and their
kinds (`ledger.books`), the rules and severities (`rules.catalogue`), the per-model stats
(`ledger.cost`), the quantiles (`ledger.quantiles`), the window flags (`ledger.window`) and
the provider books' pairs (`ledger.provider`). Every object is closed
(`additionalProperties: false`) and lists every field as required, so a field written and not
declared fails validation (the test suite validates every stats JSON it writes).
"""

from __future__ import annotations

import json
from typing import Any

from genledger.ledger.books import Count, Ratio, Sum, Tally
from genledger.ledger.cost import MODEL_STATS
from genledger.ledger.provider import PAIRS
from genledger.ledger.quantiles import QUANTILES
from genledger.ledger.stats import (
    DATASET_FIELDS,
    DOCUMENT_FIELDS,
    ROLES,
    SCHEMA_VERSION,
    TOTALS_FIELDS,
    book_entries,
)
from genledger.ledger.window import FLAGS
from genledger.rules.catalogue import COUNTER_NAMES, RULES, Severity

SCHEMA_ID = "https://genledger.invalid/stats-json/v1.schema.json"
STATUSES = ("ok", "warn", "error")

Schema = dict[str, Any]
COUNT: Schema = {"type": "integer", "minimum": 0}
NUMBER: Schema = {"type": "number"}
TEXT: Schema = {"type": "string"}
TEXTS: Schema = {"type": "array", "items": TEXT}
COUNTS: Schema = {"type": "object", "additionalProperties": COUNT}
TIME: Schema = {"type": "string", "format": "date-time"}


def nullable(schema: Schema) -> Schema:
    """`schema`, or null (unknown: genledger never writes a missing number as 0)."""
    return {"anyOf": [schema, {"type": "null"}]}


def closed(properties: dict[str, Schema], optional: tuple[str, ...] = ()) -> Schema:
    """An object of exactly these properties (all required but `optional`)."""
    return {
        "type": "object",
        "properties": properties,
        "required": [name for name in properties if name not in optional],
        "additionalProperties": False,
    }


def book_stat(entry: Any) -> Schema:
    """The schema of a stat from its kind of books entry."""
    if isinstance(entry, Tally):
        return COUNTS
    if isinstance(entry, Ratio):
        return nullable(NUMBER)
    if isinstance(entry, Sum) and entry.known is not None:
        return nullable(COUNT)
    if isinstance(entry, Count | Sum):
        return COUNT
    raise TypeError(f"no schema for a books entry of kind {type(entry).__name__}")


BOOK_SCHEMAS = {stat: book_stat(entry) for stat, entry in book_entries()}

QUANTILE_BLOCK = nullable(closed({name: COUNT for name in [*QUANTILES, "max"]}))
WINDOW = nullable(
    closed(
        {
            "records": COUNT,
            **{f"{flag}_share": NUMBER for flag in FLAGS},
            "median_output_tokens": nullable(COUNT),
            "finish_reasons": {"type": "object", "additionalProperties": NUMBER},
        }
    )
)
HEALTH = closed(
    {
        "truncated": COUNT,
        "truncated_share": nullable(NUMBER),
        "output_tokens": QUANTILE_BLOCK,
        "answers": COUNT,
        "duplicate_outputs": COUNT,
        "duplicate_share": nullable(NUMBER),
        "first_window": WINDOW,
        "latest_window": WINDOW,
        "drift": TEXTS,
    }
)
PROMPTS = nullable(
    closed(
        {
            "n_prompts": COUNT,
            "answered": COUNT,
            "failed": COUNT,
            "missing": COUNT,
            "ids_missing": TEXTS,
            "key": nullable(TEXT),
        }
    )
)


def _model_stat(known: str | None) -> Schema:
    return COUNT if known is None else nullable(COUNT)


MODEL = closed(
    {
        **{stat: _model_stat(known) for stat, _, known in MODEL_STATS},
        "cost_usd": nullable(NUMBER),
        "priced_by": TEXTS,
    }
)
FLEET = closed(
    {
        "gpu_hour_usd": nullable(NUMBER),
        "gpus": COUNT,
        "hours": NUMBER,
        "first_write": nullable(TIME),
        "last_write": nullable(TIME),
    }
)
COST = {
    "models": {"type": "object", "additionalProperties": MODEL},
    "cost_usd": nullable(NUMBER),
    "cost_projected_usd": nullable(NUMBER),
    "cost_unpriced": closed({"n_records": COUNT, "models": TEXTS}),
    "prices": closed(
        {
            "table": TEXT,
            "version": nullable(TEXT),
            "snapshot": TEXT,
            "user": TEXTS,
            "fleet": nullable(FLEET),
        }
    ),
}
FAILURE = closed(
    {
        "check": {"enum": [rule.name for rule in RULES]},
        "severity": {"enum": [str(s) for s in Severity]},
        "count": COUNT,
        "examples": {"type": "array", "items": {"type": "object"}},
    }
)


def quality(totals: bool) -> Schema:
    """`quality`: the status, a counter per rule, the failures (the totals: and how many
    datasets have each status)."""
    fields: dict[str, Schema] = {"status": {"enum": list(STATUSES)}}
    fields.update({name: COUNT for name in COUNTER_NAMES})
    fields["failures"] = {"type": "array", "items": FAILURE}
    if totals:
        fields["datasets_by_status"] = {
            "type": "object",
            "propertyNames": {"enum": list(STATUSES)},
            "additionalProperties": COUNT,
        }
    return closed(fields)


FILE = closed(
    {
        "bytes": COUNT,
        "lines": COUNT,
        "pending_bytes": COUNT,
        "mtime": nullable(TIME),
        "role": {"enum": list(ROLES)},
        "error": TEXT,
        "aliases": TEXTS,
    },
    optional=("error", "aliases"),
)
UNRECOGNISED = closed({"count": COUNT, "paths": TEXTS})
UNREADABLE = closed({"count": COUNT, "files": {"type": "object", "additionalProperties": TEXT}})
DATASET_RATE = nullable(
    closed(
        {
            "records_per_s": NUMBER,
            "comp_tokens_per_s": NUMBER,
            "eta_s": nullable(NUMBER),
            "window_s": NUMBER,
            "since_start": closed(
                {"records_per_s": NUMBER, "comp_tokens_per_s": NUMBER, "span_s": NUMBER}
            ),
            "samples": COUNT,
        }
    )
)
TOTAL_RATE = nullable(
    closed(
        {
            "records_per_s": NUMBER,
            "comp_tokens_per_s": NUMBER,
            "eta_s": nullable(NUMBER),
            "since_start": closed({"records_per_s": NUMBER, "comp_tokens_per_s": NUMBER}),
            "datasets_rated": COUNT,
        }
    )
)
PAIR: Schema = {
    "type": "array",
    "prefixItems": [COUNT, COUNT],
    "minItems": 2,
    "maxItems": 2,
}
PROVIDER_BOOKS = nullable(
    closed(
        {
            "source": TEXT,
            "provider": {"enum": ["openai", "anthropic"]},
            "status": nullable(TEXT),
            "agree": {"type": "boolean"},
            **{name: PAIR for name in PAIRS},
        },
        optional=PAIRS[1:],  # only the pairs the provider reports; requests always
    )
)

# Each block's sections that are not a stat of the books.
DATASET_SECTIONS: dict[str, Schema] = {
    "kind": {"enum": ["inference", "pretokenized"]},
    "n_prompts": nullable(COUNT),
    "health": HEALTH,
    "prompts": PROMPTS,
    "prompts_unjoinable": nullable(TEXT),
    "provider_books": PROVIDER_BOOKS,
    **COST,
    "quality": quality(totals=False),
    "files": {"type": "object", "additionalProperties": FILE},
    "unrecognised": UNRECOGNISED,
    "aliases": TEXTS,
    "rate": DATASET_RATE,
}
TOTALS_SECTIONS: dict[str, Schema] = {
    "n_prompts": nullable(COUNT),
    "n_datasets": COUNT,
    "health": HEALTH,
    **COST,
    "quality": quality(totals=True),
    "rate": TOTAL_RATE,
}


def block(fields: tuple[str, ...], sections: dict[str, Schema]) -> Schema:
    """A closed object of `fields` in their written order, each a book stat or a section."""
    return closed({name: sections.get(name) or BOOK_SCHEMAS[name] for name in fields})


def stats_schema() -> Schema:
    """The JSON Schema of the stats JSON this version of genledger writes."""
    document_sections: dict[str, Schema] = {
        "schema_version": {"const": SCHEMA_VERSION},
        "generated_at": TIME,
        "data_root": TEXT,
        "totals": {"$ref": "#/$defs/totals"},
        "datasets": {"type": "object", "additionalProperties": {"$ref": "#/$defs/dataset"}},
        "unrecognised": UNRECOGNISED,
        "unreadable": UNREADABLE,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "genledger stats JSON",
        "description": "Generated by `genledger schema` from genledger's own declarations.",
        **block(DOCUMENT_FIELDS, document_sections),
        "$defs": {
            "dataset": block(DATASET_FIELDS, DATASET_SECTIONS),
            "totals": block(TOTALS_FIELDS, TOTALS_SECTIONS),
        },
    }


def schema_text() -> str:
    """The schema as the text `genledger schema` prints and docs/ publishes."""
    return json.dumps(stats_schema(), indent=2) + "\n"
