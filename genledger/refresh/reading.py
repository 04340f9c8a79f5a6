"""How one refresh reads and counts files: a value built from the configuration, carried by
every scan (and pickled into forked workers) instead of module state."""

from __future__ import annotations

from dataclasses import dataclass, field

from genledger.config import Config, FilePatterns, Switches
from genledger.parse.declarations import BUILT_IN_ONLY, FormatSet

SETTLE_SECONDS = FilePatterns().settle_seconds


@dataclass(frozen=True)
class Reading:
    """The declarations records are read with, the speed and audit switches, and how long a
    sealed file must be still before an early end of its stream is final."""

    formats: FormatSet = BUILT_IN_ONLY
    switches: Switches = field(default_factory=Switches)
    settle_seconds: float = SETTLE_SECONDS
    # zstd decompresses in a thread ahead of the parsing, unless forked workers busy every
    # core (the parallel lever turns it off then: `tail.sealed.lines_of`)
    zstd_ahead: bool = True

    @classmethod
    def of(cls, config: Config) -> Reading:
        """The reading a configuration asks for."""
        return cls(config.format_set, config.switches, config.patterns.settle_seconds)


DEFAULT_READING = Reading()
