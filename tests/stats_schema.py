"""Every stats JSON the test suite writes is checked against the published JSON Schema
(docs/stats-schema.json): after each test, the stats documents under its temp folder —
written in process, by a `genledger collect` subprocess, by a Dagster run or by the demo —
are validated. A test that writes hand-made (or deliberately broken) stats documents is
marked `stats_by_hand`."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import orjson

PUBLISHED = Path(__file__).resolve().parents[1] / "docs" / "stats-schema.json"
MAX_BYTES = 64 << 20  # a stats JSON of a huge run is a few MB; skip anything far bigger


@functools.cache
def validator() -> jsonschema.Draft202012Validator:
    """A validator of the published schema (the test of the schema checks it is current)."""
    schema = orjson.loads(PUBLISHED.read_bytes())
    return jsonschema.Draft202012Validator(schema)


def is_stats(document: Any) -> bool:
    """Something written as a stats JSON (not a config, a record or a state file)."""
    return isinstance(document, dict) and {"schema_version", "totals", "datasets"} <= set(document)


def stats_documents(folder: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The stats documents under `folder`, by path."""
    for path in sorted(folder.rglob("*.json")):
        try:
            if not path.is_file() or path.stat().st_size > MAX_BYTES:
                continue
            document = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        if is_stats(document):
            yield path, document


def check_folder(folder: Path) -> int:
    """Validate every stats document under `folder`; how many there were."""
    count = 0
    for path, document in stats_documents(folder):
        errors = sorted(validator().iter_errors(document), key=lambda e: list(e.absolute_path))
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path)
            raise AssertionError(
                f"{path} does not match docs/stats-schema.json at /{where}: {errors[0].message}"
                f" ({len(errors)} errors)"
            )
        count += 1
    return count
