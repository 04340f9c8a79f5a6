"""`--collect`: run the engine's refresh on an interval, for people without Dagster."""

from __future__ import annotations

import time

from genledger.config import Config
from genledger.monitor import fmt


class Collector:
    """Runs `genledger.refresh.collect.refresh` when due; remembers how the last run went."""

    def __init__(self, config: Config, interval: float) -> None:
        self.config = config
        self.interval = max(0.5, interval)
        self.last_run: float | None = None
        self.error = ""

    def due(self, now: float) -> bool:
        """Never run yet, or the interval has passed."""
        return self.last_run is None or now - self.last_run >= self.interval

    def run(self) -> None:
        """One refresh; a failure is remembered and shown, never raised."""
        from genledger.refresh.collect import UsageError, refresh
        from genledger.tail.discovery import DataRootError

        self.last_run = time.time()
        try:
            refresh(self.config)
            self.error = ""
        except (UsageError, DataRootError, OSError, ValueError) as exc:
            self.error = f"collect failed: {exc}"

    def status(self, now: float) -> str:
        """One line for the header: what is collected, how often, and the last outcome."""
        line = f"collecting {self.config.data_root} every {fmt.duration(self.interval)}"
        if self.last_run is not None:
            line += f", last {fmt.duration(now - self.last_run)} ago"
        return f"{line} · {self.error}" if self.error else line
