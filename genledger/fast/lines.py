"""Fast facts of one JSONL line, in two tiers; each equals the general path's result.

`refresh.scan` asks these first and falls back to the general path (`parse.line`, the
definition of correct) whenever they return None.

1. Typed shapes (`genledger.fast.shapes`): the line decodes into one of the common record
   shapes, typed key by key at every level, and the facts are written down directly.
2. Stand-ins: a msgspec decoder declares the top-level keys the fact functions read and keeps
   the big id arrays as raw bytes (`msgspec.Raw`): a flat array's length is its comma count
   plus one, a 0/1 loss mask's sum is its count of `1`. The unchanged fact functions then run
   on a record whose arrays are stand-ins of the same length (and the same 0/1 counts).

A line leaves tier 2 for the general path when anything is unusual: an unknown top-level key
(so every string of the line is decoded, hence UTF-8-checked), strings, exponents, true/false
or nested lists inside an id array (decoded exactly instead), a count that is not a valid int,
an int beyond int64 anywhere (msgspec keeps it exact, orjson makes it a double or refuses it),
a failed request. Known limit: an integer literal of 309+ digits inside an id array is counted
as one element by the tiers, while orjson rejects the line (it overflows a double); no JSON
writer produces one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import orjson

from genledger.config import Switches
from genledger.fast.rawtext import NOTHING_PLAIN, ReadFlags, plain_line
from genledger.fast.shapes import (
    RESPONSE_SHAPES,
    TOKENIZED_SHAPES,
    Unusual,
    flat_len,
)
from genledger.parse.declarations import BUILT_IN, active
from genledger.parse.formats import response_facts
from genledger.parse.tokenized import INT64_MAX, INT64_MIN, tokenized_facts

Facts = tuple[Any, ...]
ON = Switches()
UNSET = msgspec.UNSET

# Arrays only counted (or 0/1-summed): kept as raw bytes.
RAW_KEYS = {
    "responses": ("output_ids", "input_ids", "prompt_token_ids"),
    "tokenized": ("input_ids", "loss_mask", "attention_mask", "labels", "position_ids"),
}
UNREAD_KEYS = frozenset({"attention_mask", "labels", "position_ids"})  # skipped, yet checked
# Top-level keys decoded as plain values. Any other key sends the line to the general path.
PLAIN_KEYS = {
    "responses": (
        "id", "custom_id", "object", "created", "model", "system_fingerprint", "service_tier",
        "choices", "usage", "meta_info", "response", "error", "details", "outputs",
        "text", "generated_text", "reasoning_content", "reasoning", "completion_tokens",
        "prompt_tokens", "finish_reason", "request_id", "prompt",
        "finished", "index", "meta", "status", "messages", "metrics", "logprobs",
        # the other APIs' top-level keys beside the ones their declarations read
        "type", "role", "content", "stop_reason", "stop_sequence", "container", "message",
        "modelVersion", "model_version", "createTime", "create_time", "responseId",
        "response_id", "automaticFunctionCallingHistory", "automatic_function_calling_history",
        "sdkHttpResponse", "sdk_http_response", "parsed", "created_at", "instructions",
        "max_output_tokens", "parallel_tool_calls", "previous_response_id", "temperature",
        "tool_choice", "tools", "top_p", "truncation", "user", "metadata", "background",
        "incomplete_details", "num_cached_tokens", "prompt_logprobs", "encoder_prompt",
        "encoder_prompt_token_ids", "kv_transfer_params", "token", "top_tokens",
    ),
    "tokenized": ("id", "text", "conversations", "messages", "source", "length"),
}  # fmt: skip
WHITESPACE = b" \t\r\n"


def plain_keys(role: str) -> tuple[str, ...]:
    """The top-level keys decoded as values: the known ones and every key a declaration in
    force reads (so a user's declared format takes this tier without new code)."""
    if role != "responses":
        return PLAIN_KEYS[role]
    keys = (*PLAIN_KEYS[role], *sorted({p.top for d in active() for p in d.paths()}))
    return tuple(k for k in dict.fromkeys(keys) if k not in RAW_KEYS[role])


def _struct(role: str, plain: tuple[str, ...]) -> type[msgspec.Struct]:
    fields: list[tuple[str, Any, Any]] = [(k, Any, UNSET) for k in plain]
    fields += [(k, msgspec.Raw, msgspec.Raw()) for k in RAW_KEYS[role]]
    return msgspec.defstruct(f"Fast_{role}", fields, forbid_unknown_fields=True)


class _Unusual(Exception):
    """This record needs the general path."""


class _Decoder:
    """Decodes one role's lines (an object, or an array of objects) into fact tuples."""

    def __init__(self, role: str) -> None:
        self.plain, self.raw = plain_keys(role), RAW_KEYS[role]  # the struct's field order
        struct = _struct(role, self.plain)
        self.one = msgspec.json.Decoder(struct)
        self.many = msgspec.json.Decoder(list[struct])  # type: ignore[valid-type]
        self.facts: Callable[[dict[str, Any]], Facts] = (
            response_facts if role == "responses" else tokenized_facts
        )
        self.check = _check_response if role == "responses" else None
        self.mask_key = "loss_mask" if role == "tokenized" else ""
        self.unread = UNREAD_KEYS

    def decode(self, content: bytes) -> list[Facts]:
        first = content.lstrip(WHITESPACE)[:1]
        if first == b"{":
            structs = [self.one.decode(content)]
        elif first == b"[":
            structs = self.many.decode(content)
        else:
            raise _Unusual
        out = []
        for struct in structs:
            facts = self.facts(self._record(struct))
            if self.check is not None:
                self.check(facts)
            out.append(facts)
        return out

    def _record(self, struct: msgspec.Struct) -> dict[str, Any]:
        values = msgspec.structs.astuple(struct)
        split = len(self.plain)
        if _has_big_int(values[:split]):
            raise _Unusual
        record = {k: v for k, v in zip(self.plain, values[:split], strict=True) if v is not UNSET}
        for name, raw in zip(self.raw, values[split:], strict=True):
            if raw:  # an absent key keeps the empty default
                data = bytes(raw)
                if name in self.unread:
                    _checked(data)
                else:
                    record[name] = _mask(data) if name == self.mask_key else _array(data)
        return record


def _has_big_int(values: tuple[Any, ...]) -> bool:
    """An int beyond int64 anywhere in the plain values: msgspec keeps it exact, while orjson
    reads it as a double or, past 308 digits, refuses the line."""
    stack = list(values)
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is int:
            if not INT64_MIN <= value <= INT64_MAX:
                return True
        elif kind is dict:
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
    return False


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


def _exact(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        raise _Unusual from None


def _check_response(facts: Facts) -> None:
    """Values whose type msgspec and orjson decode differently (ints beyond 64 bits)."""
    record_id, count_raw, failed = facts[0], facts[4], facts[12]
    # An unusable count or a failed request is rare: its printed value must be orjson's.
    if count_raw is not None or failed or facts[17] is not None:
        raise _Unusual
    if record_id is not None and len(record_id) >= 19 and record_id.lstrip("-").isdigit():
        raise _Unusual


_DECODERS: dict[tuple[str, int], _Decoder] = {}  # by role and declarations in force


class _Typed:
    """Decodes a line straight into one of a role's typed shapes (fast/shapes.py), if it is one."""

    def __init__(self, shapes: tuple[type[Any], ...]) -> None:
        self.decoders: list[tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]] = [
            (msgspec.json.Decoder(shape), msgspec.json.Decoder(list[shape]))  # type: ignore[valid-type]
            for shape in shapes
        ]
        self.last = 0  # files run in one shape for long stretches: try the last one first

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
        try:
            structs = self.decoders[self.last][many].decode(content)
        except msgspec.ValidationError:
            structs = self._other_shape(content, many)
        except msgspec.DecodeError:
            return None  # not valid JSON for any shape
        if structs is None:
            return None
        plain = plain_line(content, flags)
        try:
            if many:
                return [struct.facts(plain) for struct in structs]
            return [structs.facts(plain)]
        except Unusual:
            return None

    def _other_shape(self, content: bytes, many: bool) -> Any:
        for index, decoders in enumerate(self.decoders):
            if index == self.last:
                continue
            try:
                structs = decoders[many].decode(content)
            except msgspec.ValidationError:
                continue
            except msgspec.DecodeError:
                return None
            self.last = index
            return structs
        return None


_TYPED: dict[str, _Typed] = {}


def _typed(role: str) -> _Typed:
    typed = _TYPED.get(role)
    if typed is None:
        shapes = RESPONSE_SHAPES if role == "responses" else TOKENIZED_SHAPES
        typed = _TYPED[role] = _Typed(shapes)
    return typed


def fast_facts(
    content: bytes, role: str, flags: ReadFlags = NOTHING_PLAIN, switches: Switches = ON
) -> list[Facts] | None:
    """The facts of every record of a non-blank line, equal to `parse.line.facts_of_line`'s,
    or None when only the general path can tell (an unusual line, or a malformed one).
    `flags`: what the line's read may hold (`genledger.fast.rawtext`)."""
    declarations = active()
    # The typed shapes are the built-in formats': a user's declarations are tried first.
    if switches.typed_shapes and (role != "responses" or declarations is BUILT_IN):
        facts = _typed(role).decode(content, flags)
        if facts is not None:
            return facts
    if switches.stand_ins:
        key = (role, id(declarations))
        decoder = _DECODERS.get(key)
        if decoder is None:
            decoder = _DECODERS[key] = _Decoder(role)
        try:
            return decoder.decode(content)
        except (msgspec.DecodeError, _Unusual):
            pass
    return None
