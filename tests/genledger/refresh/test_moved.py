"""Files followed by identity: logrotate's two modes (`create`: a rename, `copytruncate`: a copy
then a truncate), done by hand, keep every counted record; a plain copy beside a file that
still holds its records is not counted twice; a rotated file deleted at last is an error that
names it and what it had counted."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from genledger.config import Config
from genledger.refresh.collect import refresh

from ..parse.sdk_records import openai_chat


def records(start: int, n: int) -> bytes:
    """`n` chat completions (openai-python's own model), 7 completion tokens each."""
    return b"".join(
        openai_chat(f"chatcmpl-{i}", 11, 7, f"answer {i}").model_dump_json().encode() + b"\n"
        for i in range(start, start + n)
    )


class Run:
    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "data"
        self.ds = self.root / "ds"
        self.ds.mkdir(parents=True)
        self.config = Config(
            data_root=self.root, stats_path=tmp / "out/stats.json", state_dir=tmp / "state"
        )

    def block(self) -> dict[str, Any]:
        stats = refresh(self.config).stats
        assert orjson.loads(self.config.stats_path.read_bytes()) == stats  # type: ignore[union-attr]
        return dict(stats["datasets"]["ds"])

    def append(self, name: str, data: bytes) -> None:
        with (self.ds / name).open("ab") as fh:
            fh.write(data)


@pytest.fixture
def run(tmp_path: Path) -> Run:
    return Run(tmp_path)


LIVE = "raw_responses.jsonl"


def test_logrotate_create_keeps_the_renamed_files_records(run: Run) -> None:
    run.append(LIVE, records(0, 120) + b'{"id": "chatcmpl-half", "obj')  # and a pending line
    first = run.block()
    assert first["n_done"] == 120 and first["total_comp"] == 840
    os.rename(run.ds / LIVE, run.ds / f"{LIVE}.1")  # logrotate `create`: rename, new file
    run.append(f"{LIVE}.1", b'ect": "chat.completion"}\n'[:0])  # nothing new yet
    run.append(LIVE, records(200, 5))
    block = run.block()
    assert (block["n_done"], block["total_comp"]) == (125, 875)
    assert block["unrecognised"]["count"] == 0
    assert block["files"][f"{LIVE}.1"]["role"] == "responses"
    assert block["quality"]["duplicate_ids"] == 0 and "error" not in block["files"][LIVE]
    # the writer still holds the renamed file open: what it writes there is counted too
    run.append(f"{LIVE}.1", b"\n" + records(120, 3))
    assert run.block()["n_done"] == 128


def test_logrotate_copytruncate_keeps_the_copied_records(run: Run) -> None:
    run.append(LIVE, records(0, 120))
    assert run.block()["n_done"] == 120
    run.append(LIVE, records(120, 2))  # written after the last refresh, before the rotation
    shutil.copyfile(run.ds / LIVE, run.ds / f"{LIVE}.1")  # logrotate `copytruncate`
    os.truncate(run.ds / LIVE, 0)
    run.append(LIVE, records(300, 4))
    block = run.block()
    assert (block["n_done"], block["total_comp"]) == (126, 126 * 7)
    assert block["unrecognised"]["count"] == 0 and block["quality"]["duplicate_ids"] == 0
    assert block["files"][f"{LIVE}.1"]["lines"] == 122
    assert run.block()["n_done"] == 126  # and again: nothing counted twice


def test_a_rotation_chain_keeps_every_record_and_a_deleted_one_is_named(run: Run) -> None:
    run.append(LIVE, records(0, 50))
    run.block()
    for step in range(1, 3):  # rotate 2: .1 -> .2, live -> .1, a new live file
        if (run.ds / f"{LIVE}.1").exists():
            os.rename(run.ds / f"{LIVE}.1", run.ds / f"{LIVE}.2")
        os.rename(run.ds / LIVE, run.ds / f"{LIVE}.1")
        run.append(LIVE, records(100 * step, 10))
        assert run.block()["n_done"] == 50 + 10 * step
    (run.ds / f"{LIVE}.2").unlink()  # rotated out of the count logrotate keeps
    block = run.block()
    assert block["n_done"] == 20
    error = block["files"][f"{LIVE}.2"]["error"]
    assert error.startswith("gone: ") and "50 records counted before" in error
    assert block["quality"]["status"] == "error"


def test_a_plain_copy_beside_the_file_is_not_counted_twice(run: Run) -> None:
    run.append(LIVE, records(0, 30))
    run.block()
    shutil.copyfile(run.ds / LIVE, run.ds / f"{LIVE}.bak")  # the file still holds its records
    (run.ds / "README.md").write_text("notes\n")
    block = run.block()
    assert block["n_done"] == 30
    assert block["unrecognised"]["paths"] == ["README.md", f"{LIVE}.bak"]
