"""`genledger monitor`: poll the stats file, draw frames, optionally run collect itself."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import FrameType

from rich.console import Console, RenderableType
from rich.live import Live
from rich.text import Text

from genledger.monitor.collector import Collector
from genledger.monitor.render import frame_width, render
from genledger.monitor.source import StatsSource
from genledger.monitor.state import MonitorState
from genledger.terminal import printable

EXIT_OK, EXIT_NO_STATS, EXIT_USAGE = 0, 1, 2
POLL_S = 0.25  # how often the stats file's signature is checked


def monitor_command(args: argparse.Namespace) -> int:
    """Live dashboard on a terminal, frames on change otherwise, one frame with --once."""
    from genledger.config import ConfigError, load_config

    remote = args.stats if isinstance(args.stats, str) else None  # a sftp:// or s3:// URL
    try:
        config = load_config(args.config).with_paths(
            data_root=args.collect, stats_path=None if remote else args.stats, state_dir=args.state
        )
    except ConfigError as exc:
        print(f"genledger monitor: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if remote is not None:
        screen = Screen(remote, args.stale_after, None)
        return screen.once() if args.once else screen.plain()
    if config.stats_path is None:
        print(
            "genledger monitor: no stats path: pass STATS.json or set GENLEDGER_STATS_PATH",
            file=sys.stderr,
        )
        return EXIT_USAGE
    collector = Collector(config, args.collect_interval) if args.collect else None
    screen = Screen(config.stats_path, args.stale_after, collector)
    if args.once:
        return screen.once()
    if screen.console.is_terminal:
        return screen.live(args.interval)
    return screen.plain()


class Screen:
    """The stats source, the optional collector and the console they are drawn on."""

    def __init__(self, path: Path | str, stale_after: float, collector: Collector | None) -> None:
        self.path = path
        self.stale_after = stale_after
        self.collector = collector
        self.source = StatsSource(path)
        self.console = _console()
        # A pipe without $COLUMNS has no real width: rather than cut a long dataset name,
        # its lines grow past 80 until the key figures fit.
        self.elastic = not self.console.is_terminal and "COLUMNS" not in os.environ

    def state(self) -> MonitorState:
        """What to draw now."""
        now = time.time()
        good = self.source.last_good
        problem = self.source.problem
        if good is not None and problem:
            problem = f"last read failed ({problem}); showing the previous stats"
        elif good is not None and self.source.note:
            problem = self.source.note
        return MonitorState(
            path=self.path,
            stats=good.stats if good else None,
            now=now,
            stale_after=self.stale_after,
            width=self.console.width,
            stats_mtime=good.mtime if good else None,
            message=problem,
            collecting=self.collector.status(now) if self.collector else "",
            ascii_only=not self.console.encoding.lower().startswith("utf"),
        )

    def _print(self) -> None:
        state = self.state()
        if self.elastic:
            self.console.width = frame_width(state)
            state = replace(state, width=self.console.width)
        self.console.print(safe_render(state))

    def _tick(self) -> bool:
        """Collect if due, then poll; True when the stats file changed."""
        if self.collector is not None and self.collector.due(time.time()):
            self.collector.run()
        return self.source.poll()

    def once(self) -> int:
        """One frame; exit 1 when there are no stats to show."""
        self._tick()
        self._print()
        return EXIT_OK if self.source.last_good is not None else EXIT_NO_STATS

    def plain(self) -> int:
        """Not a terminal: print a whole frame each time the stats change, no redraws."""
        try:
            while True:
                if self._tick():
                    self._print()
                    self.console.file.flush()
                time.sleep(POLL_S)
        except KeyboardInterrupt:
            return EXIT_OK
        except BrokenPipeError:
            return EXIT_OK

    def live(self, interval: float) -> int:
        """Redraw in place on change (and every `interval` s for the ages) until Ctrl-C."""
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            with Live(
                safe_render(self.state()),
                console=self.console,
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=False,
                vertical_overflow="ellipsis",
            ) as live:
                self._redraw_until_interrupted(live, interval)
        finally:
            signal.signal(signal.SIGTERM, previous)
        return EXIT_OK

    def _redraw_until_interrupted(self, live: Live, interval: float) -> None:
        drawn_at, drawn_width = 0.0, self.console.width
        try:
            while True:
                news = self._tick()
                now = time.time()
                if news or now - drawn_at >= interval or self.console.width != drawn_width:
                    live.update(safe_render(self.state()), refresh=True)
                    drawn_at, drawn_width = now, self.console.width
                time.sleep(min(POLL_S, interval))
        except KeyboardInterrupt:
            return


def safe_render(state: MonitorState) -> RenderableType:
    """`render`, or one line saying why the stats cannot be drawn: a frame is never a
    traceback (the reading is checked field by field; this is the last guard)."""
    try:
        return render(state)
    except Exception as exc:  # a shape `monitor.shape` does not foresee
        return Text(printable(f"genledger monitor: cannot draw these stats: {exc!r}"))


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _console() -> Console:
    if sys.stdout.isatty():
        return Console(highlight=False)
    # Pipes, files and scripts get plain text: no colours, no cursor movement.
    return Console(color_system=None, force_terminal=False, highlight=False, emoji=False)
