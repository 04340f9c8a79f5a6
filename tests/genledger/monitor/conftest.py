"""A data root that grows between refreshes, and frames rendered into a capture console."""

from __future__ import annotations

import io
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from genledger.config import Config
from genledger.monitor.render import render
from genledger.monitor.state import MonitorState
from genledger.refresh.collect import refresh
from genledger.synth.records import WRITERS, line

T0 = 1_800_000_000.0
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class GrowingRun:
    """Datasets (name → expected total or None, writer) that grow by whole records."""

    def __init__(self, tmp_path: Path, plan: dict[str, tuple[int | None, str]]) -> None:
        self.config = Config(tmp_path / "data", tmp_path / "stats.json", tmp_path / "state")
        self.rng = random.Random(11)
        self.plan = plan
        self.written: dict[str, int] = dict.fromkeys(plan, 0)
        for name, (expected, _) in plan.items():
            folder = tmp_path / "data" / name
            folder.mkdir(parents=True)
            (folder / "raw_responses.jsonl").touch()
            if expected is not None:
                prompts = b"".join(line({"id": i}) for i in range(expected))
                (folder / "prompts.jsonl").write_bytes(prompts)

    @property
    def stats_path(self) -> Path:
        """Where refreshes write the stats JSON."""
        assert self.config.stats_path is not None
        return self.config.stats_path

    def grow(self, name: str, n: int) -> None:
        """Append `n` records in the dataset's format."""
        assert self.config.data_root is not None
        writer = WRITERS[self.plan[name][1]]
        with (self.config.data_root / name / "raw_responses.jsonl").open("ab") as out:
            for _ in range(n):
                rid = f"{name}-{self.written[name]}"
                out.write(line(writer(rid, 12, self.rng.randint(5, 90), self.rng)))
                self.written[name] += 1

    def refresh(self, now: float) -> dict[str, Any]:
        """Run the engine's refresh at a chosen time; return the stats."""
        return refresh(self.config, now=now).stats


@pytest.fixture
def growing(tmp_path: Path):
    """Build a GrowingRun under tmp_path."""

    def build(plan: dict[str, tuple[int | None, str]]) -> GrowingRun:
        return GrowingRun(tmp_path, plan)

    return build


def frame(state: MonitorState, width: int = 80, color: bool = False) -> str:
    """The frame as text (with ANSI styles when `color`), `width` columns wide."""
    console = Console(
        file=io.StringIO(),
        record=True,
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
    )
    console.print(render(replace(state, width=width)))
    return console.export_text(styles=color)


def row(text: str, name: str) -> str:
    """The one line of a frame that starts with a dataset's name."""
    lines = [ln for ln in text.splitlines() if ANSI.sub("", ln).startswith(name + " ")]
    assert len(lines) == 1, f"{name!r} on {len(lines)} lines of:\n{text}"
    return lines[0]
