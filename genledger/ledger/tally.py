"""Mergeable per-file counters: what a refresh adds to what earlier refreshes counted.

`a + b` equals counting a's bytes then b's; the dict shape never depends on the values.
Examples keep the first `MAX_EXAMPLES` failing rows in file order, so merging a delta onto
earlier counts keeps the same examples a full scan would.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from genledger.ledger.idlist import IdList
from genledger.rules.result import RuleTally, merge_failures


@dataclass
class FileTally:
    """Counters of one data file (responses, tokenized or prompts)."""

    records: int = 0  # response records, or tokenized records
    counted: int = 0  # records whose count is valid (input_ids present for tokenized)
    nonzero: int = 0  # valid counts > 0
    total_comp: int = 0
    total_prompt: int = 0
    total_reasoning: int = 0
    n_reasoning: int = 0  # records reporting reasoning tokens (none: the total is unknown)
    total_cached_prompt: int = 0
    n_cached: int = 0  # records reporting cached prompt tokens
    n_samples: int = 0  # completions (several per record with n > 1)
    stream_chunks: int = 0  # streamed fragments (not records)
    total_tokens: int = 0
    total_loss_tokens: int = 0
    prompt_lines: int = 0  # non-blank lines of a prompts file
    formats: dict[str, int] = field(default_factory=dict)
    finish_reasons: dict[str, int] = field(default_factory=dict)
    failed_reasons: dict[str, int] = field(default_factory=dict)  # failed requests by reason
    empty_reasons: dict[str, int] = field(default_factory=dict)  # empty outputs by finish
    failures: dict[str, RuleTally] = field(default_factory=dict)
    ids: IdList = field(default_factory=IdList)  # record ids and their lines

    _SUMS = (
        "records",
        "counted",
        "nonzero",
        "total_comp",
        "total_prompt",
        "total_reasoning",
        "n_reasoning",
        "total_cached_prompt",
        "n_cached",
        "n_samples",
        "stream_chunks",
        "total_tokens",
        "total_loss_tokens",
        "prompt_lines",
    )

    def __add__(self, other: FileTally) -> FileTally:
        sums = {name: getattr(self, name) + getattr(other, name) for name in self._SUMS}
        return FileTally(
            **sums,
            formats=dict(Counter(self.formats) + Counter(other.formats)),
            finish_reasons=dict(Counter(self.finish_reasons) + Counter(other.finish_reasons)),
            failed_reasons=dict(Counter(self.failed_reasons) + Counter(other.failed_reasons)),
            empty_reasons=dict(Counter(self.empty_reasons) + Counter(other.empty_reasons)),
            failures=merge_failures(self.failures, other.failures),
            ids=self.ids + other.ids,
        )

    def shifted(self, lines: int) -> FileTally:
        """The same counts with every line number moved by `lines` (a piece read from the
        middle of a file numbers its lines from 0)."""
        if not lines:
            return self
        failures = {
            name: RuleTally(rule.count, [{**e, "line": e["line"] + lines} for e in rule.examples])
            for name, rule in self.failures.items()
        }
        return replace(self, failures=failures, ids=self.ids.shifted(lines))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for the state file."""
        data: dict[str, Any] = {name: getattr(self, name) for name in self._SUMS}
        data.update(
            formats=self.formats,
            finish_reasons=self.finish_reasons,
            failed_reasons=self.failed_reasons,
            empty_reasons=self.empty_reasons,
            failures={k: v.to_dict() for k, v in self.failures.items()},
            ids=self.ids.to_dict(),
        )
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileTally:
        """Inverse of `to_dict`."""
        return cls(
            **{name: int(data.get(name, 0)) for name in cls._SUMS},
            formats=dict(data.get("formats", {})),
            finish_reasons=dict(data.get("finish_reasons", {})),
            failed_reasons=dict(data.get("failed_reasons", {})),
            empty_reasons=dict(data.get("empty_reasons", {})),
            failures={k: RuleTally.from_dict(v) for k, v in data.get("failures", {}).items()},
            ids=IdList.from_dict(data["ids"]) if "ids" in data else IdList(),
        )
