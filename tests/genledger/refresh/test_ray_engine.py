"""Cold scans on a real Ray cluster of several nodes on loopback equal a local collect.

One cluster per module (a head and a second node, one CPU each), its nodes started with an S3
server's environment (a worker reads its own credentials). The tree is hold-out-like: every
recorded provider response of ../shared/realworld*, the sample run, lines with defects, sealed
shards and large files the planner cuts into pieces.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import orjson
import psutil
import pytest

from genledger.config import Config, EngineSettings
from genledger.ledger import jsonio
from genledger.refresh import split
from genledger.refresh.collect import refresh
from genledger.refresh.parallel import ScanJob, cut_jobs
from genledger.synth.corpus import write_corpus
from genledger.synth.records import line
from genledger.synth.tree import write_sample_tree
from genledger.tail.discovery import survey

from ..shards import gz, parquet, zst
from ..tail.servers import S3Server, moto_s3
from .ray_nodes import Cluster, ray_cluster
from .test_parallel import write_root

ray = pytest.importorskip("ray")  # the `test` extra installs it; a bare engine install does not

SHARED = Path(__file__).resolve().parents[4] / "shared"
# The only fields of the stats JSON that may differ between two collects of the same bytes:
# when it was written, the rates (records per second since the previous refresh) and the
# files' modification times as seen at the read.
TIMING = ("generated_at", "rate", "mtime")


def without_timing(stats: dict[str, Any]) -> dict[str, Any]:
    """The stats JSON less `TIMING` (at the top, in the totals, per dataset and per file)."""
    out = jsonio.loads(jsonio.dumps(stats))
    out.pop("generated_at")
    out["totals"].pop("rate", None)
    for block in out["datasets"].values():
        block.pop("rate", None)
        for entry in block["files"].values():
            entry.pop("mtime", None)
    return dict(out)


def assert_same(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Two stats JSON are equal less `TIMING`; a failure names the fields that differ."""
    a, b = _flat(without_timing(got)), _flat(without_timing(want))
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k, "<absent>") != b.get(k, "<absent>"))
    shown = [f"{k}: {a.get(k, '<absent>')!r:.200} != {b.get(k, '<absent>')!r:.200}" for k in differ]
    assert not differ, f"{len(differ)} fields differ:\n" + "\n".join(shown[:20])


def _flat(value: Any, path: str = "") -> dict[str, Any]:
    """Every leaf of a JSON document by its dotted path."""
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flat(item, f"{path}.{key}"))
        return flat
    return {path: value}


def holdout_tree(root: Path) -> Path:
    """A finished archive of many datasets in every shape genledger reads."""
    for corpus in ("realworld", "realworld2"):
        for folder in sorted((SHARED / corpus / "data").iterdir()):
            if folder.is_dir():
                shutil.copytree(folder, root / f"{corpus}-{folder.name}")
    write_sample_tree(root)
    write_root(root)
    records = [orjson.loads(x) for x in _sample_lines(root)]
    sealed = root / "sealed"
    sealed.mkdir()
    body = b"".join(orjson.dumps(r) + b"\n" for r in records)
    (sealed / "raw_responses_00.jsonl.gz").write_bytes(gz(body, members=3))
    (sealed / "raw_responses_01.jsonl.zst").write_bytes(zst(body, frames=2))
    (sealed / "raw_responses_02.parquet").write_bytes(parquet(records * 20, row_group_size=16))
    (sealed / "notes.txt").write_text("not a data file: listed as unrecognised")
    big = root.parent / "big"
    write_corpus(big, mb=6, seed=3)
    for folder in big.iterdir():
        shutil.move(folder, root / f"big-{folder.name}")
    return root


def _sample_lines(root: Path) -> list[bytes]:
    return (root / "clean_chat_then_flat" / "raw_responses.jsonl").read_bytes().splitlines()


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with moto_s3(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture(scope="module")
def cluster(s3: S3Server) -> Iterator[Cluster]:
    with ray_cluster(s3.env(), workers=1) as running:
        yield running


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return holdout_tree(tmp_path_factory.mktemp("holdout") / "data")


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of 256 kB: the big files are cut as a terabyte's would be, into many tasks."""
    monkeypatch.setattr(split, "PIECE_BYTES", 256 << 10)


def collect(root: Path | str, where: Path, ray_address: str | None = None, **kw: Any) -> Any:
    """One refresh of `root` with its own stats path and state dir under `where`."""
    config = Config(
        data_root=root,
        stats_path=where / "stats.json",
        state_dir=where / "state",
        engine=EngineSettings(ray=ray_address),
    )
    return refresh(config, **kw)


def test_a_cold_scan_on_two_nodes_is_a_local_collect_field_for_field(
    cluster: Cluster, tree: Path, tmp_path: Path
) -> None:
    done: list[tuple[int, int]] = []
    on_ray = collect(tree, tmp_path / "ray", cluster.address, progress=lambda *d: done.append(d))
    local = collect(tree, tmp_path / "local")
    assert_same(on_ray.stats, local.stats)
    assert on_ray.stats.keys() == local.stats.keys()
    (notice,) = [n for n in on_ray.notices if n.startswith("scanned on Ray")]
    # Usually both nodes scan; on a loaded machine the head may finish every piece before the
    # other node's first worker has started (the kill test proves another node takes tasks).
    assert notice.endswith(("on 2 nodes", "on 1 node"))
    pieces = int(notice.split()[3])
    files = sum(len(b["files"]) for b in local.stats["datasets"].values())
    assert pieces > files  # the big files went in pieces
    assert done[-1] == (pieces, pieces)
    assert [d for d, _ in done] == sorted(d for d, _ in done)
    assert len(local.stats["datasets"]) > 60


@pytest.mark.parametrize("through", ["gcs", "client"])
def test_collect_ray_on_the_command_line_writes_what_a_local_collect_writes(
    cluster: Cluster, tree: Path, tmp_path: Path, through: str
) -> None:
    """Through the head's address (a node of the cluster runs `collect`) and through Ray
    Client (`ray://`: from a machine outside it)."""

    def cli(where: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
        out = tmp_path / where
        command = [str(Path(sys.executable).with_name("genledger")), "collect", str(tree)]
        command += ["-o", str(out / "s.json"), "--state", str(out / "st"), "-q", *extra]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert (out / "s.json").exists(), f"collect wrote nothing: {done.stderr[-3000:]}"
        return done, jsonio.loads((out / "s.json").read_bytes())

    address = cluster.address if through == "gcs" else cluster.client
    ray_run, ray_stats = cli("ray", "--ray", address)
    local_run, local_stats = cli("local")
    assert ray_run.returncode == local_run.returncode == 1  # the tree holds error datasets
    assert_same(ray_stats, local_stats)
    assert "scanned on Ray" in ray_run.stderr


def test_the_next_refresh_after_a_ray_scan_reads_only_what_was_appended(
    cluster: Cluster, tree: Path, tmp_path: Path
) -> None:
    root = tmp_path / "data"
    shutil.copytree(tree, root)
    collect(root, tmp_path / "ray", cluster.address)
    collect(root, tmp_path / "local")
    grown = root / "clean_chat_then_flat" / "raw_responses.jsonl"
    with grown.open("ab") as out:
        out.write(line({"id": "appended", "completion_tokens": 7, "prompt_tokens": 3}))
    big = next(root.glob("big-*/raw_responses*.jsonl"))
    with big.open("ab") as out:
        out.write(big.read_bytes()[: 300 << 10].rsplit(b"\n", 1)[0] + b"\n")
    after = collect(root, tmp_path / "ray")  # local, from the Ray scan's checkpoints
    full = collect(root, tmp_path / "full")
    assert_same(after.stats, full.stats)
    # read from where the Ray scan stopped, as after a local cold scan: the grown files
    # appended, the others unchanged (an empty file stays new)
    reads = _reads(after)
    assert reads == _reads(collect(root, tmp_path / "local"))
    grew = {("clean_chat_then_flat", "raw_responses.jsonl"), (big.parent.name, big.name)}
    assert {reads[key] for key in grew} == {"appended"}
    assert "unchanged" in reads.values()


def _reads(done: Any) -> dict[tuple[str, str], str | None]:
    """How each file was last read, by (dataset, name)."""
    return {
        (f.dataset, f.name): f.last_read for r in done.records.values() for f in r.files.values()
    }


def test_an_s3_root_scanned_on_the_cluster_equals_a_local_collect(
    cluster: Cluster, s3: S3Server, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in s3.env().items():
        monkeypatch.setenv(key, value)
    bucket = boto3.client("s3")
    bucket.create_bucket(Bucket="archive")
    for path in sorted(tree.rglob("*")):
        if path.is_file() and not path.name.startswith("big"):
            bucket.upload_file(str(path), "archive", f"run/{path.relative_to(tree)}")
    on_ray = collect("s3://archive/run", tmp_path / "ray", cluster.address)
    local = collect("s3://archive/run", tmp_path / "local")
    assert_same(on_ray.stats, local.stats)
    assert sum(b["n_done"] for b in local.stats["datasets"].values()) > 100


def test_a_task_carries_no_credential(
    s3: S3Server, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = s3.env()
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    bucket = boto3.client("s3")
    with contextlib.suppress(bucket.exceptions.BucketAlreadyOwnedByYou):
        bucket.create_bucket(Bucket="secrets")
    body = _sample_lines(tree)[0]
    bucket.put_object(Bucket="secrets", Key="run/ds/raw_responses.jsonl", Body=body)
    config = Config(data_root="s3://secrets/run")
    found = survey("s3://secrets/run", config)
    jobs = [ScanJob(f.key, f.path, f.name, f.role, None) for ds in found.datasets for f in ds.files]
    from genledger.refresh.ray_engine import scan_piece

    payloads = [ray.cloudpickle.dumps(piece) for piece in cut_jobs(jobs, 2).pieces]
    payloads.append(ray.cloudpickle.dumps(scan_piece))
    assert payloads and any(b"secrets/run" in p for p in payloads)
    for secret in (env["AWS_SECRET_ACCESS_KEY"], env["AWS_ACCESS_KEY_ID"]):
        assert not any(secret.encode() in p for p in payloads)


def _group(leader: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The live processes of a node's process group (a killed one's zombies are not)."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == leader.pid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")  # a node's own, idle or not


def _raylet(leader: subprocess.Popen[bytes]) -> psutil.Process:
    """The raylet of a node (the parent of its workers)."""
    (raylet,) = [p for p in _group(leader) if p.name() == "raylet"]
    return raylet


def _working(raylet: psutil.Process) -> bool:
    """The node has a worker: Ray starts one on a node only to run tasks leased to it."""
    for proc in raylet.children():
        with contextlib.suppress(psutil.Error):
            title = " ".join(proc.cmdline())
            if title.startswith("ray::") and not title.startswith(AGENTS):
                return True
    return False


@pytest.mark.parametrize("after", [0.0, 0.5], ids=["as-its-first-task-starts", "later"])
def test_a_node_killed_mid_scan_changes_no_total(
    cluster: Cluster, tree: Path, tmp_path: Path, after: float
) -> None:
    doomed = cluster.add_node()
    killed = threading.Event()
    finished = threading.Event()

    raylet = _raylet(doomed)

    def kill_when_scanning() -> None:
        while not finished.is_set():
            if _working(raylet):
                time.sleep(after)
                if finished.is_set():
                    return  # too late: the scan is over
                cluster.kill(doomed)  # the raylet, its object store and its workers at once
                killed.set()
                return
            time.sleep(0.001)

    killer = threading.Thread(target=kill_when_scanning, daemon=True)
    killer.start()
    try:
        on_ray = collect(tree, tmp_path / "ray", cluster.address)
    finally:
        finished.set()
        killer.join(30)
    assert killed.is_set(), "the third node was not killed while the scan ran"
    assert not _group(doomed)
    local = collect(tree, tmp_path / "local")
    assert_same(on_ray.stats, local.stats)


def test_a_piece_failing_every_try_makes_its_file_unreadable_with_the_reason(
    cluster: Cluster, tree: Path
) -> None:
    from genledger.refresh.parallel import scan_job
    from genledger.refresh.ray_engine import TASK_RETRIES, scan_on_ray
    from genledger.refresh.reading import Reading

    found = survey(tree, Config(data_root=tree))
    jobs = [
        ScanJob(f.key, f.path, f.name, f.role, None)
        for ds in found.datasets
        if ds.name == "clean_chat_then_flat"
        for f in ds.files
    ]
    # A task that raises on every try (no switches to read records with): a bug, not data.
    responses = next(job for job in jobs if job.role == "responses")
    broken = replace(responses, key="broken", reading=Reading(switches=None))  # type: ignore[arg-type]
    scans = scan_on_ray([*jobs, broken], cluster.address)
    assert scans.done["broken"].read is None
    assert scans.done["broken"].error == (
        f"the Ray cluster could not scan it ({TASK_RETRIES} retries): "
        "AttributeError: 'NoneType' object has no attribute 'fast'"
    )
    for job in jobs:
        assert scans.done[job.key].delta == scan_job(job).delta
