"""Rates and ETA: differences between refreshes, reset on truncation, bounded history."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from genledger.config import Config
from genledger.ledger.rates import MAX_SAMPLES, MIN_SPAN_S, WINDOW_S, total_rate, update_rates
from genledger.ledger.records import DatasetRecord
from genledger.refresh.collect import refresh
from genledger.synth.records import WRITERS, line

T0 = 1_800_000_000.0


class Run:
    """A data root whose datasets grow by whole records between refreshes."""

    def __init__(self, root: Path, expected: dict[str, int | None]) -> None:
        self.root = root
        self.rng = random.Random(3)
        self.written: dict[str, list[int]] = {name: [] for name in expected}
        for name, n_prompts in expected.items():
            (root / name).mkdir(parents=True)
            (root / name / "raw_responses.jsonl").touch()
            if n_prompts is not None:
                prompts = b"".join(line({"id": i}) for i in range(n_prompts))
                (root / name / "prompts.jsonl").write_bytes(prompts)

    def grow(self, name: str, n: int) -> None:
        """Append `n` chat records with random completion counts."""
        with (self.root / name / "raw_responses.jsonl").open("ab") as out:
            for _ in range(n):
                comp = self.rng.randint(5, 90)
                rid = f"{name}-{len(self.written[name])}"
                out.write(line(WRITERS["openai_chat"](rid, 10, comp, self.rng)))
                self.written[name].append(comp)

    def path(self, name: str) -> Path:
        """The responses file of a dataset."""
        return self.root / name / "raw_responses.jsonl"


@pytest.fixture
def config(tmp_path: Path) -> Config:
    """Stats and state beside the data root."""
    return Config(tmp_path / "data", tmp_path / "stats.json", tmp_path / "state")


def _run(config: Config, expected: dict[str, int | None]) -> Run:
    assert config.data_root is not None
    return Run(config.data_root, expected)


def _rate(stats: dict[str, Any], name: str) -> dict[str, Any] | None:
    rate: dict[str, Any] | None = stats["datasets"][name]["rate"]
    return rate


def test_the_first_refresh_gives_no_rate_however_big_the_backlog(config: Config) -> None:
    run = _run(config, {"a": 100})
    run.grow("a", 60)
    stats = refresh(config, now=T0).stats
    assert _rate(stats, "a") is None
    assert stats["totals"]["rate"] is None


def test_two_refreshes_seconds_apart_give_rates_and_an_eta(config: Config) -> None:
    run = _run(config, {"a": 100})
    run.grow("a", 20)
    refresh(config, now=T0)
    run.grow("a", 15)
    stats = refresh(config, now=T0 + 3).stats
    rate = _rate(stats, "a")
    assert rate is not None
    assert rate["records_per_s"] == pytest.approx(15 / 3)
    assert rate["comp_tokens_per_s"] == pytest.approx(sum(run.written["a"][20:]) / 3)
    assert rate["eta_s"] == pytest.approx((100 - 35) / (15 / 3))
    assert stats["totals"]["rate"]["eta_s"] == pytest.approx(rate["eta_s"])


def test_refreshes_closer_than_the_minimum_span_give_no_rate(config: Config) -> None:
    run = _run(config, {"a": 100})
    run.grow("a", 5)
    refresh(config, now=T0)
    run.grow("a", 5)
    assert _rate(refresh(config, now=T0 + MIN_SPAN_S / 2).stats, "a") is None


def test_a_truncated_file_resets_the_history_instead_of_going_negative(config: Config) -> None:
    run = _run(config, {"a": 100})
    run.grow("a", 30)
    refresh(config, now=T0)
    run.grow("a", 10)
    assert _rate(refresh(config, now=T0 + 10).stats, "a") is not None
    lines = run.path("a").read_bytes().splitlines(keepends=True)
    with run.path("a").open("r+b") as handle:
        handle.truncate(sum(len(x) for x in lines[:12]))
    result = refresh(config, now=T0 + 20)
    assert result.stats["datasets"]["a"]["n_done"] == 12
    assert _rate(result.stats, "a") is None
    assert result.records["a"].history == [[T0 + 20, 12.0, float(sum(run.written["a"][:12]))]]
    run.grow("a", 4)  # (the writer appends after the cut: the model's record 12 onward)
    rate = _rate(refresh(config, now=T0 + 24).stats, "a")
    assert rate is not None and rate["records_per_s"] == pytest.approx(4 / 4)


def test_a_file_replaced_by_a_shorter_one_resets_the_history(config: Config) -> None:
    run = _run(config, {"a": 100})
    run.grow("a", 30)
    refresh(config, now=T0)
    run.grow("a", 10)
    refresh(config, now=T0 + 10)
    fresh = run.path("a").with_suffix(".tmp")
    fresh.write_bytes(b"".join(run.path("a").read_bytes().splitlines(keepends=True)[5:20]))
    fresh.replace(run.path("a"))
    result = refresh(config, now=T0 + 20)
    assert result.stats["datasets"]["a"]["n_done"] == 15
    assert _rate(result.stats, "a") is None
    assert len(result.records["a"].history) == 1


def test_a_file_replaced_by_a_longer_one_keeps_its_history(config: Config) -> None:
    run = _run(config, {"a": 100})
    run.grow("a", 10)
    refresh(config, now=T0)
    whole = run.path("a").read_bytes()
    run.grow("a", 10)
    grown = run.path("a").read_bytes()
    fresh = run.path("a").with_suffix(".tmp")
    fresh.write_bytes(grown)  # a writer that rewrites its whole output each time
    fresh.replace(run.path("a"))
    result = refresh(config, now=T0 + 4)
    assert result.records["a"].files["raw_responses.jsonl"].last_read.startswith("replaced")
    rate = _rate(result.stats, "a")
    assert whole != grown and rate is not None
    assert rate["records_per_s"] == pytest.approx(10 / 4)


def test_an_unknown_expected_total_gives_a_rate_but_no_eta(config: Config) -> None:
    run = _run(config, {"a": None, "b": 50})
    run.grow("a", 10)
    run.grow("b", 10)
    refresh(config, now=T0)
    run.grow("a", 10)
    run.grow("b", 10)
    stats = refresh(config, now=T0 + 5).stats
    a, b = _rate(stats, "a"), _rate(stats, "b")
    assert a is not None and b is not None
    assert a["records_per_s"] == pytest.approx(2.0) and a["eta_s"] is None
    assert b["eta_s"] == pytest.approx(30 / 2.0)
    totals = stats["totals"]["rate"]
    assert totals["records_per_s"] == pytest.approx(4.0)
    assert totals["eta_s"] is None  # one inference dataset's expected total is unknown


def test_a_stalled_dataset_has_a_zero_rate_and_no_eta(config: Config) -> None:
    run = _run(config, {"a": 100})
    run.grow("a", 10)
    refresh(config, now=T0)
    rate = _rate(refresh(config, now=T0 + 60).stats, "a")
    assert rate is not None
    assert rate["records_per_s"] == 0 and rate["eta_s"] is None


def test_a_finished_dataset_has_a_zero_eta(config: Config) -> None:
    run = _run(config, {"a": 10})
    run.grow("a", 5)
    refresh(config, now=T0)
    run.grow("a", 5)
    rate = _rate(refresh(config, now=T0 + 2).stats, "a")
    assert rate is not None and rate["eta_s"] == 0.0


def _block(n_done: int, total_comp: int, n_prompts: int | None = None) -> dict[str, Any]:
    return {"kind": "inference", "n_done": n_done, "total_comp": total_comp, "n_prompts": n_prompts}


def test_the_recent_rate_looks_back_one_window_and_the_start_rate_to_the_start() -> None:
    record = DatasetRecord("a", "/data")
    n = 0
    for second in range(0, 1201, 10):
        n += 10 if second <= 600 else 30  # 1 record/s, then 3 records/s
        rate = update_rates(_block(n, 2 * n, n_prompts=10_000), record, T0 + second)
    assert rate is not None
    assert rate["window_s"] == pytest.approx(WINDOW_S)
    assert rate["records_per_s"] == pytest.approx(3.0)
    first = record.history[0]
    expected_start = (n - first[1]) / (1200 - 0)
    assert rate["since_start"]["records_per_s"] == pytest.approx(expected_start)
    assert rate["eta_s"] == pytest.approx((10_000 - n) / 3.0)


def test_the_history_stays_bounded_and_keeps_its_first_sample() -> None:
    record = DatasetRecord("a", "/data")
    for second in range(5_000):
        update_rates(_block(second, second), record, T0 + second)
    assert len(record.history) <= MAX_SAMPLES
    assert record.history[0][0] == T0
    assert record.history[-1][0] == T0 + 4_999


def test_counts_going_down_reset_the_history() -> None:
    record = DatasetRecord("a", "/data")
    update_rates(_block(50, 500), record, T0)
    update_rates(_block(60, 600), record, T0 + 10)
    rate = update_rates(_block(40, 400), record, T0 + 20)
    assert rate is None and record.history == [[T0 + 20, 40.0, 400.0]]


def test_totals_sum_the_rated_datasets() -> None:
    blocks = {}
    for name, per_s in (("a", 2), ("b", 5)):
        record = DatasetRecord(name, "/data")
        update_rates(_block(0, 0, 100), record, T0)
        blocks[name] = _block(10 * per_s, 100 * per_s, 100)
        blocks[name]["rate"] = update_rates(blocks[name], record, T0 + 10)
    total = total_rate(blocks)
    assert total is not None
    assert total["records_per_s"] == pytest.approx(7.0)
    assert total["comp_tokens_per_s"] == pytest.approx(70.0)
    assert total["eta_s"] == pytest.approx((200 - 70) / 7.0)
