"""A response record's facts by declarations compiled once; equal to `parse.formats.response_facts`.

The general path (`response_facts`, the definition) searches the declarations for every record
and reads each field through the path language. A dataset's files keep one shape for long runs
of records, so two things are done once instead:

1. Detection. Per top-level key set, the declaration that detected the previous record is
   tried first. It stands only when every declaration before it in the general order is shown
   not to hold: each of their detect alternatives by the one condition that failed last time
   (its witness, still failing). Any witness that holds, or a remembered alternative that no
   longer does, sends the record through the general search, which remembers anew.
2. Reading. Each (outer, inner) declaration pair becomes a plan: its counts, finish, id,
   samples and answer fields as closures made once (nothing is compiled per record), the
   facts tuple built positionally.

A record no declaration detects (an envelope, an unknown record) and a record without a count
(whose facts name its keys) take `response_facts` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from operator import itemgetter
from typing import Any

from genledger.parse.answer import key_of_texts, part_text
from genledger.parse.declarations import (
    POSSIBLE_CACHE,
    Declaration,
    FormatSet,
    inner_candidates,
)
from genledger.parse.formats import (
    FINISH_SEPARATOR,
    ID_FALLBACK,
    OTHER_COUNTS,
    READS,
    dig,
    failure_reason,
    json_type,
    reason_name,
    record_id,
    response_facts,
    short_repr,
    text_value,
    think_leak,
    time_value,
)
from genledger.parse.formats import _visible as visible  # as fast/shapes.py reads it
from genledger.parse.paths import Condition, Field, Path, as_count, in_int64, parse_path, total
from genledger.parse.schema import FRAGMENT, RESPONSES, Facts
from genledger.parse.streams import EXACT, REST, TOLD_BY
from genledger.parse.tokenized import INT64_MAX, INT64_MIN, unwrap
from genledger.parse.usage import PARTS, SETTLED, settle

Read = Callable[[Any], Any]
Test = Callable[[Any], bool]

# --- fields as closures ------------------------------------------------------------------------


def path_raw(path: Path, floats: bool) -> Read:
    """`path.raw(obj, floats)` as one function of the record."""
    if path.get is not None and not path.length and not floats:
        return path.get  # an uncounted plain value is the count as it stands (`as_count`)
    if path.get is not None and not path.length:
        get = path.get
        return lambda o: None if (v := get(o)) is None else as_count(v, True)
    if path.get is not None:
        return partial(_length, path.get, partial(path.raw, floats=floats))
    return partial(path.raw, floats=floats)


def _length(get: Read, general: Read, obj: Any) -> Any:
    """`len(path)`: a list of no rows is counted here; a tensor's rows and what is no list
    are read as declared (`unwrap`)."""
    value = get(obj)
    if value is None:
        return None
    if isinstance(value, list) and (not value or not isinstance(value[0], list)):
        return len(value)
    return general(obj)


def field_raw(field: Field, floats: bool) -> Read:
    """`field.raw(obj, floats)` as one function of the record."""
    if any(any(signs) for signs in field.minus):  # `a - b`: rare, read as declared
        return partial(field.raw, floats=floats)
    alternatives = tuple(tuple(path_raw(p, floats) for p in terms) for terms in field.alternatives)
    if all(len(terms) == 1 for terms in alternatives):
        reads = tuple(terms[0] for terms in alternatives)
        if len(reads) == 1:
            return reads[0]
        return partial(_first_present, reads)
    return partial(_first_sum, alternatives, floats)


def _first_present(reads: tuple[Read, ...], obj: Any) -> Any:
    for read in reads:
        value = read(obj)
        if value is not None:
            return value
    return None


def _first_sum(alternatives: tuple[tuple[Read, ...], ...], floats: bool, obj: Any) -> Any:
    for terms in alternatives:
        found = [v for v in (read(obj) for read in terms) if v is not None]
        if found:
            return found[0] if len(found) == 1 else total(found, floats)
    return None


def column_read(decl: Declaration | None, column: str) -> Read | None:
    """A declared column's value (a count, a text or a time) as the general path reads it;
    None when the declaration has no field for it."""
    spec = None if decl is None else decl.count(column)
    if decl is None or spec is None:
        return None
    reads = READS[column]
    if reads == "count":
        raw = field_raw(spec, decl.float_counts)
        return lambda o: v if type(v := raw(o)) is int and INT64_MIN <= v <= INT64_MAX else None
    first = field_first(spec)
    if reads == "text":
        return lambda o: text_value(first(o))
    return lambda o: time_value(first(o))


def field_first(field: Field) -> Read:
    """`field.first` as one function of the record."""
    only = field.paths[0] if len(field.paths) == 1 else None
    return only.get if only is not None and only.get is not None else field.first


def field_values(field: Field) -> Callable[[Any], list[Any]]:
    """`field.all_values` as one function of the record."""
    only = field.paths[0] if len(field.paths) == 1 else None
    if only is None:
        return field.all_values
    return only.walk if only.walk is not None else only.values


def condition_test(condition: Condition) -> Test:
    """The condition's test as one function of the record."""
    if condition.test is not None:
        return condition.test
    path = condition.path
    if condition.op == "has" and not path.spreads:  # the key exists, even null
        key = path.steps[-1][0]
        if len(path.steps) == 1:
            return lambda o: key in o
        owner = parse_path(".".join(k for k, _ in path.steps[:-1])).get
        assert owner is not None  # a path without a list has its walk compiled
        return lambda o: isinstance(p := owner(o), dict) and key in p
    walk = path.walk
    if walk is not None and condition.op == "present":  # some value reached
        return lambda o: bool(walk(o))
    if walk is not None and condition.op == "absent":
        return lambda o: not walk(o)
    return condition.holds


# --- detection ---------------------------------------------------------------------------------


class Events:
    """`event_family(obj) is not None` for records of one top-level key set: only the keys
    whose text tells an event that the set has, only the families whose keys it has."""

    __slots__ = ("rest", "told")

    def __init__(self, keys: frozenset[str]) -> None:
        self.told = tuple(key for key in TOLD_BY if key in keys)
        # `parse.streams.REST` holds each alternative's compiled condition tests already
        self.rest = tuple(tests for _, needed, tests in REST if keys >= needed)

    def any(self, obj: dict[str, Any]) -> bool:
        """Whether the record is a stream event of some family."""
        for key in self.told:
            value = obj[key]
            if type(value) is str and (key, value) in EXACT:
                return True
        return any(all(test(obj) for test in tests) for tests in self.rest)


class Search:
    """The first declaration of `pool` whose detect holds, for records of one top-level key
    set: the previous answer first, the general order proven by witnesses."""

    __slots__ = ("alternatives", "memo", "pool")

    def __init__(self, pool: tuple[Declaration, ...], keys: frozenset[str]) -> None:
        self.pool = pool
        # per declaration, its alternatives whose top-level keys the key set has (the others
        # cannot hold: `Declaration.detects` tests the keys first)
        self.alternatives = tuple(
            tuple(
                tuple(condition_test(c) for c in conditions)
                for needed, conditions in zip(d.requires, d.detect, strict=True)
                if keys >= needed
            )
            for d in pool
        )
        # (index found or None, the witnesses of the alternatives before it, its alternative)
        self.memo: tuple[int | None, tuple[Test, ...], tuple[Test, ...]] | None = None

    def find(self, obj: dict[str, Any]) -> int | None:
        """The index in `pool` of the declaration `find_declaration` gives, or None."""
        memo = self.memo
        if memo is not None:
            index, witnesses, held = memo
            if not any(test(obj) for test in witnesses) and all(test(obj) for test in held):
                return index
        return self.search(obj)

    def search(self, obj: dict[str, Any]) -> int | None:
        """The general order, remembering each failed alternative's failing condition."""
        witnesses: list[Test] = []
        for index, alternatives in enumerate(self.alternatives):
            for tests in alternatives:
                failed = next((test for test in tests if not test(obj)), None)
                if failed is None:
                    self.memo = (index, tuple(witnesses), tests)
                    return index
                witnesses.append(failed)
        self.memo = (None, tuple(witnesses), ())
        return None


# --- reading -----------------------------------------------------------------------------------

MAKE = RESPONSES.positional(
    "record_id", "format", "count_type", "count_raw", "n_samples", "finish_reason",
    "more_finishes", "output_len", "failed_request", "request_detail", "think_leak",
    "empty_output", "answer_hash", *(c for c in OTHER_COUNTS if c not in SETTLED), *SETTLED,
)  # fmt: skip
# Where `settle` reads its counts in a plan's columns (`OTHER_COUNTS`' order), and the columns
# it does not settle (passed on as read).
PROMPT, TOTAL = OTHER_COUNTS.index("prompt_tokens"), OTHER_COUNTS.index("total_tokens")
SETTLE_PARTS = itemgetter(*(OTHER_COUNTS.index(column) for column in PARTS))
UNSETTLED = itemgetter(*(i for i, column in enumerate(OTHER_COUNTS) if column not in SETTLED))


class Plan:
    """The facts of records read by `decl` (under `outer`, which detected them), made once."""

    def __init__(self, outer: Declaration, decl: Declaration | None, formats: FormatSet) -> None:
        self.outer, self.decl, self.formats = outer, decl, formats
        floats = decl is not None and decl.float_counts
        completion = None if decl is None else decl.completion
        self.completion = None if completion is None else field_raw(completion, floats)
        self.columns = tuple(column_read(decl, column) or _absent for column in OTHER_COUNTS)
        self.outer_fails = () if outer is decl else _whens(outer)
        self.fails = _whens(decl)
        self.ids = _id_reads(outer, formats)
        self.samples = (
            None if decl is None or decl.samples is None else path_raw(decl.samples, False)
        )
        self.finish = None if decl is None or decl.finish is None else field_values(decl.finish)
        self.each_finish = decl is not None and decl.each_finish
        answer = () if decl is None else decl.answer
        self.answer = tuple(p.thoughtless or partial(p.values, skip_thoughts=True) for p in answer)
        self.answer_tops = tuple(dict.fromkeys(p.top for p in answer))

    def facts(self, obj: dict[str, Any], body: Any) -> Facts:
        """The record's facts (`response_facts`); `body`: what `decl` reads."""
        failure = None
        if self.outer_fails and any(test(obj) for test in self.outer_fails):
            failure = failure_reason(self.outer, obj)
        if not failure and self.fails and any(test(body) for test in self.fails):
            failure = failure_reason(self.decl, body)
        raw = None if self.completion is None else self.completion(body)
        if raw is None and not failure:  # no count: the facts name the record's keys
            return response_facts(obj, self.formats)
        completion = raw if in_int64(raw) else None
        counts = [read(body) for read in self.columns]
        settled = settle(counts[PROMPT], completion, counts[TOTAL], *SETTLE_PARTS(counts))
        finishes = self._finishes(body)
        answers = [v for walk in self.answer for v in walk(body)]
        return MAKE(  # type: ignore[no-any-return]
            self._record_id(obj),
            self.outer.name,
            None if raw is None else json_type(raw),
            None if raw is None or completion is not None else short_repr(raw),
            self._samples(body, failure is not None),
            finishes[0] if finishes else None,
            FINISH_SEPARATOR.join(finishes[1:]) or None,
            _output_len(obj),
            failure is not None,
            failure,
            think_leak(self.decl, body),
            self._empty(body, answers),
            _answer_key(answers),
            *UNSETTLED(counts),
            *settled,
        )

    def _record_id(self, obj: dict[str, Any]) -> str | None:
        for read in self.ids:
            value = read(obj)
            if isinstance(value, str) and value:
                return value
            if type(value) is int:
                return str(value)
        return None

    def _samples(self, body: Any, failed: bool) -> int:
        if failed:
            return 0
        n = None if self.samples is None else self.samples(body)
        return n if isinstance(n, int) and in_int64(n) and n > 0 else 1

    def _finishes(self, body: Any) -> list[str]:
        if self.finish is None:
            return []
        names = [n for n in (reason_name(v) for v in self.finish(body)) if n is not None]
        return names if self.each_finish else names[:1]

    def _empty(self, body: Any, answers: list[Any]) -> bool:
        """`empty_output`: a place for the answer and nothing visible there."""
        if not self.answer_tops or not any(body.get(top) is not None for top in self.answer_tops):
            return False
        return not any(visible(v) for v in answers)


def _absent(obj: Any) -> None:
    """A column the declaration has no field for."""
    return None


def _whens(decl: Declaration | None) -> tuple[Test, ...]:
    return () if decl is None else tuple(condition_test(f.when) for f in decl.failures)


def _id_reads(outer: Declaration, formats: FormatSet) -> tuple[Read, ...]:
    """`record_id`'s places in its order: the user's id path, the format's, the fallbacks."""
    reads: list[Read] = [] if formats.id is None else [formats.id.first]
    reads += [] if outer.id is None else [field_first(outer.id)]
    reads += [partial(_key, key) for key in ID_FALLBACK]
    reads.append(lambda o: dig(o, "meta_info", "id"))
    return tuple(reads)


def _key(key: str, obj: dict[str, Any]) -> Any:
    return obj.get(key)


def _output_len(obj: dict[str, Any]) -> int | None:
    ids = unwrap(obj.get("output_ids"))
    return len(ids) if ids is not None else None


def _answer_key(answers: list[Any]) -> int | None:
    texts = [text for v in answers if (text := part_text(v)) is not None]
    return key_of_texts(texts) if texts else None


class RecordReader:
    """`response_facts` under one set of declarations, with the event test and detection
    remembered per key set and each declaration pair's plan made once (bounded: the memos
    of hostile key sets are cleared)."""

    def __init__(self, formats: FormatSet) -> None:
        self.formats = formats
        self.shapes: dict[frozenset[str], tuple[Events, Search]] = {}
        self.inner: dict[tuple[int, frozenset[str]], Search] = {}
        self.plans: dict[tuple[int, int], Plan] = {}

    def facts(self, obj: dict[str, Any], envelope: bool = True) -> Facts:
        """The facts `response_facts(obj, formats, envelope)` gives."""
        events, search = self._shape(obj)
        if events.any(obj):  # an event: its request is assembled (ledger.streams)
            return FRAGMENT
        index = search.find(obj)
        if index is None:
            inner = self._enveloped(obj) if envelope else None
            # an unknown record: its facts name its keys, as the definition writes them
            return response_facts(obj, self.formats, False) if inner is None else inner
        outer = search.pool[index]
        decl: Declaration | None = outer
        body: Any = obj
        if outer.inner is not None:
            body = outer.inner.first(obj)
            decl = self._inner(outer, body) if isinstance(body, dict) else None
        plan = self.plans.get((id(outer), id(decl)))
        if plan is None:
            plan = self.plans[(id(outer), id(decl))] = Plan(outer, decl, self.formats)
        return plan.facts(obj, body)

    def _shape(self, obj: dict[str, Any]) -> tuple[Events, Search]:
        """The event test and the declaration search of the record's key set."""
        keys = frozenset(obj)
        found = self.shapes.get(keys)
        if found is None:
            if len(self.shapes) >= POSSIBLE_CACHE:
                self.shapes.clear()
            found = self.shapes[keys] = (Events(keys), Search(self.formats.possible(keys), keys))
        return found

    def _enveloped(self, obj: dict[str, Any]) -> Facts | None:
        """`parse.formats._enveloped`: the facts of the one known record under a key."""
        found = [value for value in obj.values() if isinstance(value, dict) and self._known(value)]
        if len(found) != 1:
            return None
        facts: Any = self.facts(found[0], envelope=False)  # a facts namedtuple
        outer_id = record_id(obj)
        if outer_id is not None and not facts.stream_chunk:
            facts = facts._replace(record_id=outer_id)
        return facts  # type: ignore[no-any-return]

    def _known(self, obj: dict[str, Any]) -> bool:
        """A declaration detects the record, or it is a stream event."""
        events, search = self._shape(obj)
        return search.find(obj) is not None or events.any(obj)

    def _inner(self, outer: Declaration, sub: dict[str, Any]) -> Declaration | None:
        pool = inner_candidates(outer.inner_formats)
        keys = frozenset(sub)
        search = self.inner.get((id(pool), keys))
        if search is None:
            if len(self.inner) >= POSSIBLE_CACHE:
                self.inner.clear()
            search = self.inner[(id(pool), keys)] = Search(pool, keys)
        index = search.find(sub)
        return None if index is None else pool[index]
