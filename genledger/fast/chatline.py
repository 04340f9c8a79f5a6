"""The usual OpenAI chat completion line read in C (`_chatline.c`): the native tier.

The same chat object one level down is read alike: under `response` (`fast.shapes.Wrapped`)
or in an OpenAI Batch output line (`fast.shapes.Batch`), each with its own record id and
format name; so are SGLang /generate records (`fast.shapes.SGLang`) and flat ones
(`fast.shapes.Flat`), their id arrays counted and their text keyed in the same scan, their
facts made by their shapes' constructors (`KINDS`); the walk also takes SGLang batch lines
(an array of records: a row each, its index the row's item).

A line of a clear read (`fast.rawtext.read_clear`: valid UTF-8), without a think tag, a `\\u`
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

from genledger.fast.answerkeys import key_of_spelled_bytes
from genledger.fast.extension import built
from genledger.fast.shapes import Batch, Chat, Flat, SGLang, Unusual, Wrapped, sole_call
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


# The kinds of line the C scan reads (its `K_` numbers): the shape, and its two format names:
# of a chat completion and of a text completion in it (`Chat.facts`, `Wrapped.facts`,
# `Batch.facts`: a wrapper names both alike), of a flat record with a count and of one
# without (`Flat.facts`); the SGLang constructor names its own.
KINDS: dict[type[Any], tuple[int, str, str]] = {
    Chat: (0, "openai_chat", "openai_completion"),
    Wrapped: (1, "wrapped_openai", "wrapped_openai"),
    Batch: (2, "openai_batch", "openai_batch"),
    SGLang: (3, "", ""),
    Flat: (4, "flat", "derived"),
}


def _context(shape: type[Any]) -> tuple[Any, ...]:
    """What the C reader calls and reads for lines of `shape` (`_chatline.c`'s `X_` items,
    in order): the facts' constructor, `settle`, the answer key, the two format names, the
    calls' answer, a row template (the position columns, then the constructor's constants and
    every other fact's default), the places in a row of the facts the constructor takes, and
    the kind of line."""
    kind, chat, completion = KINDS[shape]
    maker = shape.MAKER
    taken = maker.__code__.co_argcount
    names = states_of(maker)[:taken]
    template = (*(column.default for column in POSITION), *maker(*[None] * taken))
    places = tuple(RESPONSES.position(name) for name in names)
    return (
        maker, settle, key_of_spelled_bytes, chat, completion, _call_answer, template, places,
        kind,
    )  # fmt: skip


CONTEXTS = {shape: _context(shape) for shape in KINDS}
CONTEXT = CONTEXTS[Chat]


_C = built("_chatline")
# the C reader and walk of each kind of line with its context bound; none where the
# extension was not built
BUILT: dict[type[Any], tuple[LineFacts, RowsWalk]] = (
    {}
    if _C is None
    else {
        shape: (partial(_C.chat_facts, context), partial(_C.chat_rows, context))
        for shape, context in CONTEXTS.items()
    }
)
NATIVE: LineFacts | None = BUILT[Chat][0] if BUILT else None
WALK: RowsWalk | None = BUILT[Chat][1] if BUILT else None


def native_reader(shape: type[Any], clear: bool) -> LineFacts | None:
    """The native tier for a run of lines that `shape` read last, in a read that is `clear`
    (`rawtext.read_clear`); None where it does not apply."""
    if not clear or shape not in BUILT:
        return None
    return NATIVE if shape is Chat else BUILT[shape][0]


def native_walk(shape: type[Any], clear: bool) -> RowsWalk | None:
    """`native_reader`'s walk over a run of lines: `walk(data, start, end, before, offset,
    file, rows)` appends the rows of the usual chat lines from `data[start]` on (each as
    `TableBuilder.add` makes it) and returns where it stopped and the lines before that;
    None where the native tier does not apply."""
    if not clear or shape not in BUILT:
        return None
    return WALK if shape is Chat else BUILT[shape][1]
