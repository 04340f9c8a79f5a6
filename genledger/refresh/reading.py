"""How one refresh reads and counts files: a value built from the configuration, carried by
every scan (and pickled into forked workers) instead of module state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from genledger.config import NO_KEYS, Config, FilePatterns, Switches
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
    # the values rule conditions and the books read (`[tokenized] max_seq_len`, `[health]
    # window`), and the path of a prompt's id (`[datasets."X"] prompt_key`)
    params: tuple[tuple[str, Any], ...] = ()
    prompt_key: str | None = None

    @classmethod
    def of(cls, config: Config, dataset: str | None = None) -> Reading:
        """The reading a configuration asks for (of one dataset: its join keys)."""
        keys = config.dataset_keys(dataset) if dataset is not None else NO_KEYS
        formats = config.format_set
        if keys.response_key is not None:
            formats = FormatSet(config.formats, keys.response_key)
        params = (("max_seq_len", config.max_seq_len), ("window", config.health.window))
        return cls(
            formats,
            config.switches,
            config.patterns.settle_seconds,
            params=params,
            prompt_key=keys.prompt_key,
        )


DEFAULT_READING = Reading()
