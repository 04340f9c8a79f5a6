"""Rotation on remote roots, which have no inode: logrotate's `create` (a rename; on S3 a copy
then a delete) and `copytruncate` keep every counted record over SFTP (a real sshd) and on
S3 (moto's server), found by the first line and the bytes before the checkpoint."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from genledger.config import Config
from genledger.refresh.collect import refresh

from ..tail.servers import moto_s3, sshd
from .test_moved import LIVE, records


@dataclass
class Remote:
    """A dataset folder `ds` on a remote root: its URL and how to change its files there."""

    url: str
    put: Callable[[str, bytes], None]  # (name, bytes): the whole object or file
    get: Callable[[str], bytes]
    move: Callable[[str, str], None]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One sshd and one moto S3 server for the module."""
    with sshd(tmp_path_factory.mktemp("sshd")) as ssh, moto_s3(tmp_path_factory.mktemp("s3")) as s3:
        yield {"sftp": ssh, "s3": s3}


@pytest.fixture(params=["sftp", "s3"])
def remote(
    request: pytest.FixtureRequest,
    servers: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Remote:
    server = servers[request.param]
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    if request.param == "sftp":
        folder = tmp_path / "data" / "ds"
        folder.mkdir(parents=True)
        return Remote(
            server.url(tmp_path / "data"),
            lambda name, data: (folder / name).write_bytes(data),
            lambda name: (folder / name).read_bytes(),
            lambda old, new: (folder / old).rename(folder / new),
        )
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=server.env()["AWS_ENDPOINT_URL"], skip_instance_cache=True)
    bucket = tmp_path.name.replace("_", "-").lower()[:40]
    fs.mkdir(bucket)
    key = f"{bucket}/run/ds"
    return Remote(
        f"s3://{bucket}/run",
        lambda name, data: fs.pipe(f"{key}/{name}", data),
        lambda name: bytes(fs.cat(f"{key}/{name}")),
        lambda old, new: fs.mv(f"{key}/{old}", f"{key}/{new}"),
    )


def block(remote: Remote, tmp_path: Path) -> dict[str, Any]:
    """One refresh of the remote root (the same state dir each time): the dataset's block."""
    config = Config(
        data_root=remote.url, stats_path=tmp_path / "out/stats.json", state_dir=tmp_path / "st"
    )
    return dict(refresh(config).stats["datasets"]["ds"])


def test_logrotate_create_on_a_remote_root_keeps_the_renamed_files_records(
    remote: Remote, tmp_path: Path
) -> None:
    remote.put(LIVE, records(0, 120))
    assert block(remote, tmp_path)["n_done"] == 120
    remote.move(LIVE, f"{LIVE}.1")
    remote.put(LIVE, records(200, 5))
    after = block(remote, tmp_path)
    assert (after["n_done"], after["total_comp"]) == (125, 125 * 7)
    assert after["unrecognised"]["count"] == 0 and after["quality"]["duplicate_ids"] == 0
    assert after["files"][f"{LIVE}.1"]["role"] == "responses"
    assert block(remote, tmp_path)["n_done"] == 125  # and again: nothing counted twice


def test_logrotate_copytruncate_on_a_remote_root_keeps_the_copied_records(
    remote: Remote, tmp_path: Path
) -> None:
    remote.put(LIVE, records(0, 120))
    assert block(remote, tmp_path)["n_done"] == 120
    remote.put(LIVE, remote.get(LIVE) + records(120, 2))  # after the refresh, before rotating
    remote.put(f"{LIVE}.1", remote.get(LIVE))  # the copy
    remote.put(LIVE, records(300, 4))  # the truncate, and the writer goes on
    after = block(remote, tmp_path)
    assert (after["n_done"], after["total_comp"]) == (126, 126 * 7)
    assert after["unrecognised"]["count"] == 0 and after["files"][f"{LIVE}.1"]["lines"] == 122
    assert block(remote, tmp_path)["n_done"] == 126
