"""Never silent: what was counted and is gone, what cannot be listed or read, and an empty
root are reported with the path and the OS's reason, refresh after refresh, never dropped."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from genledger.config import Config
from genledger.refresh.collect import refresh
from genledger.tail.discovery import discover_one

from ..caps import drop_in_child, without_file_override
from ..conftest import comparable, response_line


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def lines(start: int, n: int) -> bytes:
    return b"".join(response_line(i) for i in range(start, start + n))


class Run:
    """A data root, its stats and state, refreshed in process or by the CLI."""

    def __init__(self, tmp: Path, root: Path | None = None) -> None:
        self.tmp = tmp
        self.root = root or tmp / "data"
        self.root.mkdir(parents=True, exist_ok=True)
        self.stats_path, self.state = tmp / "out" / "stats.json", tmp / "state"

    @property
    def config(self) -> Config:
        return Config(data_root=self.root, stats_path=self.stats_path, state_dir=self.state)

    def refresh(self, **kw: Any) -> dict[str, Any]:
        return refresh(self.config, **kw).stats

    def cli(self, *extra: str, drop_caps: bool = False) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "genledger.cli", "collect", str(self.root)]
        cmd += ["-o", str(self.stats_path), "--state", str(self.state), *extra]
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=drop_in_child if drop_caps else None,
        )

    def written(self) -> dict[str, Any]:
        return dict(orjson.loads(self.stats_path.read_bytes()))


@pytest.fixture
def run(tmp_path: Path) -> Run:
    return Run(tmp_path)


def errors(block: dict[str, Any]) -> dict[str, str]:
    return {name: e["error"] for name, e in block["files"].items() if "error" in e}


# --- counted, then gone -------------------------------------------------------------------


@pytest.fixture
def bind_mount(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the share's own folder, where it is mounted); skipped where mount is not permitted."""
    share, mount = tmp_path / "share", tmp_path / "mnt"
    share.mkdir()
    mount.mkdir()
    done = subprocess.run(["mount", "--bind", str(share), str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {done.stderr.decode().strip()}")
    try:
        yield share, mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_share_unmounted_under_the_root_is_an_error_naming_every_file_it_held(
    tmp_path: Path, bind_mount: tuple[Path, Path]
) -> None:
    share, mount = bind_mount
    write(share / "a" / "raw_responses.jsonl", lines(0, 3))
    write(share / "b" / "tokenized_data.jsonl", b'{"input_ids": [1, 2]}\n')
    run = Run(tmp_path, mount)
    assert run.cli().returncode == 0
    subprocess.run(["umount", str(mount)], check=True)  # the share is gone: an empty folder
    for _ in range(2):  # and it stays reported, refresh after refresh
        done = run.cli()
        assert done.returncode == 1, done.stderr
        stats = run.written()
        assert errors(stats["datasets"]["a"]) == {
            "raw_responses.jsonl": "gone: No such file or directory"
        }
        assert errors(stats["datasets"]["b"]) == {
            "tokenized_data.jsonl": "gone: No such file or directory"
        }
        assert stats["datasets"]["b"]["kind"] == "pretokenized"
        assert stats["totals"]["quality"]["status"] == "error"
        assert stats["totals"]["quality"]["unreadable_files"] == 2
        assert stats["totals"]["n_done"] == 0
        assert "a: 0/? done" in done.stderr and "[ERROR]" in done.stderr
    subprocess.run(["mount", "--bind", str(share), str(mount)], check=True)
    assert run.cli().returncode == 0
    assert comparable(run.written()) == comparable(
        refresh(Config(mount, tmp_path / "o" / "s.json", tmp_path / "o" / "st"), full=True).stats
    )


def test_a_root_emptied_of_its_datasets_is_an_error_and_an_empty_root_is_not_ok(
    run: Run,
) -> None:
    stats = run.refresh()
    assert stats["totals"]["quality"]["status"] == "warn"  # a root that never held data
    assert stats["totals"]["quality"]["no_datasets"] == 1
    (failure,) = stats["totals"]["quality"]["failures"]
    assert failure["check"] == "no_datasets"
    write(run.root / "ds" / "raw_responses.jsonl", lines(0, 2))
    assert run.refresh()["totals"]["quality"]["status"] == "ok"
    shutil.rmtree(run.root / "ds")  # the folder is gone: not a root that never held data
    stats = run.refresh()
    assert stats["totals"]["quality"]["status"] == "error"
    assert stats["totals"]["quality"]["no_datasets"] == 0
    assert errors(stats["datasets"]["ds"]) == {
        "raw_responses.jsonl": "gone: No such file or directory"
    }


def test_a_deleted_shard_is_reported_until_forgotten_and_full_says_the_same(run: Run) -> None:
    write(run.root / "ds" / "raw_responses.jsonl", lines(0, 2))
    write(run.root / "ds" / "part-1" / "raw_responses.jsonl", lines(2, 3))
    assert run.refresh()["totals"]["n_done"] == 5
    (run.root / "ds" / "part-1" / "raw_responses.jsonl").unlink()
    for _ in range(3):
        block = run.refresh()["datasets"]["ds"]
        assert block["n_done"] == 2
        gone = "gone: No such file or directory (3 records counted before)"  # the loss in numbers
        assert errors(block) == {"part-1/raw_responses.jsonl": gone}
        assert block["quality"]["unreadable_files"] == 1
    assert comparable(run.refresh(full=True)) == comparable(run.refresh())
    forgotten = run.refresh(forget_missing=True)["datasets"]["ds"]
    assert (errors(forgotten), forgotten["quality"]["status"]) == ({}, "ok")
    assert errors(run.refresh()["datasets"]["ds"]) == {}  # forgotten for good


def test_forget_missing_drops_a_gone_dataset_from_the_state(run: Run) -> None:
    write(run.root / "keep" / "raw_responses.jsonl", lines(0, 1))
    write(run.root / "gone" / "raw_responses.jsonl", lines(1, 1))
    run.refresh()
    shutil.rmtree(run.root / "gone")
    assert "gone" in run.refresh()["datasets"]
    done = run.cli("--forget-missing")
    assert done.returncode == 0, done.stderr
    assert list(run.written()["datasets"]) == ["keep"]
    assert list(run.refresh()["datasets"]) == ["keep"]


def test_a_file_renamed_is_counted_under_its_new_name_and_the_old_one_reported(
    run: Run,
) -> None:
    write(run.root / "ds" / "raw_responses_1.jsonl", lines(0, 4))
    run.refresh()
    os.rename(run.root / "ds" / "raw_responses_1.jsonl", run.root / "ds" / "raw_responses_2.jsonl")
    block = run.refresh()["datasets"]["ds"]
    assert block["n_done"] == 4
    assert errors(block) == {
        "raw_responses_1.jsonl": "gone: No such file or directory (4 records counted before)"
    }


# --- cannot be listed, cannot be read -------------------------------------------------------


def test_a_shard_folder_that_cannot_be_listed_is_named_with_the_reason(run: Run) -> None:
    write(run.root / "ds" / "part-0" / "raw_responses.jsonl", lines(0, 2))
    write(run.root / "ds" / "part-1" / "raw_responses.jsonl", lines(2, 3))
    assert run.cli().returncode == 0
    (run.root / "ds" / "part-1").chmod(0)
    try:
        done = run.cli(drop_caps=True)
    finally:
        (run.root / "ds" / "part-1").chmod(0o755)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    block = run.written()["datasets"]["ds"]
    assert block["n_done"] == 2
    assert errors(block) == {
        "part-1/": "cannot list the folder: Permission denied",
        "part-1/raw_responses.jsonl": "not listed: Permission denied (3 records counted before)",
    }
    assert block["quality"]["unreadable_files"] == 2


def test_a_dataset_folder_that_cannot_be_listed_keeps_its_block(run: Run) -> None:
    write(run.root / "ds" / "raw_responses.jsonl", lines(0, 2))
    write(run.root / "other" / "raw_responses.jsonl", lines(2, 1))
    run.refresh()
    (run.root / "ds").chmod(0)
    try:
        with without_file_override():
            stats = run.refresh()
    finally:
        (run.root / "ds").chmod(0o755)
    assert errors(stats["datasets"]["ds"]) == {
        "./": "cannot list the folder: Permission denied",
        "raw_responses.jsonl": "not listed: Permission denied (2 records counted before)",
    }
    assert stats["datasets"]["other"]["n_done"] == 1
    assert stats["totals"]["quality"]["status"] == "error"


def test_a_folder_never_counted_that_cannot_be_listed_is_reported_too(run: Run) -> None:
    write(run.root / "new" / "raw_responses.jsonl", lines(0, 1))
    (run.root / "new").chmod(0)
    try:
        with without_file_override():
            stats = run.refresh()
    finally:
        (run.root / "new").chmod(0o755)
    assert errors(stats["datasets"]["new"]) == {"./": "cannot list the folder: Permission denied"}


def test_a_fifo_a_device_link_and_a_folder_named_like_shards_are_reported_never_opened(
    run: Run,
) -> None:
    folder = run.root / "ds"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "raw_responses.jsonl")  # opening it for reading would wait for a writer
    (folder / "raw_responses_dev.jsonl").symlink_to("/dev/zero")  # endless zeros
    (folder / "raw_responses_2.jsonl").mkdir()
    (folder / "broken.jsonl").symlink_to(folder / "nowhere")
    write(run.root / "ok" / "raw_responses.jsonl", lines(0, 1))
    out: list[dict[str, Any]] = []
    worker = threading.Thread(target=lambda: out.append(run.refresh()), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "a refresh blocked on a FIFO or a device"
    block = out[0]["datasets"]["ds"]
    assert errors(block) == {
        "broken.jsonl": "a broken symbolic link (No such file or directory)",
        "raw_responses.jsonl": "not a regular file (a FIFO)",
        "raw_responses_2.jsonl": "is a directory",
        "raw_responses_dev.jsonl": "not a regular file (a character device)",
    }
    assert block["quality"]["unreadable_files"] == 4
    assert out[0]["datasets"]["ok"]["n_done"] == 1


def test_what_cannot_be_read_outside_every_dataset_is_named_at_the_top(run: Run) -> None:
    write(run.root / "ds" / "raw_responses.jsonl", lines(0, 1))
    os.mkfifo(run.root / "pipe")
    write(run.root / "notes" / "readme.md", b"x")
    os.mkfifo(run.root / "notes" / "ctl")
    stats = run.refresh()
    assert stats["unreadable"] == {
        "count": 2,
        "files": {
            "notes/ctl": "not a regular file (a FIFO)",
            "pipe": "not a regular file (a FIFO)",
        },
    }
    assert stats["totals"]["quality"]["unreadable_files"] == 2
    assert stats["unrecognised"]["paths"] == ["notes/readme.md"]


# --- names that are not UTF-8 ---------------------------------------------------------------


def test_names_that_are_not_utf8_are_listed_escaped_and_read_incrementally(run: Run) -> None:
    root = bytes(run.root)
    os.makedirs(root + b"/caf\xe9")
    with open(root + b"/caf\xe9/raw_responses_\xff.jsonl", "wb") as out:
        out.write(lines(0, 2))
    with open(root + b"/stray-\xe9.txt", "wb") as out:
        out.write(b"x")
    done = run.cli()
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    stats = run.written()
    block = stats["datasets"]["caf\\xe9"]
    assert block["n_done"] == 2 and list(block["files"]) == ["raw_responses_\\xff.jsonl"]
    assert stats["unrecognised"]["paths"] == ["stray-\\xe9.txt"]
    with open(root + b"/caf\xe9/raw_responses_\xff.jsonl", "ab") as out:
        out.write(lines(2, 1))
    again = run.refresh()["datasets"]["caf\\xe9"]
    assert again["n_done"] == 3
    found = discover_one(run.root, "caf\\xe9", Config())
    assert found is not None and [f.name for f in found.files] == ["raw_responses_\\xff.jsonl"]
    assert comparable(run.refresh()) == comparable(run.refresh(full=True))


# --- a config that names what is not there --------------------------------------------------


def test_an_expected_total_for_a_dataset_that_is_not_there_is_a_note(run: Run) -> None:
    write(run.root / "ds" / "raw_responses.jsonl", lines(0, 1))
    (run.tmp / "genledger.toml").write_text('[datasets."B2_typo"]\nn_prompts = 10\n')
    done = run.cli("--config", str(run.tmp / "genledger.toml"), "-q")
    assert done.returncode == 0
    assert done.stderr.count("\n") == 1
    assert '[datasets."B2_typo"] names no dataset of the data root (yet)' in done.stderr


def test_a_folder_listable_again_leaves_no_error_behind(run: Run) -> None:
    write(run.root / "ds" / "raw_responses.jsonl", lines(0, 2))
    run.refresh()
    (run.root / "ds").chmod(0)
    try:
        with without_file_override():
            assert errors(run.refresh()["datasets"]["ds"])
    finally:
        (run.root / "ds").chmod(0o755)
    block = run.refresh()["datasets"]["ds"]
    assert (errors(block), block["n_done"], block["quality"]["status"]) == ({}, 2, "ok")


def test_a_counted_file_made_unreadable_then_deleted_is_still_reported(run: Run) -> None:
    path = write(run.root / "ds" / "raw_responses_1.jsonl", lines(0, 2))
    write(run.root / "ds" / "raw_responses.jsonl", lines(2, 1))
    run.refresh()
    path.chmod(0)
    with without_file_override():
        assert errors(run.refresh()["datasets"]["ds"]) == {
            "raw_responses_1.jsonl": "unreadable: Permission denied"
        }
    path.unlink()
    assert errors(run.refresh(full=True)["datasets"]["ds"]) == {
        "raw_responses_1.jsonl": "gone: No such file or directory"
    }
    assert errors(run.refresh()["datasets"]["ds"]) == {
        "raw_responses_1.jsonl": "gone: No such file or directory"
    }


def test_what_was_never_read_is_not_missed_once_removed(run: Run) -> None:
    write(run.root / "ds" / "raw_responses.jsonl", lines(0, 1))
    os.mkfifo(run.root / "ds" / "raw_responses_2.jsonl")
    assert list(errors(run.refresh()["datasets"]["ds"])) == ["raw_responses_2.jsonl"]
    (run.root / "ds" / "raw_responses_2.jsonl").unlink()
    assert errors(run.refresh()["datasets"]["ds"]) == {}
