"""Prompts joined to responses on a shared id: which prompts must run again.

A prompt's id is the value under `[datasets."X"] prompt_key` (a dotted path), else its
`custom_id`, `key` or `id` (a non-empty string or an integer); a response's is its record id
(`response_key`, else the format's id, `custom_id`, `id`, `meta_info.id`; an envelope's id
comes first). A prompt is *answered* when some response with its id did not fail, *failed*
when every response with its id failed, *missing* when none has its id; an id written on
several prompt lines is one prompt (its first line; the repeats are `duplicate_prompt_ids`).
Where the two sides share no key — prompts without ids (a line that is no JSON is named by
file and line), or no prompt id among the response ids — there is no join: `prompts` is
null, with the reason in one line, never a guessed number.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from genledger.ledger.idlist import IdList
from genledger.ledger.tally import FileTally
from genledger.parse.paths import Path, parse_path
from genledger.rules.result import RuleTally
from genledger.rules.rows import prompt_failures

CANDIDATES = ("custom_id", "key", "id")  # a prompt's id when no prompt_key is configured
_NONE = RuleTally()
MAX_IDS = 20  # ids listed in the stats JSON
SAMPLES = 3  # ids quoted in an unjoinable reason


def id_of(value: Any) -> str | None:
    """An id as the record ids are: a non-empty string, or an integer as text."""
    if isinstance(value, str) and value:
        return value
    if type(value) is int:
        return str(value)
    return None


@dataclass(frozen=True)
class PromptKey:
    """Where a prompt keeps its id: a configured path, else the first candidate key."""

    path: str | None = None

    @property
    def markers(self) -> tuple[bytes, ...]:
        """Bytes a line holding an id must contain (a quick test before decoding it)."""
        tops = (self._parsed().top,) if self.path else CANDIDATES
        return tuple(b'"' + top.encode() + b'"' for top in tops)

    def _parsed(self) -> Path:
        assert self.path is not None
        return parse_path(self.path)

    def of(self, record: Any) -> tuple[str, str] | None:
        """(the key's name, the id) of a decoded prompt; None when it has none."""
        if not isinstance(record, dict):
            return None
        if self.path is not None:
            found = id_of(self._parsed().first(record))
            return None if found is None else (self.path, found)
        for key in CANDIDATES:
            found = id_of(record.get(key))
            if found is not None:
                return key, found
        return None

    def of_line(self, content: bytes) -> tuple[str, str] | None:
        """The id of a prompt line; None when it has none or is no JSON object."""
        try:
            return self.of(orjson.loads(content))
        except orjson.JSONDecodeError:
            return None


MALFORMED = "malformed_prompts"  # the rule a prompt line that is no JSON fails


class PromptIds:
    """A prompts file's ids as they are read: line numbers, ids, lines with none, and the
    lines that are no JSON (`malformed_prompts`, named by file and line)."""

    def __init__(self, key: PromptKey, name: str = "") -> None:
        self.key = key
        self.name = name  # the file's path in its dataset folder
        self.ids = IdList()
        self.keys: Counter[str] = Counter()
        self.lines = 0
        self.without = 0
        self.malformed: list[dict[str, Any]] = []

    def add_line(self, line: int, content: bytes) -> None:
        """One non-blank line as the file holds it."""
        try:
            record = orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            row = {"file": self.name, "line": line, "prompt_id": None}
            self.malformed.append({**row, "parse_error": f"not JSON: {exc}"[:200]})
            self.add(line, None)
            return
        self.add(line, self.key.of(record))

    def add_lines(self, count: int) -> None:
        """`count` non-blank lines known to hold no id (none holds a key's name)."""
        self.lines += count
        self.without += count

    def add(self, line: int, found: tuple[str, str] | None) -> None:
        """One non-blank line and its id (None: it has none)."""
        self.lines += 1
        if found is None:
            self.without += 1
            return
        self.keys[found[0]] += 1
        self.ids.append(line, found[1])

    def tally(self) -> FileTally:
        """The prompts file's tally (`prompts` role of the books)."""
        out = FileTally.of(prompt_lines=self.lines, prompts_without_id=self.without)
        if self.keys:
            out.counters["prompt_keys"] = dict(self.keys)
        if len(self.ids):
            out.lists["prompt_ids"] = self.ids
        if self.malformed:
            out.failures = prompt_failures(self.malformed)
        return out


@dataclass
class Join:
    """The join of one dataset: per prompt, in prompts order, whether it needs running again."""

    block: dict[str, Any] | None
    reason: str | None
    rerun: list[tuple[int, int]]  # (prompts file index, line) of each prompt to run again


def join(
    prompts: Sequence[FileTally], responses: Iterable[FileTally], key: str | None = None
) -> Join:
    """The `prompts` block of a dataset (or None and why), from its prompts files' tallies
    (in file order) and its responses files' tallies."""
    lines = sum(t["prompt_lines"] for t in prompts)
    without = sum(t["prompts_without_id"] for t in prompts)
    wanted = key or "custom_id, key or id"
    if not prompts:
        return Join(None, "no prompts file", [])
    if not lines:
        return Join(None, "the prompts files hold no prompt yet", [])
    bad = [e for t in prompts for e in t.failures.get(MALFORMED, _NONE).examples[:1]]
    if bad:
        where = f"{bad[0]['file']}:{bad[0]['line']}"
        count = sum(t.failures[MALFORMED].count for t in prompts if MALFORMED in t.failures)
        return Join(None, f"{count:,} prompt line(s) are not JSON (first {where}: "
                          f"{bad[0]['reason']})", [])  # fmt: skip
    if without:
        return Join(None, f"{without:,} of {lines:,} prompt lines carry no {wanted}", [])
    seen, failed, records = Counter[bytes](), Counter[bytes](), 0
    for tally in responses:
        records += tally["records"]
        seen.update(tally.ids.keys())
        failed.update(tally.id_list("failed_ids").keys())
    if records and not seen:
        return Join(None, "no response record carries an id", [])
    ids = _first_of_each(
        (i, line, rid)
        for i, t in enumerate(prompts)
        for line, rid in t.id_list("prompt_ids").encoded()
    )
    if records and not any(rid in seen for _, _, rid in ids):
        return Join(None, _no_match(ids, seen, wanted), [])
    answered = failed_n = 0
    rerun: list[tuple[int, int]] = []
    listed: list[str] = []
    for index, line, rid in ids:
        total = seen.get(rid, 0)
        if total and total > failed.get(rid, 0):
            answered += 1
            continue
        failed_n += bool(total)
        rerun.append((index, line))
        if len(listed) < MAX_IDS:
            listed.append(rid.decode())
    block = {
        "n_prompts": len(ids),
        "answered": answered,
        "failed": failed_n,
        "missing": len(ids) - answered - failed_n,
        "ids_missing": listed,
        "key": key or _key_used(prompts),
    }
    return Join(block, None, rerun)


def _first_of_each(
    ids: Iterable[tuple[int, int, bytes]],
) -> list[tuple[int, int, bytes]]:
    """Each id once, at its first line (a repeated prompt is one prompt to answer)."""
    seen: set[bytes] = set()
    out = []
    for found in ids:
        if found[2] not in seen:
            seen.add(found[2])
            out.append(found)
    return out


def _key_used(prompts: Sequence[FileTally]) -> str:
    used: Counter[str] = Counter()
    for tally in prompts:
        used.update(tally.counter("prompt_keys"))
    return ", ".join(k for k, _ in used.most_common()) or "id"


def _no_match(ids: list[tuple[int, int, bytes]], seen: Counter[bytes], wanted: str) -> str:
    ours = ", ".join(repr(rid.decode()) for _, _, rid in ids[:SAMPLES])
    theirs = ", ".join(repr(rid.decode()) for rid in list(seen)[:SAMPLES])
    return (
        f"no prompt {wanted} matches a response id (prompts: {ours}; responses: {theirs}); "
        'set [datasets."NAME"] prompt_key / response_key'
    )
