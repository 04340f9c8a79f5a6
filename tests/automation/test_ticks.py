"""A sensor meant to tick every loop of Dagster's sensor daemon does, whatever its tick lags."""

from __future__ import annotations

import dagster as dg
from dagster._daemon.sensor import MIN_INTERVAL_LOOP_TIME
from hypothesis import given
from hypothesis import strategies as st

from assets.spec import Location
from automation.notifications import build_notification_sensors
from automation.sensors import build_file_sensor
from automation.ticks import DAEMON_LOOP_S, tick_every

# how far into its loop a sensor's tick starts (the sensors before it, a busy machine)
LAGS = st.lists(st.floats(min_value=0.0, max_value=0.9), min_size=12, max_size=12)


def loops_ticked(minimum_interval_s: int, lags: list[float]) -> list[int]:
    """The loops a sensor ticks in, by Dagster's rule: due when its last tick *started* at
    least `minimum_interval_s` before now."""
    ticked, last = [], None
    for loop, lag in enumerate(lags):
        now = loop * DAEMON_LOOP_S + lag
        if last is None or now - last >= minimum_interval_s:
            ticked.append(loop)
            last = now
    return ticked


def test_the_daemon_loop_is_the_one_dagster_has() -> None:
    assert MIN_INTERVAL_LOOP_TIME == DAEMON_LOOP_S


@given(LAGS)
def test_a_sensor_meant_to_tick_every_5_s_ticks_in_every_loop(lags: list[float]) -> None:
    assert loops_ticked(tick_every(5), lags) == list(range(len(lags)))


def test_asking_for_the_loop_itself_skips_loops_when_a_tick_lags_less_than_the_last() -> None:
    assert loops_ticked(5, [0.5, 0.2, 0.6, 0.1]) == [0, 2]


@given(LAGS)
def test_a_sensor_meant_to_tick_every_10_s_ticks_every_other_loop(lags: list[float]) -> None:
    assert loops_ticked(tick_every(10), lags) == list(range(0, len(lags), 2))


def test_the_file_and_check_sensors_ask_for_less_than_a_loop_by_default(
    sample_location: Location,
) -> None:
    sensors: list[dg.SensorDefinition] = [
        build_file_sensor(sample_location),
        *build_notification_sensors(sample_location.config),
    ]
    intervals = {s.name: s.minimum_interval_seconds for s in sensors}
    assert intervals["dataset_files_changed"] == tick_every(5) < DAEMON_LOOP_S
    assert intervals["genledger_check_notifications"] == tick_every(5)
