"""A model-based test of the faults of a shared cluster (docs/tailing.md): hypothesis drives a
data root through appends (some torn), truncations, deletions, renames, permission changes of
files and folders, and the unmounting and remounting of the share it lives on, refreshing in
between. After every refresh it asserts that the refresh returned in bounded time; that it
equals a full re-read with the same state; that what can be read equals a scan with no state
at all, and an independent count of its records; and that every file that was counted and is
no longer readable is reported, with a reason, instead of dropping out of the totals."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from genledger.config import Config
from genledger.refresh.collect import refresh

from ..caps import without_file_override
from ..conftest import comparable, response_line
from .test_properties import readable_part

DATASETS = ("ds0", "ds1", "ds2")
FILES = ("raw_responses_a.jsonl", "raw_responses_b.jsonl", "part-1/raw_responses_c.jsonl")
REFRESH_BOUND_S = 60  # a refresh that has not returned by then is stuck


class Stuck(Exception):
    """A refresh did not return within its bound."""


@contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """Raise `Stuck` in this thread if the block runs longer than `seconds` (a spinning loop
    or a blocking open is interrupted by SIGALRM)."""

    def alarm(signum: int, frame: FrameType | None) -> None:
        raise Stuck(f"a refresh ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def can_bind_mount(base: Path) -> bool:
    """Whether this process may bind-mount (root in most containers, not in all)."""
    a, b = base / "probe-a", base / "probe-b"
    a.mkdir()
    b.mkdir()
    done = subprocess.run(["mount", "--bind", str(a), str(b)], capture_output=True)
    if done.returncode == 0:
        subprocess.run(["umount", str(b)], check=True)
    return done.returncode == 0


def records_in(data: bytes) -> int:
    """Records on the complete lines of a responses file, by the standard library."""
    count = 0
    for line in data.split(b"\n")[:-1]:
        try:
            count += isinstance(json.loads(line), dict)
        except ValueError:
            continue
    return count


class SharedCluster(RuleBasedStateMachine):
    """The data root on a share; its writers and its operators."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="genledger-machine-"))
        self.share, self.root = self.tmp / "share", self.tmp / "root"
        self.share.mkdir()
        self.root.mkdir()
        self.bind = can_bind_mount(self.tmp)
        self.mounted = False
        self._mount()
        self.next_id = 0
        self.counted: set[tuple[str, str]] = set()  # (dataset, file) counted by some refresh
        self.refreshes = 0

    # -- the share -------------------------------------------------------------------------

    def _mount(self) -> None:
        if self.bind:
            subprocess.run(["mount", "--bind", str(self.share), str(self.root)], check=True)
        else:  # an emptied folder put back: the share's files move in again
            self.root.rmdir()
            os.rename(self.share, self.root)
            self.share.symlink_to(self.root)
        self.mounted = True

    def _unmount(self) -> None:
        if self.bind:
            subprocess.run(["umount", str(self.root)], check=True)
        else:  # the files leave, an empty folder stays where the root was
            self.share.unlink()
            os.rename(self.root, self.share)
            self.root.mkdir()
        self.mounted = False

    def path(self, dataset: str, name: str) -> Path:
        return self.share / dataset / name

    def teardown(self) -> None:
        if self.mounted and self.bind:
            subprocess.run(["umount", str(self.root)], check=False)
        for folder in self.share.resolve().rglob("*"):
            if folder.is_dir():
                folder.chmod(0o755)
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- writers ---------------------------------------------------------------------------

    @rule(
        dataset=st.sampled_from(DATASETS),
        name=st.sampled_from(FILES),
        n=st.integers(1, 6),
        torn=st.booleans(),
    )
    def append(self, dataset: str, name: str, n: int, torn: bool) -> None:
        path = self.path(dataset, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode if path.exists() else None
        data = b"".join(response_line(self.next_id + i, tokens=i + 1) for i in range(n))
        self.next_id += n
        if torn:
            data = data[: len(data) - 7]  # the rest of the line arrives with a later write
        with path.open("ab") as out:  # as root: the writer owns its file whatever its mode
            out.write(data)
        if mode is not None:
            path.chmod(mode)

    @rule(dataset=st.sampled_from(DATASETS), name=st.sampled_from(FILES), keep=st.floats(0, 1))
    def truncate(self, dataset: str, name: str, keep: float) -> None:
        path = self.path(dataset, name)
        if path.exists():
            os.truncate(path, int(path.stat().st_size * keep))

    # -- operators -------------------------------------------------------------------------

    @rule(dataset=st.sampled_from(DATASETS), name=st.sampled_from(FILES))
    def delete(self, dataset: str, name: str) -> None:
        path = self.path(dataset, name)
        if path.exists():
            path.unlink()

    @rule(
        dataset=st.sampled_from(DATASETS), source=st.sampled_from(FILES), to=st.sampled_from(FILES)
    )
    def rename(self, dataset: str, source: str, to: str) -> None:
        old, new = self.path(dataset, source), self.path(dataset, to)
        if old.exists() and not new.exists():
            new.parent.mkdir(parents=True, exist_ok=True)
            os.rename(old, new)

    @rule(dataset=st.sampled_from(DATASETS), name=st.sampled_from(FILES), readable=st.booleans())
    def chmod_file(self, dataset: str, name: str, readable: bool) -> None:
        path = self.path(dataset, name)
        if path.exists():
            path.chmod(0o644 if readable else 0)

    @rule(dataset=st.sampled_from(DATASETS), readable=st.booleans())
    def chmod_folder(self, dataset: str, readable: bool) -> None:
        folder = self.share / dataset
        if folder.exists():
            folder.chmod(0o755 if readable else 0)

    @precondition(lambda self: self.mounted)
    @rule()
    def unmount(self) -> None:
        self._unmount()

    @precondition(lambda self: not self.mounted)
    @rule()
    def remount(self) -> None:
        self._mount()

    # -- the refresh and what must hold after it -------------------------------------------

    def _config(self, where: str) -> Config:
        base = self.tmp / where
        return Config(data_root=self.root, stats_path=base / "s.json", state_dir=base / "st")

    def _refresh(self, config: Config, full: bool = False) -> dict[str, Any]:
        with without_file_override(), bounded(REFRESH_BOUND_S):
            return refresh(config, full=full).stats

    @rule()
    def refresh_and_check(self) -> None:
        self.refreshes += 1
        stats = self._refresh(self._config("run"))
        # The same state, read again whole: the same stats.
        shutil.rmtree(self.tmp / "again", ignore_errors=True)
        if (self.tmp / "run" / "st").exists():
            shutil.copytree(self.tmp / "run" / "st", self.tmp / "again" / "st")
        assert comparable(self._refresh(self._config("again"), full=True)) == comparable(stats)
        # No state at all: the same numbers for everything there is to read.
        shutil.rmtree(self.tmp / "fresh", ignore_errors=True)
        assert readable_part(self._refresh(self._config("fresh"))) == readable_part(stats)
        self._every_counted_file_is_accounted_for(stats)
        self._records_are_counted_by_an_independent_reader(stats)

    def _readable(self, dataset: str, name: str) -> bool:
        if not self.mounted:
            return False
        folder, path = self.share / dataset, self.path(dataset, name)
        return (
            path.is_file()
            and folder.stat().st_mode & 0o700 != 0
            and path.stat().st_mode & 0o400 != 0
            and (path.parent == folder or path.parent.stat().st_mode & 0o700 != 0)
        )

    def _every_counted_file_is_accounted_for(self, stats: dict[str, Any]) -> None:
        for dataset, name in sorted(self.counted):
            if self._readable(dataset, name):
                continue
            entry = stats["datasets"].get(dataset, {}).get("files", {}).get(name)
            assert entry is not None, f"{dataset}/{name} was counted and is now silently dropped"
            assert entry.get("error"), f"{dataset}/{name} is not readable and has no error"
            quality = stats["datasets"][dataset]["quality"]
            assert quality["unreadable_files"] >= 1 and quality["status"] == "error"
        for dataset, block in stats["datasets"].items():
            for name, entry in block["files"].items():
                if "error" not in entry:
                    self.counted.add((dataset, name))

    def _records_are_counted_by_an_independent_reader(self, stats: dict[str, Any]) -> None:
        for dataset, block in stats["datasets"].items():
            expected = sum(
                records_in(self.path(dataset, name).read_bytes())
                for name in FILES
                if self._readable(dataset, name)
            )
            assert block["n_done"] == expected, dataset

    @invariant()
    def nothing_is_written_into_the_root(self) -> None:
        names = {p.name for p in self.share.resolve().rglob("*")}
        assert not any(n.endswith(".tmp") or n in ("s.json", "st") for n in names)


SharedCluster.TestCase.settings = settings(
    max_examples=int(os.environ.get("GENLEDGER_MACHINE_EXAMPLES", "25")),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def test_refreshes_on_a_shared_cluster_return_stay_exact_and_report_every_loss() -> None:
    if os.geteuid() == 0 and not _can_drop_capabilities():
        pytest.skip("cannot lower this thread's file capabilities")
    SharedCluster.TestCase().runTest()


def _can_drop_capabilities() -> bool:
    with tempfile.NamedTemporaryFile() as probe:
        os.chmod(probe.name, 0)
        with without_file_override():
            try:
                Path(probe.name).read_bytes()
            except PermissionError:
                return True
    return False
