"""Fast facts of one JSONL line, in tiers; each equals the general path's result.

`refresh.scan` asks these first and falls back to the general path (`parse.line`, the
definition of correct) whenever they return None. Before any tier, a line's long integer
arrays are counted from their bytes and replaced by stand-ins stating their counts
(`genledger.fast.lift`): a tokenized line is then decoded by orjson whole, a response line
by the typed shapes, which read a stand-in where the array was.

1. Typed shapes (`genledger.fast.shapes`, `.apishapes`): the line decodes into one of the record
   shapes, typed key by key at every level, and the facts are written down directly.
2. Stand-ins: msgspec splits the line into its top-level values (`msgspec.Raw`); each is
   decoded by orjson exactly as the general path decodes it, except the big id arrays, which
   become stand-ins of the same length (a flat array's length is its comma count plus one, a
   0/1 loss mask's sum its count of `1`). The record is then read by its declaration compiled
   once (`genledger.fast.records`, equal to `response_facts`): every format, built-in or
   declared, takes this tier without code of its own.

A line holding stand-ins leaves tier 2 for the general path when anything is unusual:
strings, exponents, true/false or nested lists inside an id array (decoded exactly instead), a
count that is not a valid int, a failed request, a non-ASCII key, a value orjson refuses (a
line without id arrays is decoded whole, as the general path decodes it, so its facts stand
whatever they hold). Known limit: an integer
literal of 309+ digits inside an id array is counted as one element by the tiers, while orjson
rejects the line (it overflows a double); no JSON writer produces one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import msgspec
import orjson

from genledger.config import Switches
from genledger.fast import shapeinfo, shapes
from genledger.fast.apishapes import API_SHAPES
from genledger.fast.chatline import RowsWalk, native_reader, native_walk
from genledger.fast.guards import Guard, unstated_guard
from genledger.fast.lift import ESCAPE, counts_of, lift, raw_counts
from genledger.fast.rawtext import NOTHING_PLAIN, ReadFlags, plain_line, read_clear, read_plain
from genledger.fast.realshapes import REAL_SHAPES
from genledger.fast.records import RecordReader
from genledger.fast.shapes import _TOKENIZED, TOKENIZED_SHAPES, Unusual, flat_len
from genledger.parse.declarations import BUILT_IN_ONLY, FormatSet
from genledger.parse.schema import RESPONSES, Facts, states_of
from genledger.parse.tokenized import mask_sum, tokenized_facts, unwrap

ON = Switches()
# The pipelines' shapes first (most lines), then the hosted APIs' (genledger.fast.apishapes),
# then the other servers' (genledger.fast.realshapes).
RESPONSE_SHAPES: tuple[type[Any], ...] = shapes.RESPONSE_SHAPES + API_SHAPES + REAL_SHAPES

# Arrays only counted (or 0/1-summed): kept as raw bytes.
RAW_KEYS = {
    "responses": ("output_ids", "input_ids", "prompt_token_ids"),
    "tokenized": ("input_ids", "loss_mask", "attention_mask", "labels", "position_ids"),
}
UNREAD_KEYS = frozenset({"attention_mask", "labels", "position_ids"})  # skipped, yet checked
# The response keys whose long arrays are lifted before the typed shapes decode a line: each
# shape that has one of these keys keeps it raw and reads a stand-in as the array it replaced.
LIFTED_RESPONSE_KEYS = (b'"output_ids"', b'"input_ids"', b'"prompt_token_ids"', b'"token_ids"')
LIFTED_FIELDS = frozenset(key.strip(b'"') for key in LIFTED_RESPONSE_KEYS)
WHITESPACE = b" \t\r\n"
Values = dict[str, msgspec.Raw]
Decoders = tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]  # an object, an array


def raw_keys(role: str, formats: FormatSet) -> frozenset[str]:
    """The id arrays kept raw: those no declaration of `formats` reads other than by
    `len(...)` or by presence (a stand-in has the same length and presence, not the ids)."""
    keys = set(RAW_KEYS[role])
    if role == "responses":
        for decl in formats.all:
            keys -= {p.top for p in decl.paths() if not p.length and len(p.steps) > 1}
            keys -= {p.top for p in _value_paths(decl) if not p.length}
    return frozenset(keys)


def _value_paths(decl: Any) -> list[Any]:
    """The paths whose values (not only presence) a declaration reads."""
    paths = [p for f in decl.fields() for p in f.paths]
    paths += [*decl.answer, *(p for p in (decl.messages, decl.samples, decl.inner) if p)]
    paths += [p for f in decl.failures if f.detail is not None for p in f.detail.paths]
    paths += [c.path for alt in decl.detect for c in alt if c.op in ("eq", "ne")]
    return paths


class _Unusual(Exception):
    """This record needs the general path."""


class _Decoder:
    """Decodes one role's lines (an object, or an array of objects) into fact tuples: each
    top-level value decoded by orjson exactly as the general path decodes it, except the id
    arrays, which become stand-ins of the same length."""

    def __init__(self, role: str, formats: FormatSet, lifted: bool = False) -> None:
        self.raw = raw_keys(role, formats)
        # responses: the raw arrays are lifted first (`genledger.fast.lift`), all `*_ids`
        self.lift_keys = (
            tuple(b'"%s"' % k.encode() for k in sorted(self.raw))
            if lifted and role == "responses" and all(k.endswith("_ids") for k in self.raw)
            else None
        )
        # A line spelling none of these has no id array worth a stand-in: it is decoded whole,
        # as the general path decodes it (so a key written with escapes costs speed, not truth).
        self.markers = (b'_ids"', b"_mask", b'labels"') if self.raw else ()
        self.one = msgspec.json.Decoder(Values)
        self.many = msgspec.json.Decoder(list[Values])
        # responses: the declarations compiled once, detection remembered (fast/records.py)
        self.facts: Callable[[dict[str, Any]], Facts] = (
            RecordReader(formats).facts if role == "responses" else tokenized_facts
        )
        self.check = _check_response if role == "responses" else None
        self.mask_key = "loss_mask" if role == "tokenized" else ""
        self.unread = UNREAD_KEYS

    def decode(self, content: bytes) -> list[Facts]:
        first = content.lstrip(WHITESPACE)[:1]
        if first not in (b"{", b"["):
            raise _Unusual
        if not any(map(content.__contains__, self.markers)):  # no generator frame a line
            return self._whole(content)  # no id array to stand in for: one orjson call
        small = lift(content, self.lift_keys) if self.lift_keys else None
        if small is not None:
            found = self._objects(small, first, True)
            if found is not None:
                return found
            # a stand-in where no id array is read (an array under an envelope's key): the
            # line as written, its top-level arrays decoded as usual
        out = self._objects(content, first, False)
        assert out is not None
        return out

    def _objects(self, text: bytes, first: bytes, lifted: bool) -> list[Facts] | None:
        """The facts of a line's records; None when a lifted line holds a stand-in that no
        id array read."""
        objects = [self.one.decode(text)] if first == b"{" else self.many.decode(text)
        out, read = [], 0
        for values in objects:
            record, found = self._record(values, lifted)
            read += found
            facts = self.facts(record)
            if self.check is not None:
                self.check(facts)
            out.append(facts)
        if lifted and read != text.count(ESCAPE):
            return None
        return out

    def _whole(self, content: bytes) -> list[Facts]:
        """A line without id arrays, decoded as the general path decodes it: no stand-in, so
        its facts are the general path's whatever they hold (a failed request, no count)."""
        value = _exact(content)
        records = value if isinstance(value, list) else [value]
        if not records and isinstance(value, list):
            return []
        if not all(isinstance(r, dict) for r in records):
            raise _Unusual  # not a record: the general path names it malformed
        return [self.facts(r) for r in records]

    def _record(self, values: Values, lifted: bool) -> tuple[dict[str, Any], int]:
        """The record, and how many stand-ins of a lifted line it read as id arrays."""
        record: dict[str, Any] = {}
        found = 0
        for name, raw in values.items():
            if not name.isascii():  # a key orjson might refuse (a lone surrogate): the general
                raise _Unusual  # path decides
            if name in self.unread:
                _checked(bytes(raw))
            elif name in self.raw:
                data = bytes(raw)
                counts = raw_counts(data) if lifted else None
                if counts is not None:
                    record[name] = [0] * counts[0]
                    found += 1
                else:
                    record[name] = _mask(data) if name == self.mask_key else _array(data)
            else:
                record[name] = _exact(raw)
        return record, found


def _array(data: bytes) -> Any:
    """A same-length stand-in for a flat id array; other values decoded exactly (orjson)."""
    n = flat_len(data)
    return [0] * n if n is not None else _exact(data)


def _mask(data: bytes) -> Any:
    """A stand-in with the same 0/1 counts for a 0/1 mask; other values decoded exactly."""
    n = flat_len(data)
    if n is None:
        return _exact(data)
    compact = data.translate(None, WHITESPACE)
    ones = compact.count(b"1")
    if n and len(compact) == 2 * n + 1 and ones + compact.count(b"0") == n:
        return [0] * (n - ones) + [1] * ones
    return [] if n == 0 else _exact(data)


def _checked(data: bytes) -> None:
    """An unread raw value must still be one orjson accepts (strings: UTF-8; numbers: range)."""
    if b'"' in data or b"e" in data or b"E" in data:
        _exact(data)


def _exact(data: bytes | msgspec.Raw) -> Any:
    try:
        return orjson.loads(memoryview(data))  # a Raw is a buffer: no copy
    except orjson.JSONDecodeError:
        raise _Unusual from None


_RECORD_ID, _COUNT_RAW, _FAILED, _MISSING = (
    RESPONSES.fact(n) for n in ("record_id", "count_raw", "failed_request", "missing_detail")
)


def _check_response(facts: Facts) -> None:
    """Facts a stand-in could make differ from the general path's: they take that path."""
    record_id, count_raw, failed = facts[_RECORD_ID], facts[_COUNT_RAW], facts[_FAILED]
    # An unusable count or a failed request is rare: its printed value must be orjson's.
    if count_raw is not None or failed or facts[_MISSING] is not None:
        raise _Unusual
    if record_id is not None and len(record_id) >= 19 and record_id.lstrip("-").isdigit():
        raise _Unusual


_INSPECTED: dict[type[Any], tuple[Guard | None, bool]] = {}


def _inspected(shape: type[Any]) -> tuple[Guard | None, bool]:
    """A shape's guard and whether it has id arrays: worked out once a process from its
    inspected type (`fast.shapeinfo`: msgspec's own inspection cost ~0.4 ms a shape)."""
    if shape not in _INSPECTED:
        info = shapeinfo.type_info(shape)
        guard = unstated_guard(shape, states_of(shape.MAKER), shape.FORMATS, info)
        _INSPECTED[shape] = guard, _has_ids(info)
    return _INSPECTED[shape]


class _Typed:
    """Decodes a line straight into one of a role's typed shapes (fast/shapes.py), if it is one."""

    def __init__(
        self, shapes: tuple[type[Any], ...], lift_keys: tuple[bytes, ...] | None = None
    ) -> None:
        self.lift_keys = lift_keys  # lift the arrays of these keys first (None: none)
        self.shapes = shapes
        # a shape's decoders are made the first time it is tried (`decoder`): all at once cost
        # a small refresh ~2 ms, most of it for shapes its files never hold
        self.decoders: list[Decoders | None] = [None] * len(shapes)
        self.decoder(0)
        # per shape, worked out when a line first decodes into it (inspecting every shape
        # up front costs a small refresh ~20 ms): a guard (a record carrying a declared count
        # the shape does not state goes on), and whether the shape has id arrays (lift a
        # line's arrays only then: a file of chat lines pays no search for keys it never has)
        self.guards: list[Guard | None] = [None] * len(shapes)
        self.with_ids = [False] * len(shapes)
        self.inspected = [False] * len(shapes)
        self.last = 0  # files run in one shape for long stretches: try the last one first
        # then the one before it: a batch's or a server's files alternate two shapes (results
        # that succeeded and failed, chat and text completions)
        self.before = 0
        self._inspect(0)
        # Each shape forbids unknown keys: a line's first top-level key rules out every shape
        # without it, before any decode (a line no shape holds costs one lookup, not a failed
        # decode per shape). The top-level keys each shape allows, as msgspec spells them:
        self.keys = [frozenset(shape.__struct_encode_fields__) for shape in shapes]
        self.holding: dict[str, tuple[int, ...]] = {}  # first key -> the shapes allowing it

    def decoder(self, index: int) -> Decoders:
        """Shape `index`'s decoders (of an object, of an array of objects), made once."""
        made = self.decoders[index]
        if made is None:
            shape = self.shapes[index]
            made = (msgspec.json.Decoder(shape), msgspec.json.Decoder(list[shape]))  # type: ignore[valid-type]
            self.decoders[index] = made
        return made

    def _inspect(self, index: int) -> None:
        """Work out shape `index`'s guard and whether it has id arrays, once."""
        if self.inspected[index]:
            return
        self.guards[index], self.with_ids[index] = _inspected(self.shapes[index])
        self.inspected[index] = True

    def decode(self, content: bytes, flags: ReadFlags) -> list[Facts] | None:
        """The facts of the line's records, or None when no shape holds it exactly;
        `flags`: what the line's read may hold (`genledger.fast.rawtext`)."""
        first = content[:1]
        if first == b"{":
            many = False
        elif first == b"[":
            many = True
        else:
            return None  # leading whitespace, a BOM or not JSON: the slower paths decide
        candidates = None if many else self._holding(content)
        tried = self.last
        if candidates is not None and tried not in candidates:
            if not candidates:
                return None  # no shape allows the line's first key
            tried = candidates[0]  # the first shape that may hold it is tried first
            self._inspect(tried)
        small = None
        if self.lift_keys is not None and self.with_ids[tried]:
            small = lift(content, self.lift_keys)
        shapes.LINE.lifted = small is not None  # else a stand-in's look-alike is no stand-in
        text = content if small is None else small
        try:
            structs = self.decoder(tried)[many].decode(text)
            if tried != self.last:
                self.before, self.last = self.last, tried
        except msgspec.ValidationError:
            structs = self._other_shape(text, many, candidates, tried)
        except msgspec.DecodeError:
            return None  # not valid JSON for any shape
        if structs is None:
            return None
        guard = self.guards[self.last]
        if guard is not None and any(map(guard, structs if many else (structs,))):
            return None
        plain = plain_line(content, flags)
        try:
            if many:
                return [struct.facts(plain) for struct in structs]
            return [structs.facts(plain)]
        except Unusual:
            return None

    def _holding(self, content: bytes) -> tuple[int, ...] | None:
        """The shapes that allow the first key of an object line written `{"key"` (no
        escape, ASCII), in order; None when the key is spelled otherwise (all may hold it)."""
        end = content.find(b'"', 2)
        if content[1:2] != b'"' or end < 0:
            return None
        raw = content[2:end]
        if b"\\" in raw or not raw.isascii():
            return None
        key = raw.decode()
        found = self.holding.get(key)
        if found is None:
            if len(self.holding) >= HOLDING_MAX:  # a hostile file's many keys: start again
                self.holding.clear()
            found = tuple(i for i, keys in enumerate(self.keys) if key in keys)
            self.holding[key] = found
        return found

    def _other_shape(
        self, content: bytes, many: bool, candidates: tuple[int, ...] | None, tried: int
    ) -> Any:
        before = self.before  # the shape before the last one first (alternating files)
        first = before != tried and (candidates is None or before in candidates)
        if first:
            found = self._attempt(before, content, many)
            if found is not _MISSED:
                return found
        for index in range(len(self.shapes)) if candidates is None else candidates:
            if index == tried or (first and index == before):
                continue
            found = self._attempt(index, content, many)
            if found is not _MISSED:
                return found
        return None

    def _attempt(self, index: int, content: bytes, many: bool) -> Any:
        """The line decoded in shape `index` (then the last), `_MISSED` when the shape does
        not hold it, None when it is no valid JSON."""
        try:
            structs = self.decoder(index)[many].decode(content)
        except msgspec.ValidationError:
            return _MISSED
        except msgspec.DecodeError:
            return None
        self.before, self.last = self.last, index
        self._inspect(index)
        return structs


_MISSED = object()  # a shape that does not hold a line


def _has_ids(kind: Any) -> bool:
    """Whether a decoded shape (`msgspec.inspect` type) has a field of an id array, at any
    depth."""
    if isinstance(kind, msgspec.inspect.StructType):
        return any(
            field.encode_name.encode() in LIFTED_FIELDS or _has_ids(field.type)
            for field in kind.fields
        )
    if isinstance(kind, msgspec.inspect.UnionType):
        return any(_has_ids(member) for member in kind.types)
    if isinstance(kind, msgspec.inspect.ListType):
        return _has_ids(kind.item_type)
    return False


PLAIN = object()  # a value holding no stand-in where the facts look


def _read(value: Any) -> Any:
    """(length, ones or None) of a lifted array, or of a tensor whose rows were all lifted;
    PLAIN for a value holding no stand-in where `unwrap` looks (read it as the general path
    does); None for a mix of lifted and unlifted rows (the general path reads it)."""
    if value.__class__ is str:
        return counts_of(value) or PLAIN
    if value.__class__ is not list or not value or value[0].__class__ not in (str, list):
        return PLAIN  # not a list of rows: no stand-in can change what `unwrap` does
    rows = [counts_of(row) if row.__class__ is str else None for row in value]
    lifted = [row for row in rows if row is not None]
    if len(lifted) == len(rows):
        ones = [row[1] for row in lifted]
        total = None if None in ones else sum(n for n in ones if n is not None)
        return sum(row[0] for row in lifted), total
    if lifted and all(
        counts is not None or row.__class__ is list for counts, row in zip(rows, value, strict=True)
    ):
        return None  # rows lifted and rows not: unwrap would flatten them all
    return PLAIN


def _lifted_tokenized(record: dict[str, Any]) -> Facts | None:
    """`tokenized_facts` of a record whose arrays may be stand-ins; None when only the
    general path can tell."""
    ids, mask = record.get("input_ids"), record.get("loss_mask")
    read_ids, read_mask = _read(ids), _read(mask)
    if read_ids is None or read_mask is None:
        return None
    if read_ids is PLAIN:
        flat = unwrap(ids)
        n_tokens = None if flat is None else len(flat)
    else:
        n_tokens = read_ids[0]
    if read_mask is PLAIN:
        flat = unwrap(mask)
        loss_len, loss_sum = (None, None) if flat is None else (len(flat), mask_sum(flat))
    elif read_mask[1] is None:
        return None  # a lifted mask that is not 0/1: its sum needs its values
    else:
        loss_len, loss_sum = read_mask
    return _TOKENIZED(n_tokens, loss_len, loss_sum)


def _lifted_tokenized_line(content: bytes, start: int = 0, stop: int = -1) -> list[Facts] | None:
    """The facts of a tokenized line (`content`, or `content[start:stop]`, not copied) whose
    long arrays can be lifted (`genledger.fast.lift`): the rest is decoded by orjson, as the
    general path decodes it; None otherwise."""
    small = lift(content, None, start, stop)
    if small is None:
        return None
    try:
        value = orjson.loads(small)
    except orjson.JSONDecodeError:
        return None  # the general path decides (and names what is wrong)
    if value.__class__ is dict:
        records = [value]
    elif value.__class__ is list and all(r.__class__ is dict for r in value):
        records = value
    else:
        return None
    out = []
    for record in records:
        facts = _lifted_tokenized(record)
        if facts is None:
            return None
        out.append(facts)
    return out


class FastDecoder:
    """The fast tiers of one role under one set of declarations and switches."""

    def __init__(self, role: str, formats: FormatSet, switches: Switches) -> None:
        # The typed shapes are the built-in formats': a user's declarations are tried first.
        typed = switches.typed_shapes and (role != "responses" or formats.built_in_only)
        shapes = RESPONSE_SHAPES if role == "responses" else TOKENIZED_SHAPES
        lifted_keys = LIFTED_RESPONSE_KEYS if switches.lift and role == "responses" else None
        self.typed = _Typed(shapes, lifted_keys) if typed else None
        self.lifted = switches.lift and role == "tokenized"
        self.stand_ins = _Decoder(role, formats, switches.lift) if switches.stand_ins else None
        # A file keeps one shape for long runs of lines: once no typed shape has held
        # `TYPED_PATIENCE` lines in a row, the typed tier is skipped for a run of lines that
        # doubles with each further miss (up to `TYPED_SKIP_MAX`) and resets on a hit.
        self.misses = 0
        self.skip = 0

    def lifted_line(self, data: bytes, start: int, stop: int) -> list[Facts] | None:
        """The facts of the line `data[start:stop]` from the lifted tier alone, without
        copying it out of its read; None when the tier is off or cannot tell (then the line
        is cut out and given to `facts`)."""
        return _lifted_tokenized_line(data, start, stop) if self.lifted else None

    def facts(self, content: bytes, flags: ReadFlags = NOTHING_PLAIN) -> list[Facts] | None:
        """The facts of every record of a non-blank line, equal to
        `parse.line.facts_of_line`'s, or None when only the general path can tell (an unusual
        line, or a malformed one). `flags`: what the line's read may hold
        (`genledger.fast.rawtext`)."""
        if self.lifted:
            facts = _lifted_tokenized_line(content)
            if facts is not None:
                return facts
        if self.typed is not None:
            facts = self._typed(content, flags)
            if facts is not None:
                return facts
        if self.stand_ins is not None:
            try:
                return self.stand_ins.decode(content)
            except (msgspec.DecodeError, RecursionError, _Unusual):  # the general path decides
                pass
        return None

    def run_reader(self, flags: ReadFlags) -> Callable[[bytes], Facts | None] | None:
        """For a run of lines of one read (`flags`) in the shape that read the last line: the
        facts of a line holding one record of that shape (an object), exactly `facts`'s, or
        None (then `facts` reads the line). None when every line must take `facts`: the typed
        tier off or resting, a shape that has a guard. Skips the tiers' per-line steps; a file
        keeps one shape for long runs of lines."""
        typed = self.typed
        if typed is None or self.skip or self.lifted:
            return None
        plain = read_plain(flags)  # None: the line's own (a think tag or an escape in the read)
        last = typed.last
        if typed.guards[last] is not None:
            return None
        decode = typed.decoder(last)[0].decode
        keys = typed.lift_keys if typed.with_ids[last] else None
        line = shapes.LINE
        line.lifted = False  # as `_Typed.decode` sets it for a line it does not lift
        native = native_reader(typed.shapes[last], read_clear(flags))
        # A line the last shape does not hold is tried in the shape before it, as
        # `_Typed.decode` tries it next (a file alternating two shapes stays in the run),
        # where neither lifts arrays and that shape has no guard.
        before = typed.before
        other = (
            typed.decoder(before)[0].decode
            if before != last
            and typed.inspected[before]
            and typed.guards[before] is None
            and keys is None
            and not typed.with_ids[before]
            else None
        )

        def one(content: bytes) -> Facts | None:
            if content[:1] != b"{":
                return None
            said = plain if plain is not None else plain_line(content, flags)
            if keys is not None:  # as `_Typed.decode` lifts a line of a shape with id arrays
                small = lift(content, keys)
                line.lifted = small is not None
                content = content if small is None else small
            try:
                facts: Facts = decode(content).facts(said)
            except msgspec.ValidationError:
                if other is None:
                    return None
                try:
                    facts = other(content).facts(said)
                except (msgspec.DecodeError, Unusual):
                    return None
            except (msgspec.DecodeError, Unusual):
                return None
            self.misses = 0
            return facts

        if native is None:
            return one

        def first_native(content: bytes) -> Facts | None:
            # the usual chat line in one C call (fast.chatline); any other line as `one`
            facts = native(content)
            if facts is None:
                return one(content)
            self.misses = 0
            return facts

        return first_native

    def native_walk(self, flags: ReadFlags) -> RowsWalk | None:
        """The native tier's walk over a run of lines of a read (`flags`) in the chat shape
        (`fast.chatline.native_walk`), when the run reader would be native; else None."""
        typed = self.typed
        if typed is None or self.skip or self.lifted or typed.guards[typed.last] is not None:
            return None
        return native_walk(typed.shapes[typed.last], read_clear(flags))

    def wake(self) -> None:
        """Try the typed tier again from the next line (a new file may be of its shapes)."""
        self.misses = self.skip = 0

    def _typed(self, content: bytes, flags: ReadFlags) -> list[Facts] | None:
        """The typed tier's facts, unless it is resting after a run of misses."""
        assert self.typed is not None
        if self.skip:
            self.skip -= 1
            return None
        facts = self.typed.decode(content, flags)
        if facts is not None:
            self.misses = 0
            return facts
        self.misses += 1
        if self.misses >= TYPED_PATIENCE:
            self.skip = min(1 << (self.misses - TYPED_PATIENCE), TYPED_SKIP_MAX)
        return None


HOLDING_MAX = 256  # first keys remembered per typed tier
TYPED_PATIENCE = 4  # misses in a row before the typed tier rests (alternating files never do)
# the longest rest, in lines: a file that changes shape is read typed again soon after
TYPED_SKIP_MAX = 256


@lru_cache(maxsize=16)
def fast_decoder(role: str, formats: FormatSet, switches: Switches = ON) -> FastDecoder:
    """The fast decoder of `role` under `formats` and `switches` (made once per value)."""
    return FastDecoder(role, formats, switches)


def fast_facts(
    content: bytes,
    role: str,
    flags: ReadFlags = NOTHING_PLAIN,
    switches: Switches = ON,
    formats: FormatSet | None = None,
) -> list[Facts] | None:
    """`FastDecoder.facts` of the decoder of `role`, `formats` (the built-in ones by default)
    and `switches`."""
    return fast_decoder(role, formats or BUILT_IN_ONLY, switches).facts(content, flags)
