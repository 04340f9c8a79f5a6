"""How often a sensor really ticks: Dagster's sensor daemon looks once every 5 s.

The daemon (`dagster/_daemon/sensor.py`, `MIN_INTERVAL_LOOP_TIME`) evaluates, once a loop, each
sensor whose last tick *started* at least `minimum_interval_seconds` ago, one sensor after
another. A tick starts a little after its loop does — by however long the sensors before it
took — so with an interval equal to the loop's 5 s a sensor is found a fraction of a second
short about half the time and waits for the next loop: measured, the file sensor ticked every
10 s more often than every 5 s, which the time to signal pays twice (the file sensor, then the
check notifications). Asking for a second less makes a sensor tick in the first loop that
starts at least the wanted interval after the loop of its last tick.
"""

DAEMON_LOOP_S = 5  # dagster/_daemon/sensor.py MIN_INTERVAL_LOOP_TIME
SLACK_S = 1  # more than a tick's start lags its loop's, less than a loop


def tick_every(seconds: int) -> int:
    """The `minimum_interval_seconds` of a sensor meant to tick every `seconds`."""
    return max(1, seconds - SLACK_S)
