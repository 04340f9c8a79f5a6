"""The usual OpenAI chat completion line read in C (`_chatline.c`): the native tier.

A line of a clear read (`fast.rawtext.read_clear`: valid UTF-8, no think tag) without a `\\u`
or `\\/` escape (a spelled line, `fast.rawtext.SPELLED`; the content alone may hold `\\u`
escapes of non-ASCII characters, respelled as orjson spells them for its answer key, in C)
holding one chat completion whose sole message answers with a text, or with tool calls alone,
is read by one C call, straight into the facts `fast.shapes.Chat.facts` writes for it; the
rules those facts follow (`parse.usage.settle`, the answer keys, the facts' constructor) are
the Python ones, called from C. The C scan says None for any line it is not sure of (another
shape, a key the shape does not state, a repeated key, an escaped id, a `\\u` or `\\/` escape,
a number with a fraction or beyond 18 digits, a function call, a refusal); the typed shapes
read that line. Runs of such lines are walked into token-table rows by one call
(`native_walk`). Where the extension was not built, the typed shapes read every line: slower,
the same facts.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from genledger.fast.answerkeys import collapse, key_of_spelled_bytes
from genledger.fast.extension import built
from genledger.fast.shapes import CHAT_FACTS, Chat, Unusual, sole_call
from genledger.parse.answer import SIGN, hash64
from genledger.parse.schema import POSITION, RESPONSES, Facts, states_of
from genledger.parse.usage import settle

LineFacts = Callable[[bytes], Facts | None]


def _call_answer(calls: bytes) -> tuple[int | None, bool] | None:
    """(answer key, empty output) of a sole message's tool calls (`shapes._sole_call`, their
    JSON value's bytes decoded there); None where that finds them unusual."""
    try:
        return sole_call(calls)
    except Unusual:
        return None


RowsWalk = Callable[[bytes, int, int, int, int, str, list[Any]], tuple[int, int]]


def _context() -> tuple[Any, ...]:
    """What the C reader calls and reads (`_chatline.c`'s `X_` items, in order): the facts'
    constructor, `settle`, the answer key, the two format names, the calls' answer, the
    answer key's collapse and hash and its sign, a row template (the position columns, then
    the constructor's constants and every other fact's default) and the places in a row of
    the facts the constructor takes."""
    taken = CHAT_FACTS.__code__.co_argcount
    names = states_of(CHAT_FACTS)[:taken]
    template = (*(column.default for column in POSITION), *CHAT_FACTS(*[None] * taken))
    places = tuple(RESPONSES.position(name) for name in names)
    return (
        CHAT_FACTS, settle, key_of_spelled_bytes, "openai_chat", "openai_completion",
        _call_answer, collapse, hash64, SIGN, template, places,
    )  # fmt: skip


CONTEXT = _context()


# the C reader and walk with their context bound; None where the extension was not built
_C = built("_chatline")
NATIVE: LineFacts | None = None if _C is None else partial(_C.chat_facts, CONTEXT)
WALK: RowsWalk | None = None if _C is None else partial(_C.chat_rows, CONTEXT)


def native_reader(shape: type[Any], clear: bool) -> LineFacts | None:
    """The native tier for a run of lines that `shape` read last, in a read that is `clear`
    (`rawtext.read_clear`); None where it does not apply."""
    if NATIVE is None or shape is not Chat or not clear:
        return None
    return NATIVE


def native_walk(shape: type[Any], clear: bool) -> RowsWalk | None:
    """`native_reader`'s walk over a run of lines: `walk(data, start, end, before, offset,
    file, rows)` appends the rows of the usual chat lines from `data[start]` on (each as
    `TableBuilder.add` makes it) and returns where it stopped and the lines before that;
    None where the native tier does not apply."""
    return WALK if native_reader(shape, clear) is not None else None
