"""The path language of format declarations (docs/formats.md): parse once, evaluate on records.

A path is dot-separated keys (`usage.output_tokens`); `a[].b` visits `b` in every element of
the list `a`; `len(a)` counts a list's elements (a saved tensor's `[[...]]` unwrapped). A field
is one or more alternatives separated by `|` (the first present wins), each a sum of terms
separated by `+` (an absent term is 0, all absent is absent). A condition is a path (present
with a non-null value), `!path` (absent or null), `has(path)` (the key exists, even null),
`path=value` or `path!=value` (present and (not) equal; the value read as JSON, else a string).
A text that does not parse raises `PathError` naming what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from genledger.parse.tokenized import INT64_MAX, INT64_MIN, unwrap

KEY = re.compile(r"[A-Za-z0-9_$@-]+")
MAX_DEPTH = 3  # how deep a visible answer is looked into (content parts, tool calls)


class PathError(ValueError):
    """A declaration path that cannot be read; the message says why."""


def _plain_getter(keys: tuple[str, ...]) -> Callable[[Any], Any]:
    """A function following `keys` through dicts (None when a step is absent, null or not a
    dict), compiled once: record facts read a dozen paths per record."""
    lines = ["def get(o):"]
    for key in keys:
        lines += ["    if not isinstance(o, dict):", "        return None"]
        lines.append(f"    o = o.get({key!r})")
    lines.append("    return o")
    scope: dict[str, Any] = {}
    exec("\n".join(lines), scope)  # keys are checked names (KEY), quoted by repr
    getter: Callable[[Any], Any] = scope["get"]
    return getter


@dataclass(frozen=True, slots=True)
class Path:
    """A parsed path: keys, whether each is a list to visit (`[]`), and `len(...)`."""

    text: str
    steps: tuple[tuple[str, bool], ...]
    length: bool = False
    # no list to visit: the compiled walk (a function of the text: not compared, not pickled)
    get: Callable[[Any], Any] | None = field(default=None, compare=False, repr=False)

    def __reduce__(self) -> tuple[Any, ...]:
        return parse_path, (self.text,)

    @property
    def simple(self) -> bool:
        """No list to visit."""
        return self.get is not None

    @property
    def top(self) -> str:
        """The record's top-level key this path starts at."""
        return self.steps[0][0]

    @property
    def spreads(self) -> bool:
        """Whether the path visits a list (`[]`)."""
        return any(each for _, each in self.steps)

    def values(self, obj: Any, skip_thoughts: bool = False) -> list[Any]:
        """Every non-null value the path reaches; `skip_thoughts` leaves out list elements
        marked `"thought": true` (Gemini's reasoning parts are no answer)."""
        if self.get is not None:  # no list: the common case, without the general walk
            value = self.get(obj)
            return [] if value is None else [value]
        level = [obj]
        for key, each in self.steps:
            nxt = []
            for node in level:
                value = node.get(key) if isinstance(node, dict) else None
                if value is None:
                    continue
                if not each:
                    nxt.append(value)
                elif isinstance(value, list):
                    nxt.extend(
                        v
                        for v in value
                        if v is not None
                        and not (skip_thoughts and isinstance(v, dict) and v.get("thought") is True)
                    )
            level = nxt
            if not level:
                return []
        return level

    def first(self, obj: Any) -> Any:
        """The first value reached, or None."""
        if self.get is not None:
            return self.get(obj)
        found = self.values(obj)
        return found[0] if found else None

    def exists(self, obj: Any) -> bool:
        """Whether the last key exists (even with null) somewhere the path reaches."""
        key = self.steps[-1][0]
        owners = [obj] if len(self.steps) == 1 else _parent(self).values(obj)
        return any(isinstance(o, dict) and key in o for o in owners)

    def raw(self, obj: Any, floats: bool) -> Any:
        """The count this path gives: an int, or the first value that is no count (for the
        invalid-count examples); None when absent."""
        if self.get is not None:
            value = self.get(obj)
            if value is None:
                return None
            return as_count(_length(value) if self.length else value, floats)
        found = self.values(obj)
        if not found:
            return None
        if self.length:
            found = [_length(v) for v in found]
        if len(found) == 1 and not self.spreads:
            return as_count(found[0], floats)
        return total(found, floats)


def _parent(path: Path) -> Path:
    """The path without its last key."""
    keys = ".".join(k + ("[]" if each else "") for k, each in path.steps[:-1])
    return parse_path(keys)


def _length(value: Any) -> Any:
    """len() of a list (one `[[...]]` level unwrapped); anything else stays (it is invalid)."""
    ids = unwrap(value)
    return len(ids) if ids is not None else value


def as_count(value: Any, floats: bool) -> Any:
    """An integral float as an int where the format allows floats; other values unchanged."""
    if floats and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def valid_count(value: Any) -> bool:
    """A JSON integer >= 0 in int64 range (bools excluded)."""
    return type(value) is int and 0 <= value <= INT64_MAX


def total(values: list[Any], floats: bool) -> Any:
    """The sum of counts, or the first value that is not a count (>= 0)."""
    out = 0
    for value in values:
        value = as_count(value, floats)
        if not valid_count(value):
            return value
        out += value
    return out


def parse_path(text: str) -> Path:
    """A path from its text; raises `PathError`."""
    body, length = text.strip(), False
    if body.startswith("len(") and body.endswith(")"):
        body, length = body[4:-1].strip(), True
    if not body:
        raise PathError(f"empty path {text!r}")
    steps = []
    for part in body.split("."):
        each = part.endswith("[]")
        key = part[:-2] if each else part
        if not KEY.fullmatch(key):
            raise PathError(f"bad path {text!r}: key {part!r} is not a name (or name[])")
        steps.append((key, each))
    spread = any(each for _, each in steps)
    getter = None if spread else _plain_getter(tuple(key for key, _ in steps))
    return Path(text.strip(), tuple(steps), length, getter)


@dataclass(frozen=True, slots=True)
class Field:
    """Alternatives (first present wins) of sums of paths."""

    text: str
    alternatives: tuple[tuple[Path, ...], ...]

    def raw(self, obj: Any, floats: bool = False) -> Any:
        """The field's count (see `Path.raw`), or None when every alternative is absent."""
        for terms in self.alternatives:
            found = [r for r in (p.raw(obj, floats) for p in terms) if r is not None]
            if not found:
                continue
            return found[0] if len(found) == 1 else total(found, floats)
        return None

    def all_values(self, obj: Any) -> list[Any]:
        """Every value of the first alternative that reaches any (non-count fields)."""
        for terms in self.alternatives:
            found = [v for p in terms for v in p.values(obj)]
            if found:
                return found
        return []

    def first(self, obj: Any) -> Any:
        """The first value any alternative reaches (non-count fields)."""
        found = self.all_values(obj)
        return found[0] if found else None

    @property
    def paths(self) -> tuple[Path, ...]:
        """Every path the field reads."""
        return tuple(p for terms in self.alternatives for p in terms)


def parse_field(text: str, sums: bool = True) -> Field:
    """A field from its text (`a.b + c | d`); raises `PathError`."""
    if not isinstance(text, str):
        raise PathError(f"a path must be a string, not {text!r}")
    alternatives = []
    for alternative in text.split("|"):
        terms = alternative.split("+")
        if len(terms) > 1 and not sums:
            raise PathError(f"bad path {text!r}: '+' only sums counts")
        alternatives.append(tuple(parse_path(t) for t in terms))
    return Field(text, tuple(alternatives))


@dataclass(frozen=True, slots=True)
class Condition:
    """One test on a record: present, absent, has, =, !=."""

    text: str
    path: Path
    op: str
    value: Any = None

    def holds(self, obj: Any) -> bool:
        """Whether the record satisfies the condition."""
        if self.op == "has":
            return self.path.exists(obj)
        get = self.path.get
        if get is not None:  # no list to visit: one value or none
            value = get(obj)
            if self.op == "present":
                return value is not None
            if self.op == "absent":
                return value is None
            if value is None:
                return False
            return _same(value, self.value) is (self.op == "eq")
        found = self.path.values(obj)
        if self.op == "present":
            return bool(found)
        if self.op == "absent":
            return not found
        same = any(_same(v, self.value) for v in found)
        return same if self.op == "eq" else bool(found) and not same


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b) if type(a) in (int, float, str) else False


def _literal(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def parse_condition(text: str) -> Condition:
    """A condition from its text; raises `PathError`."""
    if not isinstance(text, str):
        raise PathError(f"a condition must be a string, not {text!r}")
    body = text.strip()
    if body.startswith("!"):
        return Condition(text, parse_path(body[1:]), "absent")
    if body.startswith("has(") and body.endswith(")"):
        return Condition(text, parse_path(body[4:-1]), "has")
    if "!=" in body:
        left, right = body.split("!=", 1)
        return Condition(text, parse_path(left), "ne", _literal(right.strip()))
    if "=" in body:
        left, right = body.split("=", 1)
        return Condition(text, parse_path(left), "eq", _literal(right.strip()))
    return Condition(text, parse_path(body), "present")


def in_int64(value: Any) -> bool:
    """An int the table's Int64 columns can hold."""
    return type(value) is int and INT64_MIN <= value <= INT64_MAX
