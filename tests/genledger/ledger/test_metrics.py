"""The stats as OpenMetrics text: parsed back by prometheus_client's own parser, scraped by a
real Prometheus server (Debian's `prometheus`, started here on 127.0.0.1), and compared with
the numbers of the stats JSON it was written from."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from genledger.cli import main
from genledger.config import Config, load_config
from genledger.ledger.metrics import (
    MODEL_FAMILIES,
    OTHER_MODEL,
    family_names,
    folded_models,
)
from genledger.ledger.openmetrics import exposition
from genledger.refresh.collect import refresh
from genledger.rules.catalogue import COUNTER_NAMES, RULES_BY_NAME
from tests.genledger.tail.servers import free_port, stop, wait_for_port

PROJECT = Path(__file__).resolve().parents[3]
REALWORLD = PROJECT.parent / "shared" / "realworld" / "data"
PROMETHEUS = shutil.which("prometheus")


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, by (name, sorted labels)."""
    found = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


@pytest.fixture(scope="module")
def real_stats(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A collect of the real recorded responses (every provider's own records)."""
    if not REALWORLD.is_dir():
        pytest.skip("../shared/realworld/data is not here")
    tmp = tmp_path_factory.mktemp("metrics")
    config = Config(data_root=REALWORLD, stats_path=tmp / "stats.json", state_dir=tmp / "state")
    return refresh(config).stats


def test_every_dataset_number_is_a_sample_and_every_null_is_none(real_stats: dict) -> None:
    found = samples(exposition(real_stats))
    for name, block in real_stats["datasets"].items():
        for family, stat in (
            ("genledger_records_done", "n_done"),
            ("genledger_records_expected", "n_prompts"),
            ("genledger_progress_ratio", "progress"),
            ("genledger_cost_usd", "cost_usd"),
            ("gen_ai_usage_cache_creation_input_tokens", "total_cache_write"),
            ("genledger_tokenized_tokens", "total_tokens"),
            ("genledger_tokenized_supervised_ratio", "supervised_share"),
        ):
            key = (family, (("dataset", name),))
            if block[stat] is None:
                assert key not in found, f"{family} of {name}: null must be no sample, not 0"
            else:
                assert found[key] == pytest.approx(block[stat])


def test_model_token_families_add_up_to_the_models_block(real_stats: dict) -> None:
    found = samples(exposition(real_stats))
    for name, block in real_stats["datasets"].items():
        for model, entry in block["models"].items():
            labels = (("dataset", name), ("model", model))
            assert found[("gen_ai_usage_output_tokens", labels)] == entry["total_comp"]
            assert found[("gen_ai_usage_input_tokens", labels)] == entry["total_prompt"]
            reasoning = found.get(("gen_ai_usage_reasoning_output_tokens", labels))
            assert reasoning == (
                None if entry["total_reasoning"] is None else entry["total_reasoning"]
            )


def test_check_failures_carry_every_rule_with_its_catalogue_severity(real_stats: dict) -> None:
    found = samples(exposition(real_stats))
    for name, block in real_stats["datasets"].items():
        for check in COUNTER_NAMES:
            severity = str(RULES_BY_NAME[check].severity)
            labels = (("check", check), ("dataset", name), ("severity", severity))
            assert found[("genledger_check_failures", labels)] == block["quality"][check]


def test_every_emitted_family_is_declared() -> None:
    stats = {"datasets": {}, "totals": {}, "generated_at": "2026-12-07T00:00:00Z"}
    emitted = {f.name for f in text_string_to_metric_families(exposition(stats).decode())}
    assert emitted <= set(family_names())


def _models(counts: list[int]) -> dict[str, dict[str, Any]]:
    return {
        f"m{i:03d}": {
            "n_done": n,
            "total_comp": 3 * n,
            "total_prompt": 2 * n,
            "total_reasoning": None if i % 2 else n,
            "total_cached_prompt": None,
            "cost_usd": 0.5 * n,
        }
        for i, n in enumerate(counts)
    }


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 10_000), max_size=40), st.integers(1, 12))
def test_models_beyond_the_limit_fold_into_other_and_sums_are_kept(
    counts: list[int], limit: int
) -> None:
    models = _models(counts)
    folded = folded_models(models, limit)
    assert len(folded) <= limit + 1
    for family in MODEL_FAMILIES:
        known = [m[family.stat] for m in models.values() if m[family.stat] is not None]
        kept = [m[family.stat] for m in folded.values() if m.get(family.stat) is not None]
        assert sum(kept) == pytest.approx(sum(known))
    if len(models) > limit:
        assert OTHER_MODEL in folded
        busiest = sorted(models, key=lambda m: (-models[m]["n_done"], m))[:limit]
        assert set(folded) - {OTHER_MODEL} == set(busiest)


def test_the_cli_writes_metrics_beside_the_stats(tmp_path: Path) -> None:
    if not REALWORLD.is_dir():
        pytest.skip("../shared/realworld/data is not here")
    out, metrics = tmp_path / "stats.json", tmp_path / "m" / "genledger.prom"
    metrics.parent.mkdir()
    code = main(
        ["collect", str(REALWORLD / "openai_chat"), "-o", str(out), "--state",
         str(tmp_path / "s"), "--metrics", str(metrics), "-q"]
    )  # fmt: skip
    assert code in (0, 1)
    stats = orjson.loads(out.read_bytes())
    text = metrics.read_bytes()
    assert text.endswith(b"# EOF\n")
    found = samples(text)
    total = sum(v for (n, _), v in found.items() if n == "genledger_records_done")
    assert total == stats["totals"]["n_done"]
    assert not list(metrics.parent.glob("*.tmp*")), "the write is atomic: no temp file left"


def test_the_metrics_path_comes_from_the_env_or_the_config(tmp_path: Path) -> None:
    toml = tmp_path / "genledger.toml"
    toml.write_text('[metrics]\npath = "/srv/metrics/genledger.prom"\nmax_models = 3\n')
    config = load_config(toml, env={})
    assert config.metrics_path == Path("/srv/metrics/genledger.prom")
    assert config.metrics.max_models == 3
    env = load_config(toml, env={"GENLEDGER_METRICS_PATH": str(tmp_path / "x.prom")})
    assert env.metrics_path == tmp_path / "x.prom"


def test_a_metrics_path_inside_the_data_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "ds").mkdir(parents=True)
    (root / "ds" / "raw_responses.jsonl").write_text("")
    code = main(
        ["collect", str(root), "-o", str(tmp_path / "s.json"), "--state", str(tmp_path / "st"),
         "--metrics", str(root / "m.prom"), "-q"]
    )  # fmt: skip
    assert code == 2
    assert not (root / "m.prom").exists()


# --- a real Prometheus -----------------------------------------------------------------------

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
FILE_SERVER = """
import http.server, sys
class Handler(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        self.send_header("Content-Type", sys.argv[3])
        super().end_headers()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer.allow_reuse_address = True
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])),
    lambda *a, **k: Handler(*a, directory=sys.argv[2], **k))
server.serve_forever()
"""


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A Prometheus server scraping `metrics/genledger.prom` through a file server, every
    second; yields its API's base URL and the metrics file's path."""
    if PROMETHEUS is None:
        pytest.skip("Debian's prometheus is not installed (./dev setup installs it)")
    served = tmp_path / "metrics"
    served.mkdir()
    file_port, prom_port = free_port(), free_port()
    files = subprocess.Popen(
        [sys.executable, "-c", FILE_SERVER, str(file_port), str(served), OPENMETRICS],
        start_new_session=True,
    )
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: genledger\n    metrics_path: /genledger.prom\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{file_port}']\n"
    )
    server = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_port(file_port, files, "the file server")
        wait_for_port(prom_port, server, "prometheus", timeout=60)
        yield f"http://127.0.0.1:{prom_port}", served / "genledger.prom"
    finally:
        stop(server)
        stop(files)


def query(api: str, promql: str, timeout: float = 60) -> list[dict[str, Any]]:
    """The instant vector of a query, once Prometheus has scraped something for it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = requests.get(f"{api}/api/v1/query", params={"query": promql}, timeout=10).json()
        assert answer["status"] == "success", answer
        if answer["data"]["result"]:
            return list(answer["data"]["result"])
        time.sleep(0.5)
    raise AssertionError(f"Prometheus returned nothing for {promql} within {timeout} s")


def by_labels(result: list[dict[str, Any]], *labels: str) -> dict[tuple[str, ...], float]:
    return {tuple(r["metric"][k] for k in labels): float(r["value"][1]) for r in result}


@pytest.mark.timeout(180)
def test_a_real_prometheus_scrapes_the_stats_numbers(
    prometheus: tuple[str, Path], tmp_path: Path
) -> None:
    api, metrics = prometheus
    if not REALWORLD.is_dir():
        pytest.skip("../shared/realworld/data is not here")
    out = tmp_path / "stats.json"
    code = main(
        ["collect", str(REALWORLD), "-o", str(out), "--state", str(tmp_path / "state"),
         "--metrics", str(metrics), "-q"]
    )  # fmt: skip
    assert code in (0, 1)
    stats = orjson.loads(out.read_bytes())
    datasets = stats["datasets"]

    up = query(api, 'up{job="genledger"} == 1')
    assert up, "the scrape of the metrics file failed"
    done = by_labels(query(api, "genledger_records_done"), "dataset")
    assert done == {(name,): float(b["n_done"]) for name, b in datasets.items()}
    output = by_labels(query(api, "sum by (dataset) (gen_ai_usage_output_tokens)"), "dataset")
    with_models = {name: b for name, b in datasets.items() if b["models"]}
    assert output == {(name,): float(b["total_comp"]) for name, b in with_models.items()}
    inputs = by_labels(query(api, "gen_ai_usage_input_tokens"), "dataset", "model")
    for name, block in with_models.items():
        for model, entry in block["models"].items():
            assert inputs[(name, model)] == entry["total_prompt"]
    cost = by_labels(query(api, "genledger_cost_usd"), "dataset")
    priced = {(n,): b["cost_usd"] for n, b in datasets.items() if b["cost_usd"] is not None}
    assert cost.keys() == priced.keys()
    for key, usd in priced.items():
        assert cost[key] == pytest.approx(usd)
    failing = by_labels(query(api, "genledger_check_failures > 0"), "dataset", "check")
    assert failing == {
        (name, f["check"]): float(f["count"])
        for name, b in datasets.items()
        for f in b["quality"]["failures"]
    }
