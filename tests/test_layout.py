"""The house rules of the layout: one direction of flow, only the engine installed."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
DAGSTER_LAYER = {"assets", "checks", "automation", "definitions"}
# Within the engine, a package may import only from packages earlier in the flow (or itself).
# The facts schema and the format declarations (`parse`) come first: the configuration
# carries the user's parsed declarations, and everything downstream reads with them.
FLOW = ["parse", "config", "tail", "rules", "ledger", "fast", "refresh"]
# The speed wing decodes and nothing else: no reading, no books, no executor.
FAST_MAY_IMPORT = {"parse", "config", "fast"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


ENGINE_FILES = sorted((PROJECT / "genledger").rglob("*.py"))


@pytest.mark.parametrize("path", ENGINE_FILES, ids=lambda p: str(p.relative_to(PROJECT)))
def test_the_engine_imports_no_dagster_and_nothing_of_the_dagster_layer(path: Path) -> None:
    roots = {name.split(".")[0] for name in _imports(path)}
    assert not roots & (DAGSTER_LAYER | {"dagster", "dagster_pandera", "dagster_webserver"})


def _package(path: Path) -> str:
    parts = path.relative_to(PROJECT / "genledger").parts
    return parts[0] if len(parts) > 1 else path.stem


@pytest.mark.parametrize(
    "path",
    [p for p in ENGINE_FILES if _package(p) in FLOW],
    ids=lambda p: str(p.relative_to(PROJECT)),
)
def test_engine_packages_import_only_upstream_of_themselves(path: Path) -> None:
    # Speed-only code (fast/) may use everything the definition uses, and refresh/ chooses
    # between them; nothing upstream may reach downstream, so there is no cycle.
    own = FLOW.index(_package(path))
    for name in _imports(path):
        parts = name.split(".")
        if parts[0] == "genledger" and len(parts) > 1 and parts[1] in FLOW:
            assert FLOW.index(parts[1]) <= own, f"{path.name} imports {name}"


@pytest.mark.parametrize(
    "path",
    sorted((PROJECT / "genledger" / "fast").glob("*.py")),
    ids=lambda p: str(p.relative_to(PROJECT)),
)
def test_the_speed_wing_imports_no_reader_books_or_executor(path: Path) -> None:
    for name in _imports(path):
        parts = name.split(".")
        if parts[0] == "genledger" and len(parts) > 1:
            assert parts[1] in FAST_MAY_IMPORT, f"{path.name} imports {name}"


def test_only_the_engine_is_installed() -> None:
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    setuptools = project["tool"]["setuptools"]
    assert setuptools["packages"]["find"]["include"] == ["genledger*"]
    assert "py-modules" not in setuptools
    for name in DAGSTER_LAYER:  # the installed environment does not know them by itself
        assert not any(
            (Path(entry) / name).exists() or (Path(entry) / f"{name}.py").exists()
            for entry in sys.path
            if "site-packages" in entry
        )
