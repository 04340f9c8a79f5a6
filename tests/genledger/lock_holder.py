"""Another process holding a dataset's lock: a refresh that does not return, for the tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HOLD_LOCK = """
import sys, time
from pathlib import Path
from genledger.refresh.state import StateStore
state_dir, dataset, hold_s = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
with StateStore(state_dir, "/data").locked(dataset):
    (state_dir / "holding").touch()
    print("held", flush=True)
    time.sleep(hold_s)
    (state_dir / "holding").unlink()
"""


def hold(state_dir: Path, dataset: str, hold_s: float) -> subprocess.Popen[str]:
    """A process holding `dataset`'s lock in `state_dir` for `hold_s` seconds (the file
    `state_dir/holding` exists meanwhile); returned once it holds it. Kill it by its pid."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(state_dir), dataset, str(hold_s)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc
