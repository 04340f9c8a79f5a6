"""One tick of the check-notification sensor against an instance on disk, in a process of its
own: the daemon's tick, as a test can SIGKILL it mid-delivery.

    python tick_child.py DAGSTER_HOME STATE_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg
from dagster._core.instance.ref import InstanceRef

from automation.notifications import CHECK_SENSOR, build_notification_sensors
from genledger.config import Config, NotifySettings


def config_for(state_dir: Path) -> Config:
    """The configuration the test and this child share."""
    return Config(
        state_dir=state_dir,
        stats_path=state_dir / "stats.json",
        notify=NotifySettings(backoff_s=0.01),
    )


if __name__ == "__main__":
    home, state = sys.argv[1:3]
    sensors = {s.name: s for s in build_notification_sensors(config_for(Path(state)))}
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(home)) as instance:
        sensors[CHECK_SENSOR].evaluate_tick(dg.build_sensor_context(instance=instance))
