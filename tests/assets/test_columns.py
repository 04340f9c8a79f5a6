"""The column schema snapshot the Dagster processes read equals the pandera models' schema."""

from __future__ import annotations

import subprocess
import sys

import pytest

from assets.columns import ROLES, column_schema, derive_column_schema


@pytest.mark.parametrize("role", ROLES)
def test_the_snapshot_equals_the_schema_derived_from_the_pandera_models(role: str) -> None:
    assert column_schema(role) == derive_column_schema(role), (
        "the models changed: rewrite the snapshot with `python -m assets.columns`"
    )


def test_loading_the_code_location_imports_neither_pandas_nor_pandera() -> None:
    code = "import sys, definitions; print(sorted({'pandas', 'pandera'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={}
    )
    assert out.stdout.strip() == "[]"
