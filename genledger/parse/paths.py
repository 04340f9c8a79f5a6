"""The path language of format declarations (docs/formats.md): parse once, evaluate on records.

A path is dot-separated keys (`usage.output_tokens`); `a[].b` visits `b` in every element of
the list `a`; `*` stands for any one key (`meta.*.output_tokens` visits `output_tokens` under
every key of `meta`; never the first key); `len(a)` counts a list's elements (a saved tensor's
`[[...]]` unwrapped). A field is one or more alternatives separated by `|` (the first present
wins), each terms added with `+` and taken away with ` - ` (spaces around it: keys may hold a
`-`). An absent added term is 0 and all of them absent is absent; an absent subtracted term is
0. A condition is a path (present with a non-null value), `!path` (absent or null),
`has(path)` (the key exists, even null), `path == value` or `path != value` (present and (not)
equal; the value read as JSON, else as a string; `=` alone also means equal), `path ^= "x"`
(a string starting with `x`). A text that does not parse raises `PathError` naming what is
wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from types import FunctionType
from typing import Any

import orjson

from genledger import codecache
from genledger.parse.tokenized import INT64_MAX, INT64_MIN, unwrap

KEY = re.compile(r"[A-Za-z0-9_$@-]+")
ANY = "*"  # any one key of an object
TERMS = re.compile(r"(\+|\s-\s)")  # `a + b - c`: a minus needs spaces (keys may hold `-`)
THOUGHT_KEY = "thought"  # `"thought": true`: a list element is reasoning (Gemini's parts)
MAX_DEPTH = 3  # how deep a visible answer is looked into (content parts, tool calls)


class PathError(ValueError):
    """A declaration path that cannot be read; the message says why."""


def _plain_getter(keys: tuple[str, ...]) -> Callable[[Any], Any]:
    """A function following `keys` through dicts (None when a step is absent, null or not a
    dict), compiled once: record facts read a dozen paths per record."""
    lines = ["def get(o):"]
    for i in range(len(keys)):
        lines += ["    if not isinstance(o, dict):", "        return None"]
        lines.append(f"    o = o.get({_stand_in(i)!r})")
    lines.append("    return o")
    return _generated("\n".join(lines), "get", keys)


def _stand_in(i: int) -> str:
    """What a generated function's source holds in place of its `i`-th key."""
    return f"\x00key{i}"


@lru_cache(maxsize=256)
def _template(source: str, name: str) -> FunctionType:
    scope: dict[str, Any] = {}
    exec(codecache.compiled(source, "<string>"), scope)  # stand-ins for keys, never a key
    made: FunctionType = scope[name]
    return made


def _generated(source: str, name: str, keys: tuple[str, ...]) -> Callable[..., Any]:
    """The function `name` that `source` defines, with `keys` for its stand-ins: Python's
    compiler costs ~80 µs a function and start-up reads ~300 paths, so each shape of path is
    compiled once and a path gets a copy of its code with its own keys as constants."""
    template = _template(source, name)
    swap = {_stand_in(i): key for i, key in enumerate(keys)}
    consts = tuple(swap.get(c, c) if type(c) is str else c for c in template.__code__.co_consts)
    return FunctionType(template.__code__.replace(co_consts=consts), template.__globals__, name)


def _spread_walker(
    steps: tuple[tuple[str, bool], ...], skip_thoughts: bool = False
) -> Callable[[Any], list[Any]]:
    """`Path.values` of a path with a list or `*`, compiled once: the nested loops visit the
    values depth first, which lists them in the general walk's order."""
    lines = ["def walk(o):", "    out = []", "    n0 = o"]
    pad = "    "
    for depth, (key, each) in enumerate(steps):
        node, nxt = f"n{depth}", f"n{depth + 1}"
        lines.append(f"{pad}if isinstance({node}, dict):")
        pad += "    "
        if key == ANY:  # every value of an object
            lines.append(f"{pad}for {nxt} in {node}.values():")
        else:
            lines.append(f"{pad}{nxt} = {node}.get({_stand_in(depth)!r})")
            if each:
                lines.append(f"{pad}if isinstance({nxt}, list):")
                pad += "    "
                lines.append(f"{pad}for {nxt} in {nxt}:")
                if skip_thoughts:  # a list's elements marked as reasoning are left out
                    test = f"isinstance({nxt}, dict) and {nxt}.get({THOUGHT_KEY!r}) is True"
                    lines.append(f"{pad}    if {test}:")
                    lines.append(f"{pad}        continue")
        if key == ANY or each:
            pad += "    "
        lines.append(f"{pad}if {nxt} is not None:")
        pad += "    "
    lines += [f"{pad}out.append(n{len(steps)})", "    return out"]
    return _generated("\n".join(lines), "walk", tuple(key for key, _ in steps))


@dataclass(frozen=True, slots=True)
class Path:
    """A parsed path: keys, whether each is a list to visit (`[]`), and `len(...)`."""

    text: str
    steps: tuple[tuple[str, bool], ...]
    length: bool = False
    # no list to visit: the compiled walk (a function of the text: not compared, not pickled)
    get: Callable[[Any], Any] | None = field(default=None, compare=False, repr=False)
    # with a list: the compiled walk of `values` (thoughts not skipped); not compared either
    walk: Callable[[Any], list[Any]] | None = field(default=None, compare=False, repr=False)
    # with a list: the compiled walk of `values` with thoughts skipped (the answer paths')
    thoughtless: Callable[[Any], list[Any]] | None = field(default=None, compare=False, repr=False)

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
        """Whether the path may reach several values (a list `[]`, or `*`)."""
        return any(each or key == ANY for key, each in self.steps)

    def values(self, obj: Any, skip_thoughts: bool = False) -> list[Any]:
        """Every non-null value the path reaches; `skip_thoughts` leaves out list elements
        marked `"thought": true` (Gemini's reasoning parts are no answer)."""
        if self.get is not None:  # no list: the common case, without the general walk
            value = self.get(obj)
            return [] if value is None else [value]
        if skip_thoughts:
            if self.thoughtless is not None:
                return self.thoughtless(obj)
        elif self.walk is not None:
            return self.walk(obj)
        level = [obj]
        for key, each in self.steps:
            nxt: list[Any] = []
            for node in level:
                if key == ANY:  # every value of an object
                    if isinstance(node, dict):
                        nxt.extend(v for v in node.values() if v is not None)
                    continue
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
                        and not (
                            skip_thoughts and isinstance(v, dict) and v.get(THOUGHT_KEY) is True
                        )
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
        if key == ANY:
            return any(isinstance(o, dict) and o for o in owners)
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


@lru_cache(maxsize=4096)  # a path is compiled once, however often its text is read
def parse_path(text: str) -> Path:
    """A path from its text; raises `PathError`."""
    body, length = text.strip(), False
    if body.startswith("len(") and body.endswith(")"):
        body, length = body[4:-1].strip(), True
    if not body:
        raise PathError(f"empty path {text!r}")
    steps: list[tuple[str, bool]] = []
    for part in body.split("."):
        each = part.endswith("[]")
        key = part[:-2] if each else part
        if part == ANY and steps:
            steps.append((ANY, False))
            continue
        if not KEY.fullmatch(key):
            where = "cannot come first" if part == ANY else "is not a name (or name[], *)"
            raise PathError(f"bad path {text!r}: key {part!r} {where}")
        steps.append((key, each))
    spread = any(each or key == ANY for key, each in steps)
    if spread:
        walks = (_spread_walker(tuple(steps)), _spread_walker(tuple(steps), skip_thoughts=True))
        return Path(text.strip(), tuple(steps), length, None, *walks)
    return Path(text.strip(), tuple(steps), length, _plain_getter(tuple(key for key, _ in steps)))


@dataclass(frozen=True, slots=True)
class Field:
    """Alternatives (first present wins) of terms added (and taken away) together."""

    text: str
    alternatives: tuple[tuple[Path, ...], ...]
    # per alternative, per term: taken away (` - `) rather than added
    minus: tuple[tuple[bool, ...], ...] = ()
    # every path without a list: their compiled walks, per alternative (read once per event
    # of a stream, so the general walk is skipped; a function of the text: not compared)
    getters: tuple[tuple[Callable[[Any], Any], ...], ...] | None = field(
        default=None, compare=False, repr=False
    )

    def __reduce__(self) -> tuple[Any, ...]:
        return parse_field, (self.text,)

    def raw(self, obj: Any, floats: bool = False) -> Any:
        """The field's count (see `Path.raw`), or None when every alternative is absent."""
        for index, terms in enumerate(self.alternatives):
            signs = self.minus[index] if self.minus else ()
            if not any(signs):  # only added terms: the common case
                found = [r for r in (p.raw(obj, floats) for p in terms) if r is not None]
                if not found:
                    continue
                return found[0] if len(found) == 1 else total(found, floats)
            value = _difference(terms, signs, obj, floats)
            if value is not None:
                return value
        return None

    def all_values(self, obj: Any) -> list[Any]:
        """Every value of the first alternative that reaches any (non-count fields)."""
        if self.getters is not None:  # each path reaches one value or none
            for getters in self.getters:
                reached = [v for v in (get(obj) for get in getters) if v is not None]
                if reached:
                    return reached
            return []
        for terms in self.alternatives:
            found = [v for p in terms for v in p.values(obj)]
            if found:
                return found
        return []

    def first(self, obj: Any) -> Any:
        """The first value any alternative reaches (non-count fields)."""
        if self.getters is not None:  # the first path, in order, that reaches a value
            for getters in self.getters:
                for get in getters:
                    value = get(obj)
                    if value is not None:
                        return value
            return None
        found = self.all_values(obj)
        return found[0] if found else None

    @property
    def paths(self) -> tuple[Path, ...]:
        """Every path the field reads."""
        return tuple(p for terms in self.alternatives for p in terms)


def _difference(terms: tuple[Path, ...], signs: tuple[bool, ...], obj: Any, floats: bool) -> Any:
    """`a + b - c`: None when no added term is present; the first value that is no count,
    if any; else the sum of the added terms less the others (absent ones are 0)."""
    added = [
        r for r, m in ((p.raw(obj, floats), m) for p, m in zip(terms, signs, strict=True)) if not m
    ]
    added = [r for r in added if r is not None]
    if not added:
        return None
    value = total(added, floats)
    if not valid_count(value):
        return value
    for path, minus in zip(terms, signs, strict=True):
        if minus:
            taken = path.raw(obj, floats)
            if taken is None:
                continue
            taken = total([taken], floats)
            if not valid_count(taken):
                return taken
            value -= taken
    return value


def parse_field(text: str, sums: bool = True) -> Field:
    """A field from its text (`a.b + c - d | e`); raises `PathError`."""
    if not isinstance(text, str):
        raise PathError(f"a path must be a string, not {text!r}")
    alternatives, minus = [], []
    for alternative in text.split("|"):
        parts = TERMS.split(alternative)
        if len(parts) > 1 and not sums:
            raise PathError(f"bad path {text!r}: '+' and '-' only add up counts")
        alternatives.append(tuple(parse_path(t) for t in parts[::2]))
        minus.append((False, *(sign.strip() == "-" for sign in parts[1::2])))
    return Field(text, tuple(alternatives), tuple(minus), _getters(alternatives))


def _getters(
    alternatives: list[tuple[Path, ...]],
) -> tuple[tuple[Callable[[Any], Any], ...], ...] | None:
    """Each path's compiled walk, per alternative; None when any path visits a list."""
    walks = [tuple(p.get for p in terms if p.get is not None) for terms in alternatives]
    if any(len(w) != len(terms) for w, terms in zip(walks, alternatives, strict=True)):
        return None
    return tuple(walks)


@dataclass(frozen=True, slots=True)
class Condition:
    """One test on a record: present, absent, has, ==, !=, ^= (starts with)."""

    text: str
    path: Path
    op: str
    value: Any = None
    # a path without a list: the test as one closure (stream events are tested against
    # every family's conditions; a function of the text: not compared)
    test: Callable[[Any], bool] | None = field(default=None, compare=False, repr=False)

    def __reduce__(self) -> tuple[Any, ...]:
        return parse_condition, (self.text,)

    def holds(self, obj: Any) -> bool:
        """Whether the record satisfies the condition."""
        if self.test is not None:
            return self.test(obj)
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
            if self.op == "prefix":
                return isinstance(value, str) and value.startswith(self.value)
            return _same(value, self.value) is (self.op == "eq")
        found = self.path.values(obj)
        if self.op == "present":
            return bool(found)
        if self.op == "absent":
            return not found
        if self.op == "prefix":
            return any(isinstance(v, str) and v.startswith(self.value) for v in found)
        same = any(_same(v, self.value) for v in found)
        return same if self.op == "eq" else bool(found) and not same


def _test(get: Callable[[Any], Any] | None, op: str, want: Any) -> Callable[[Any], bool] | None:
    """`Condition.holds` of a path without a list, as one closure (None for the others)."""
    if get is None or op == "has":
        return None
    if op == "present":
        return lambda o: get(o) is not None
    if op == "absent":
        return lambda o: get(o) is None
    if op == "prefix":
        return lambda o: isinstance(v := get(o), str) and v.startswith(want)
    if type(want) is str:  # only an equal str equals a str (`_same`)
        if op == "eq":
            return lambda o: type(v := get(o)) is str and v == want
        return lambda o: (v := get(o)) is not None and not (type(v) is str and v == want)
    eq = op == "eq"
    return lambda o: (v := get(o)) is not None and _same(v, want) is eq


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b) if type(a) in (int, float, str) else False


def _literal(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def all_hold(conditions: Iterable[Condition], obj: Any) -> bool:
    """Whether every condition holds of `obj` (a plain loop: it runs for every record, and
    `all(...)` over a generator costs more than the tests)."""
    for condition in conditions:
        if not condition.holds(obj):
            break
    else:
        return True
    return False


def parse_condition(text: str) -> Condition:
    """A condition from its text; raises `PathError`."""
    found = _parse_condition(text)
    test = _test(found.path.get, found.op, found.value)
    return Condition(found.text, found.path, found.op, found.value, test)


def _parse_condition(text: str) -> Condition:
    """The condition `text` states, its test not yet compiled."""
    if not isinstance(text, str):
        raise PathError(f"a condition must be a string, not {text!r}")
    body = text.strip()
    if body.startswith("!"):
        return Condition(text, parse_path(body[1:]), "absent")
    if body.startswith("has(") and body.endswith(")"):
        return Condition(text, parse_path(body[4:-1]), "has")
    found = OPERATOR.search(body)  # the leftmost operator: a value may hold one too
    if found is None:
        return Condition(text, parse_path(body), "present")
    op = OPERATORS[found.group()]
    value = _literal(body[found.end() :].strip())
    if op == "prefix" and not isinstance(value, str):
        raise PathError(f"bad condition {text!r}: `^=` takes a string")
    return Condition(text, parse_path(body[: found.start()]), op, value)


OPERATOR = re.compile(r"!=|\^=|==|=")
OPERATORS = {"!=": "ne", "^=": "prefix", "==": "eq", "=": "eq"}


def in_int64(value: Any) -> bool:
    """An int the table's Int64 columns can hold."""
    return type(value) is int and INT64_MIN <= value <= INT64_MAX
