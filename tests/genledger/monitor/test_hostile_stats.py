"""A stats JSON of the wrong shape, and names that hold control characters: the monitor
draws what it can, says what is wrong, and never prints a traceback or a raw control byte."""

from __future__ import annotations

import copy
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from genledger.config import Config
from genledger.ledger.summary import render as summary
from genledger.monitor.render import render
from genledger.monitor.source import read_stats
from genledger.monitor.state import MonitorState
from genledger.refresh.collect import refresh

from ..conftest import jl
from .conftest import T0

# Stats documents of the wrong shape on purpose: not checked against the schema.
pytestmark = pytest.mark.stats_by_hand

CONTROL = "evil\x1b[2J\x1b]0;pwned\x07\r\u202eX"


def sample_stats(tmp_path: Path) -> dict[str, Any]:
    """A real stats JSON: two datasets, one with failures, a rate (two refreshes)."""
    root = tmp_path / "data"
    for name in ("ok", "bad"):
        (root / name).mkdir(parents=True)
        (root / name / "prompts.jsonl").write_bytes(jl(*({"id": i} for i in range(9))))
    config = Config(root, tmp_path / "s.json", tmp_path / "st")
    (root / "ok" / "raw_responses.jsonl").write_bytes(jl({"id": "a", "completion_tokens": 3}))
    (root / "bad" / "raw_responses.jsonl").write_bytes(b"{oops\n")
    refresh(config, now=T0)
    with (root / "ok" / "raw_responses.jsonl").open("ab") as out:
        out.write(jl({"id": "b", "completion_tokens": 4, "reasoning_tokens": 1}))
    return refresh(config, now=T0 + 30).stats


@pytest.fixture(scope="module")
def stats(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return sample_stats(tmp_path_factory.mktemp("hostile"))


def draw(stats: Any, width: int = 100) -> str:
    console = Console(file=io.StringIO(), record=True, width=width, color_system=None)
    state = MonitorState(path=Path("s.json"), stats=stats, now=T0 + 40, width=width)
    console.print(render(state))
    return console.export_text()


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (keys of objects, indices of arrays)."""
    found = [at]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*at, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths(inner, (*at, index))
    return found


WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.just(CONTROL),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_field_of_any_type_draws_a_frame_and_the_summary_never_crashes(
    stats: dict[str, Any], data: st.DataObject
) -> None:
    broken = copy.deepcopy(stats)
    for _ in range(data.draw(st.integers(1, 3))):
        places = [p for p in _paths(broken) if p]
        if not places:
            break
        *parent, last = data.draw(st.sampled_from(places))
        node = broken
        for key in parent:
            node = node[key]
        node[last] = data.draw(WRONG)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.json"
        path.write_text(json.dumps(broken))
        reading = read_stats(path)
    text = draw(reading.stats)
    assert "\x1b" not in text and "\r" not in text
    assert "genledger" in text


def test_control_characters_in_names_and_reasons_reach_the_terminal_escaped(
    tmp_path: Path,
) -> None:
    root = tmp_path / "data"
    (root / CONTROL).mkdir(parents=True)
    (root / CONTROL / "raw_responses.jsonl").write_bytes(
        jl({"id": "x", "completion_tokens": 0}) + b"\xff\x1b[31m\n"
    )
    (root / f"stray{CONTROL}.txt").write_bytes(b"x")
    stats = refresh(Config(root, tmp_path / "s.json", tmp_path / "st")).stats
    assert CONTROL in stats["datasets"]  # the stats JSON keeps the name as it is
    for text in (summary(stats), draw(stats, width=200)):
        assert not any(c in text for c in "\x1b\x07\r\u202e"), repr(text)
        assert "evil\\x1b[2J" in text


def test_the_monitor_prints_no_traceback_on_a_stats_json_of_the_wrong_shape(
    tmp_path: Path, stats: dict[str, Any]
) -> None:
    broken = copy.deepcopy(stats)
    broken["totals"] = {"n_done": "many", "quality": [], "rate": {"eta_s": "soon"}}
    name = next(iter(broken["datasets"]))
    broken["datasets"][name].update(files=[1, 2], quality="bad", progress="half", rate=[])
    path = tmp_path / "s.json"
    path.write_text(json.dumps(broken))
    env = {**os.environ, "COLUMNS": "120"}
    done = subprocess.run(
        [sys.executable, "-m", "genledger.cli", "monitor", str(path), "--once"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == 0
    assert name in done.stdout
