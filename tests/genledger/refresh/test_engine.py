"""The engine choice: the local pool by default, Ray only when asked for (an optional extra)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from genledger.synth.tree import write_sample_tree

RUN_CLI = "import sys\nfrom genledger.cli import main\ncode = main(sys.argv[1:])\n"


def _python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300
    )


def test_a_local_collect_never_imports_ray(tmp_path: Path) -> None:
    root = write_sample_tree(tmp_path / "data")
    out = tmp_path / "out"
    script = RUN_CLI + "assert 'ray' not in sys.modules, 'ray imported'\nprint('ok', code)\n"
    done = _python(script, "collect", str(root), "-o", f"{out}/s.json", "--state", f"{out}/st")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "1"]  # the sample tree holds an error dataset
    assert (out / "s.json").is_file()


def test_ray_asked_for_without_ray_installed_is_one_line_and_exit_2(tmp_path: Path) -> None:
    root = write_sample_tree(tmp_path / "data")
    out = tmp_path / "out"
    hide = "import sys\nsys.modules['ray'] = None  # as if not installed\n"
    script = hide + RUN_CLI + "sys.exit(code)\n"
    done = _python(
        script, "collect", str(root), "-o", f"{out}/s.json", "--state", f"{out}/st", "--ray", "auto"
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "genledger collect: a Ray cluster (auto) was asked for and Ray is not installed: "
        "pip install 'genledger[ray]'"
    ]
    assert not (out / "s.json").exists()


def test_a_cluster_out_of_reach_is_one_line_and_exit_2_at_once(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    from ..tail.servers import free_port

    root = write_sample_tree(tmp_path / "data")
    out = tmp_path / "out"
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    done = _python(
        RUN_CLI + "sys.exit(code)\n",
        *("collect", str(root), "-o", f"{out}/s.json", "--state", f"{out}/st", "--ray", address),
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"genledger collect: cannot reach the Ray cluster at {address}: Connection refused"
    ]
    assert not (out / "s.json").exists()
