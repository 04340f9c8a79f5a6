"""Fixtures of the reader and refresh tests: a ledger over a temp data root, and record lines."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from genledger.config import Config
from genledger.ledger import jsonio
from genledger.refresh.collect import refresh


def jl(*records: Any) -> bytes:
    """JSON lines, one per record (a list becomes one array line)."""
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def collect_tree(
    tmp_path: Path, datasets: dict[str, dict[str, bytes]], n_prompts: dict[str, int] | None = None
) -> dict[str, Any]:
    """Write the datasets under a fresh data root; the stats JSON of a full collect (as written)."""
    root = tmp_path / "data"
    for name, files in datasets.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        for file_name, data in files.items():
            (root / name / file_name).write_bytes(data)
    stats_path = tmp_path / "out" / "stats.json"
    config = Config(
        data_root=root,
        stats_path=stats_path,
        state_dir=tmp_path / "state",
        n_prompts=n_prompts or {},
    )
    stats = refresh(config, full=True).stats
    assert jsonio.loads(stats_path.read_bytes()) == stats
    return stats


# Fields that legitimately differ between two refreshes of the same bytes.
VOLATILE_TOP = ("generated_at",)
VOLATILE_FILE = ("mtime",)


def comparable(stats: dict[str, Any]) -> dict[str, Any]:
    """The stats JSON minus time-dependent fields (generated_at, rates, mtimes)."""
    out = jsonio.loads(jsonio.dumps(stats))  # exact big integers, as the stats file holds them
    for key in VOLATILE_TOP:
        out.pop(key, None)
    out["totals"].pop("rate", None)
    for block in out["datasets"].values():
        block.pop("rate", None)
        windowless(block)
        for entry in block["files"].values():
            for key in VOLATILE_FILE:
                entry.pop(key, None)
    return out


# The windows (and so the drift) follow the order records were counted in, refresh by
# refresh: an incremental run and a full scan of the same bytes may see them in another order
# (docs/stats-json.md `health`); everything else must be equal.
WINDOWED = ("first_window", "latest_window", "drift")


def windowless(block: dict[str, Any]) -> None:
    for key in WINDOWED:
        block.get("health", {}).pop(key, None)
    quality = block.get("quality", {})
    quality.pop("output_drift", None)
    quality["failures"] = [f for f in quality.get("failures", []) if f["check"] != "output_drift"]


def response_line(i: int, tokens: int = 7, *, rid: str | None = None) -> bytes:
    """One flat-format response line (with its `\\n`) holding `tokens` completion tokens."""
    record = {"id": rid or f"r{i}", "text": f"answer {i}", "completion_tokens": tokens}
    return orjson.dumps(record) + b"\n"


class Ledger:
    """A data root with one dataset, its stats path and state dir, and a fresh-scan oracle."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "data"
        self.dataset = self.root / "ds"
        self.dataset.mkdir(parents=True)
        self.stats_path = base / "out" / "stats.json"
        self.state_dir = base / "state"
        self._oracle_runs = 0

    @property
    def config(self) -> Config:
        """The incremental configuration."""
        return Config(data_root=self.root, stats_path=self.stats_path, state_dir=self.state_dir)

    def file(self, name: str = "raw_responses.jsonl") -> Path:
        """Path of a data file of the dataset."""
        return self.dataset / name

    def append(self, data: bytes, name: str = "raw_responses.jsonl") -> None:
        """Append bytes with one `write` (O_APPEND), as a writer process would."""
        self.file(name).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.file(name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def replace(self, data: bytes, name: str = "raw_responses.jsonl") -> None:
        """Atomically replace a file (new inode) the way rotating writers do."""
        path = self.file(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.new")
        tmp.write_bytes(data)
        os.replace(tmp, self.file(name))

    def rewrite_in_place(self, data: bytes, name: str = "raw_responses.jsonl") -> None:
        """Overwrite a file's bytes through the same inode, then cut it to the new length."""
        with self.file(name).open("r+b") as handle:
            handle.write(data)
            handle.truncate(len(data))

    def truncate(self, size: int, name: str = "raw_responses.jsonl") -> None:
        """Cut a file to `size` bytes in place."""
        os.truncate(self.file(name), size)

    def refresh(self, full: bool = False) -> dict[str, Any]:
        """One refresh through the committed state; returns the stats JSON as written."""
        refresh(self.config, full=full)
        return dict(orjson.loads(self.stats_path.read_bytes()))

    def fresh_scan(self) -> dict[str, Any]:
        """A `full=True` refresh with its own state and stats: the oracle of the same bytes."""
        self._oracle_runs += 1
        where = self.base / f"oracle{self._oracle_runs}"
        config = Config(data_root=self.root, stats_path=where / "s.json", state_dir=where / "st")
        return refresh(config, full=True).stats

    def full_with_the_same_state(self) -> dict[str, Any]:
        """A `full=True` refresh with a copy of the committed state: everything read again,
        and what the state knew of files since gone still reported."""
        self._oracle_runs += 1
        where = self.base / f"oracle{self._oracle_runs}"
        if self.state_dir.exists():
            shutil.copytree(self.state_dir, where / "st")
        config = Config(data_root=self.root, stats_path=where / "s.json", state_dir=where / "st")
        return refresh(config, full=True).stats

    def block(self, stats: dict[str, Any]) -> dict[str, Any]:
        """The dataset's block of a stats JSON."""
        return dict(stats["datasets"]["ds"])


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    """An empty dataset `ds` under a temp data root, with stats and state beside it."""
    return Ledger(tmp_path)


@pytest.fixture
def lines() -> Callable[..., bytes]:
    """`lines(start, n, tokens=7)`: n consecutive flat response lines."""

    def build(start: int, n: int, tokens: int = 7) -> bytes:
        return b"".join(response_line(i, tokens) for i in range(start, start + n))

    return build
