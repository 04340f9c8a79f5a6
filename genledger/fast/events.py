"""Stream events read once, each equal to `genledger.parse.streams`' definitions.

A stream file is mostly events (134k of the real corpus's 181k lines), and each used to be
decoded twice (its facts, then again for the stream state), its family looked up twice and its
start/end/trailing tests run up to three times. Here an event line is decoded once
(`decoded`), and `fast_event` makes its fold and its four tests in one call: one function
generated per family from its `Family` (as `parse.paths` compiles a path), reading each field's
paths in the definition's order (plain ones as `dict.get` chains, one through a list of one
object from that object), and walking no path below a top-level key the event lacks
(nothing is reached below an absent key). An event with choices of other indexes (n > 1) is
folded by the definition itself. A stream's lines keep a few key tuples, so `event_kind` finds
an event's family and reader by its key tuple: a reader made for that key set and the text
that told the family (`type=content_block_delta`) leaves out the paths below keys the event
lacks and the tests those settle. A request's final object is read by the typed shapes when
one holds it (`final_facts`), for a read by `FinalFacts` (the declarations compiled once after
the typed shapes missed its key set).

Tested equal to `parse.streams.read_event` (the fold, `is_start`, `is_end`, `is_trailing`,
`is_opener`), `event_family` and `is_neutral` on every real stream line and on generated
events (tests/genledger/fast/test_events.py), `final_facts` and `FinalFacts` to
`response_facts` (tests/genledger/fast/test_final_facts.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from genledger.config import Switches
from genledger.fast.lines import fast_decoder
from genledger.fast.rawtext import NOTHING_PLAIN
from genledger.fast.records import RecordReader
from genledger.parse.declarations import FormatSet
from genledger.parse.formats import response_facts
from genledger.parse.paths import ANY, Condition, Field, Path
from genledger.parse.schema import Facts
from genledger.parse.streams import (
    BY_NAME,
    ERROR_KEYS,
    EXACT,
    REST,
    REST_CONDITIONS,
    TOLD_BY,
    Event,
    Family,
    _parts,
    _tool_text,
    event_family,
    fold,
)

Test = Callable[[Any], bool]  # a condition's test
Alternatives = tuple[tuple[Condition, ...], ...]
Reader = Callable[[dict[str, Any]], Event]

# How a fold keeps what a field reaches (read into `v`, its first value, or `vs`, all the values
# of its first path reaching any), as code; `{k}`: the fold's key.
KEEP = {
    "dict": "if isinstance(v, dict):\n    acc[{k!r}] = v",
    "value": "if v is not None and v != '':\n    acc[{k!r}] = v",
    # one str (the usual delta) is its own join, without a list made
    "text": "if len(vs) == 1 and vs[0].__class__ is str:\n    acc[{k!r}] = vs[0]\n"
    "elif vs:\n    found = [x for x in vs if isinstance(x, str)]\n"
    "    if found:\n        acc[{k!r}] = ''.join(found)",
    "parts": "if vs:\n    acc[{k!r}] = _parts([], list(vs))",
    "tools": "if vs:\n    calls = ''.join(_tool_text(x) for x in vs if x is not None)\n"
    "    if calls:\n        acc[{k!r}] = calls",
}
# The keys of a fold in `parse.streams._fold`'s order: the family's field, how it is read.
STEPS = (
    ("u", "usage", "first", "dict"),
    ("t", "text", "all", "text"),
    ("r", "reasoning", "all", "text"),
    ("p", "parts", "all", "parts"),
    ("f", "finish", "first", "value"),
    ("m", "model", "first", "value"),
    ("i", "key", "first", "value"),
    ("tl", "tools", "all", "tools"),
    ("b", "base", "first", "dict"),
)


def _indent(code: str, pad: str = "    ") -> list[str]:
    return [pad + line for line in code.splitlines()]


Hoists = dict[tuple[str, str], str]  # (node, key): the variable holding the dict it reaches


def _chain(node: str, keys: list[str], hoists: Hoists | None = None) -> list[str]:
    """Code setting `v` to what `keys` reach from `node` (a dict): a compiled plain walk.
    With `hoists`, the object the first key reaches is read once a reader (`_hoisted`)."""
    if not keys:
        return [f"v = {node}"]
    if hoists is not None and len(keys) > 1:
        name = hoists.setdefault((node, keys[0]), f"h{len(hoists)}")
        return [f"v = {name}.get({keys[1]!r}) if {name} is not None else None"] + [
            f"v = v.get({key!r}) if isinstance(v, dict) else None" for key in keys[2:]
        ]
    return [f"v = {node}.get({keys[0]!r})"] + [
        f"v = v.get({key!r}) if isinstance(v, dict) else None" for key in keys[1:]
    ]


def _hoisted(hoists: Hoists) -> list[str]:
    """Code setting each hoisted variable: the dict its key reaches from its node, else None
    (a node `one_*` may be None itself)."""
    lines = []
    for (node, key), name in hoists.items():
        read = f"{node}.get({key!r})"
        if node != "obj":
            read += f" if {node} is not None else None"
        lines += [f"{name} = {read}", f"{name} = {name} if isinstance({name}, dict) else None"]
    return lines


def one_list(path: Path) -> str | None:
    """The top-level key of a path that visits only that key's list (`choices[].delta.content`),
    None for another path: such a path reads the list's one object, when it has one, plainly."""
    (top, each), rest = path.steps[0], path.steps[1:]
    plain = all(not each and key != ANY for key, each in rest)
    return top if each and plain else None


def _path(path: Path, how: str, scope: dict[str, Any], hoists: Hoists | None = None) -> list[str]:
    """Code reading one path into `v` (how: "first") or `vs` ("all")."""
    keep = ["if v is not None:", "    vs = (v,)"] if how == "all" else []
    if path.get is not None:  # no list: one value or None
        return _chain("obj", [key for key, _ in path.steps], hoists) + keep
    name = f"w{len(scope)}"
    scope[name] = path.walk
    walk = [f"    v = {name}(obj)", "    v = v[0] if v else None"]
    if how == "all":
        walk = [f"    vs = {name}(obj)"]
    top = one_list(path)
    if top is None:
        return [f"if {path.top!r} in obj:", *walk]
    chain = _chain(f"one_{top}", [key for key, _ in path.steps[1:]], hoists)
    return [f"if one_{top} is not None:", *_indent("\n".join(chain + keep)),
            f"elif {top!r} in obj:", *walk]  # fmt: skip


def _read(
    field: Field, how: str, scope: dict[str, Any], keys: Keys = None, hoists: Hoists | None = None
) -> list[str]:
    """Code setting `v` (`Field.first`) or `vs` (`Field.all_values`) of `field`, each path by
    its compiled walk (named in `scope`) or as plain code, none walked below an absent
    top-level key; `keys`: the event's top-level keys, when known (a path below another
    reaches nothing: it is left out)."""
    assert all(len(terms) == 1 for terms in field.alternatives), field.text  # no sums
    lines = ["v = None" if how == "first" else "vs = ()"]
    for index, path in enumerate(p for p in field.paths if _reachable(p, keys)):
        code = _path(path, how, scope, hoists)
        if index:  # a later alternative: read when none before reached anything
            code = ["if v is None:" if how == "first" else "if not vs:", *_indent("\n".join(code))]
        lines += code
    return lines


Keys = frozenset[str] | None  # an event's top-level keys, when a reader is made for them
Told = tuple[str, str] | None  # the (key, text) that told the event's family, when known


def _reachable(path: Path, keys: Keys) -> bool:
    """Whether `path` may reach a value of an event of top-level `keys` (None: any)."""
    return keys is None or path.top == ANY or path.top in keys


def _known(condition: Condition, keys: Keys, told: Told) -> bool | None:
    """`Condition.holds` of an event of top-level `keys` whose key `told[0]` holds the text
    `told[1]`, when those settle it (its path starts at a key the event lacks, or at the told
    key, whose whole value is known); None when the event itself must be read."""
    top = condition.path.top
    if top == ANY:
        return None
    if told is not None and top == told[0]:
        return condition.holds({top: told[1]})
    if keys is not None and top not in keys:
        return condition.holds({})  # nothing is reached below an absent key
    if keys is not None and condition.op == "has" and len(condition.path.steps) == 1:
        return True  # `has(key)` of a key the event has (even null)
    return None


def _condition(condition: Condition) -> Test:
    """`Condition.holds`, a path with a list tested present or absent by its walk (nothing is
    reached below an absent top-level key)."""
    walk, top = condition.path.walk, condition.path.top
    if condition.test is not None or walk is None:
        return condition.test or condition.holds
    if condition.op == "present":
        return lambda obj: top in obj and bool(walk(obj))
    if condition.op == "absent":
        return lambda obj: top not in obj or not walk(obj)
    return condition.holds


def _expr(condition: Condition, scope: dict[str, Any]) -> str:
    """`Condition.holds` as an expression of `obj`: a plain path's test spelled out as
    `parse.paths` compiles it, the others called (each named in `scope`)."""
    path, op, want = condition.path, condition.op, condition.value
    if path.get is None or op == "has" or (op in ("eq", "ne") and type(want) is not str):
        name = f"c{len(scope)}"
        scope[name] = _condition(condition)
        return f"{name}(obj)"
    keys = [key for key, _ in path.steps]
    value = f"obj.get({keys[0]!r})"
    if len(keys) > 1:
        value = f"g{len(scope)}(obj)"
        scope[value[:-5]] = path.get
    if op in ("present", "absent"):
        return f"{value} is {'not ' if op == 'present' else ''}None"
    if op == "prefix":
        return f"(isinstance(t := {value}, str) and t.startswith({want!r}))"
    if op == "eq":  # only an equal str equals a str
        return f"(type(t := {value}) is str and t == {want!r})"
    return f"((t := {value}) is not None and not (type(t) is str and t == {want!r}))"


def _holds(
    alternatives: tuple[tuple[Condition, ...], ...],
    empty: bool,
    scope: dict[str, Any],
    keys: Keys = None,
    told: Told = None,
) -> str:
    """`parse.streams._holds` of `alternatives` as an expression (`empty`: its value for
    none), the conditions `keys` and `told` settle (`_known`) folded into constants."""
    if not alternatives:
        return repr(empty)
    terms = []
    for alt in alternatives:
        known = [_known(c, keys, told) for c in alt]
        if False in known:
            continue  # this alternative cannot hold
        rest = [_expr(c, scope) for c, k in zip(alt, known, strict=True) if k is None]
        if not rest:
            return "True"  # this one holds whatever else the event holds
        terms.append(f"({' and '.join(rest)})")
    return " or ".join(terms) or "False"


def _other_index(obj: dict[str, Any]) -> bool:
    """The event holds a choice of an index other than 0 (`parse.streams._other_choices`)."""
    choices = obj.get("choices")
    if choices.__class__ is not list:
        return False
    for choice in choices:
        index = choice.get("index", 0) if isinstance(choice, dict) else 0
        if type(index) is int and index != 0:
            return True
    return False


def _fields(family: Family) -> list[Field]:
    """The fields a fold of `family` reads."""
    fields = (getattr(family, name) for _, name, _, _ in STEPS)
    return [f for f in fields if f is not None]


def _error_test(keys: Keys, told: Told) -> str:
    """`parse.streams._fold`'s test for an error event, as an expression; with the event's
    top-level keys known, only its `type` is left to read."""
    if keys is None:
        return "'error' in obj or obj.get('type') == 'error' or not ERRORS.isdisjoint(obj)"
    if "error" in keys or not keys.isdisjoint(ERROR_KEYS):
        return "True"
    if told is not None and told[0] == "type":
        return repr(told[1] == "error")
    return "obj.get('type') == 'error'" if "type" in keys else "False"


def reader(family: Family, keys: Keys = None, told: Told = None) -> Reader:
    """`parse.streams.read_event` of `family`'s events as one generated function; `keys`:
    made for events of exactly these top-level keys, `told`: whose key `told[0]` holds the
    text `told[1]` (what their key set and that text settle is folded away)."""
    scope: dict[str, Any] = {
        "Event": Event, "fold": fold, "family": family, "_parts": _parts,
        "_tool_text": _tool_text, "_other_index": _other_index, "ERRORS": frozenset(ERROR_KEYS),
        "new": tuple.__new__,
    }  # fmt: skip
    tests = ", ".join(
        _holds(alternatives, empty, scope, keys, told)
        for alternatives, empty in (
            (family.start, False), (family.end, False), (family.trailing, False),
            (family.opener, True),
        )
    )  # fmt: skip
    lines = ["def read(obj):"]
    if family.indexed and (keys is None or "choices" in keys):  # n > 1 (rare): the definition
        lines += [  # folds the event
            "    if _other_index(obj):",
            f"        return new(Event, (fold(family, obj), {tests}))",
        ]
    tops = {one_list(p) for f in _fields(family) for p in f.paths if _reachable(p, keys)}
    for top in sorted(t for t in tops if t is not None):
        lines += [f"    c = obj.get({top!r})",  # its list's one object, if it has one
                  f"    one_{top} = c[0] if c.__class__ is list and len(c) == 1 "
                  "and isinstance(c[0], dict) else None"]  # fmt: skip
    lines.append("    acc = {'n': 1}")
    error = _error_test(keys, told)
    if error != "False":
        lines += [f"    if {error}:", "        acc['e'] = obj"]
    hoists: Hoists = {}
    body = []
    for key, name, how, keep in STEPS:
        field = getattr(family, name)
        if name == "base" and family.whole:
            body.append("    acc['b'] = obj")  # the event itself is the base
        elif field is not None and any(_reachable(p, keys) for p in field.paths):
            code = [*_read(field, how, scope, keys, hoists), KEEP[keep].format(k=key)]
            body += _indent("\n".join(code))
    lines += _indent("\n".join(_hoisted(hoists))) + body
    lines.append(f"    return new(Event, (acc, {tests}))")  # a tuple's `__new__`: no frame
    exec("\n".join(lines), scope)  # keys are checked names (`parse.paths.KEY`), quoted by repr
    read: Reader = scope["read"]
    return read


class _Readers(dict[str, Reader]):
    """Each family's reader, generated when a read first meets one of its events: a refresh
    that meets no stream compiles none (they cost ~1 ms each at start-up)."""

    def __missing__(self, name: str) -> Reader:
        made = self[name] = reader(BY_NAME[name])
        return made


READERS = _Readers()

KINDS_KEPT = 256  # key sets given their own readers; later ones take the family's reader
KEYS_KEPT = 64  # an object of more top-level keys takes the family's reader (no event has)


TEXTS_KEPT = 64  # telling texts remembered per key set (more: looked up, read unspecialised)
Found = tuple[Family, Reader] | None  # an event's family and its reader; None: no event


class _Kind:
    """The events of one top-level key tuple: their family's lookup cut to the keys they
    have (`parse.streams.event_family`), and a reader made for that key set and the text
    that told the family (`reader`), made at the first such event. What a telling text
    gives is remembered (`type=response.output_text.delta`: the Responses family, found by
    its prefix test, and its reader made for that text)."""

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = frozenset(keys)
        self.told = tuple(key for key in TOLD_BY if key in self.keys)  # in the lookup's order
        # per telling key, per text: what the lookup gives when the key holds that text
        self.texts: dict[str, dict[str, Found]] = {k: {} for k in self.told}
        # the rest, in their order, each alternative without the conditions the key set
        # settles (`has(contentBlockDelta)`, `!promptFeedback.blockReason`), none that fails
        rest, left = [], []
        for (family, needed, tests), alt in zip(REST, REST_CONDITIONS, strict=True):
            known = [_known(c, self.keys, None) for c in alt]
            if self.keys >= needed and False not in known:
                kept = tuple(t for t, k in zip(tests, known, strict=True) if k is None)
                rest.append((family, kept))
                left += [c for c, k in zip(alt, known, strict=True) if k is None]
        self.rest = tuple(rest)
        # the rest is settled by the first telling text alone when every condition left
        # reads only that key (`type ^= "response."`)
        first = self.told[0] if self.told else None
        self.settled = first is not None and all(
            c.path.top == first and len(c.path.steps) == 1 for c in left
        )
        self.readers: dict[str, Reader] = {}  # per family: its reader for the key set
        self.rest_texts: dict[str, Found] = {}  # per first telling text, when it settles them

    def __call__(self, obj: dict[str, Any]) -> Found:
        """(family, reader) of an event of these keys; None for no event."""
        for key in self.told:
            value = obj[key]
            if value.__class__ is str:
                texts = self.texts[key]
                if value in texts:
                    found = texts[value]
                    if found is not None:
                        return found
                    continue  # no exact text: the next key, then the rest
                family = EXACT.get((key, value))
                if family is not None:  # EXACT is finite: so is this cache
                    made = texts[value] = (family, reader(family, self.keys, (key, value)))
                    return made
                if len(texts) < TEXTS_KEPT:
                    texts[value] = None
        return self._rest(obj)

    def _rest(self, obj: dict[str, Any]) -> Found:
        """The families tested one by one (`parse.streams.REST`), in their order; what they
        give remembered under the first telling text when it settles them."""
        key = self.told[0] if self.settled else None
        value = None if key is None else obj[key]
        if value.__class__ is not str or len(self.rest_texts) >= TEXTS_KEPT:
            found = self._tested(obj)
            return None if found is None else (found, self._reader(found))
        texts = self.rest_texts
        if value in texts:
            return texts[value]
        family = self._tested(obj)
        made = texts[value] = (
            None
            if family is None
            else (
                family,
                reader(family, self.keys, (key, value)),  # type: ignore[arg-type]
            )
        )
        return made

    def _tested(self, obj: dict[str, Any]) -> Family | None:
        for family, tests in self.rest:
            for test in tests:
                if not test(obj):
                    break
            else:
                return family
        return None

    def _reader(self, family: Family) -> Reader:
        made = self.readers.get(family.name)
        if made is None:
            made = self.readers[family.name] = reader(family, self.keys)
        return made


KINDS: dict[tuple[str, ...], _Kind] = {}


def event_kind(obj: dict[str, Any]) -> tuple[Family, Reader] | None:
    """The family of the stream event `obj` is (`parse.streams.event_family`) and a reader
    of its events (`parse.streams.read_event`), made for its key set; None for no event."""
    keys = tuple(obj)
    kind = KINDS.get(keys)
    if kind is None:
        if len(KINDS) >= KINDS_KEPT or len(keys) > KEYS_KEPT:  # hostile lines: the family's
            family = event_family(obj)  # own reader, nothing kept
            return None if family is None else (family, READERS[family.name])
        kind = KINDS[keys] = _Kind(keys)
    return kind(obj)


def fast_event(family: Family, obj: dict[str, Any]) -> Event:
    """`parse.streams.read_event`: an event's fold and tests."""
    return READERS[family.name](obj)


def decoded(content: bytes) -> dict[str, Any] | None:
    """The object a line holds, decoded as `parse.jsonline.records_of` decodes it; None for a
    line that is no single object (an array, not JSON: the general path reads it)."""
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    return value if value.__class__ is dict else None


# Only JSON's own types are written: a value orjson would turn into one (a Parquet row's date,
# a dataclass) raises instead, and the general path reads the object as it is.
NATIVE = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
NATIVE |= orjson.OPT_PASSTHROUGH_SUBCLASS


def final_facts(obj: dict[str, Any], formats: FormatSet, switches: Switches) -> Facts:
    """`parse.formats.response_facts` of a request's final object (`ledger.streambooks`):
    with the typed shapes on, theirs of the line the object writes when one holds it (they
    equal the general path on any line, whose record is the object again: orjson writes
    JSON's values back exactly)."""
    typed = fast_decoder("responses", formats, switches).typed
    if typed is not None:
        try:
            line = orjson.dumps(obj, option=NATIVE)
        except orjson.JSONEncodeError:  # a big int, a lone surrogate, a type JSON has not
            line = None
        found = None if line is None else typed.decode(line, NOTHING_PLAIN)
        if found is not None and len(found) == 1:
            return found[0]
    return response_facts(obj, formats)  # type: ignore[no-any-return]


RETRY = 16  # requests of a key set read by the declarations before the typed shapes are retried


class FinalFacts:
    """`final_facts` of the requests one read settles, for less: per top-level key set of
    the final objects, the typed shapes are tried while they hold them; after a miss, the
    next `RETRY` objects of that set go straight to the declarations compiled once
    (`fast.records.RecordReader`, equal to `response_facts` on any JSON object). Tool calls,
    text completions and Interactions (a third of the real requests) have no typed shape."""

    def __init__(self, formats: FormatSet, switches: Switches) -> None:
        self.formats = formats
        self.typed = fast_decoder("responses", formats, switches).typed
        self.records = RecordReader(formats)
        self.misses: dict[tuple[str, ...], int] = {}  # per key set: objects since a miss

    def __call__(self, obj: dict[str, Any]) -> Facts:
        """`response_facts(obj, formats)`."""
        try:
            line = orjson.dumps(obj, option=NATIVE)
        except orjson.JSONEncodeError:  # not JSON's own values: the definition reads it
            return response_facts(obj, self.formats)  # type: ignore[no-any-return]
        keys = tuple(obj)
        missed = self.misses.get(keys, 0)
        if self.typed is not None and not missed:
            found = self.typed.decode(line, NOTHING_PLAIN)
            if found is not None and len(found) == 1:
                return found[0]
            missed = RETRY  # a miss: the next RETRY objects of the set skip the shapes
        if missed or keys in self.misses:
            if len(self.misses) >= KINDS_KEPT:
                self.misses.clear()  # many key sets (hostile objects): start again
            self.misses[keys] = missed - 1
        return self.records.facts(obj)
