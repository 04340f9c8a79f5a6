"""The column schema of each role's token table, as the Dagster UI shows it.

Derived from the engine's pandera models (via dagster-pandera), and kept as a snapshot
(`column_schema.json` beside this file) so that a Dagster process — every run starts a fresh
one — does not import pandas and pandera (~45 % of a run's imports) just to name the columns.
`tests/assets/test_columns.py` proves the snapshot equals the derivation; after changing the
models, rewrite it with `python -m assets.columns` from the project root.
"""

from __future__ import annotations

import json
import warnings
from functools import cache
from pathlib import Path

import dagster as dg

SNAPSHOT = Path(__file__).with_name("column_schema.json")
ROLES = ("responses", "tokenized")


@cache
def column_schema(role: str) -> dg.TableSchema:
    """The TableSchema of a role's token table, from the snapshot."""
    text = json.dumps(json.loads(SNAPSHOT.read_text())[role])
    schema = dg.deserialize_value(text, dg.TableSchema)
    assert isinstance(schema, dg.TableSchema)
    return schema


def derive_column_schema(role: str) -> dg.TableSchema:
    """The TableSchema of a role's token table, derived from its generated pandera schema."""
    from dagster_pandera import pandera_schema_to_dagster_type

    from genledger.rules.catalogue import Table
    from genledger.rules.models import schema_of

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the converter is marked beta
        dagster_type = pandera_schema_to_dagster_type(schema_of(Table(role)))
    value = dagster_type.metadata["schema"]
    assert isinstance(value, dg.TableSchemaMetadataValue)
    return value.schema


def write_snapshot() -> None:
    """Rewrite the snapshot from the generated pandera schemas."""
    schemas = {role: json.loads(dg.serialize_value(derive_column_schema(role))) for role in ROLES}
    SNAPSHOT.write_text(json.dumps(schemas, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    write_snapshot()
