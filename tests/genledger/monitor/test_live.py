"""The real `genledger monitor` in a pseudo-terminal: starts, redraws on change, Ctrl-C exits."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from .conftest import ANSI

HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"


class Terminal:
    """A child process on an 80x24 pty of its own, with everything it drew kept."""

    def __init__(self, args: list[str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
        env["TERM"] = "xterm-256color"
        self.proc = subprocess.Popen(
            args,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
            preexec_fn=_take_controlling_tty,  # so Ctrl-C on the pty means SIGINT
        )
        os.close(slave)
        self.master = master
        self.output = ""

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                self.output += os.read(self.master, 65536).decode("utf-8", "replace")
            except OSError:  # the child closed the pty
                time.sleep(timeout)

    def expect(self, text: str, since: int = 0, timeout: float = 60) -> int:
        """Wait until `text` is drawn after offset `since`; return where the output ends."""
        deadline = time.monotonic() + timeout
        while text not in ANSI.sub("", self.output[since:]):
            assert time.monotonic() < deadline, f"{text!r} never drawn:\n{self.output[since:]}"
            self._read(0.2)
        return len(self.output)

    def close(self) -> None:
        """Kill the child if it is still running (by its pid) and close the pty."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self.master)


def _take_controlling_tty() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_live_mode_starts_redraws_on_change_and_exits_cleanly_on_ctrl_c(growing) -> None:
    run = growing({"live_ds": (100, "flat")})
    run.grow("live_ds", 10)
    run.refresh(time.time())
    stats: Path = run.stats_path
    term = Terminal(
        [sys.executable, "-m", "genledger.cli", "monitor", str(stats), "--interval", "0.5"]
    )
    try:
        started = term.expect("10.0%")
        assert HIDE_CURSOR in term.output  # a live display, not a printout
        run.grow("live_ds", 40)
        run.refresh(time.time())
        term.expect("50.0%", since=started)
        os.write(term.master, b"\x03")
        assert term.proc.wait(timeout=30) == 0
        term._read(0.5)
        tail = term.output[term.output.rindex(HIDE_CURSOR) :]
        assert SHOW_CURSOR in tail  # the terminal got its cursor back
        assert "Traceback" not in term.output
        assert all(len(line) <= 80 for line in ANSI.sub("", term.output).splitlines())
    finally:
        term.close()
