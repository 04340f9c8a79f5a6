"""The common stream delta events read in C (`_deltas.c`): what `StreamState.extend` needs of
an event line, without decoding it into Python objects.

Most of a stream file's lines are deltas that carry on the request before them (an OpenAI-style
chat chunk's `delta.content`, Anthropic's and Vertex Claude's `content_block_delta`, Cohere's
`content-delta`, Bedrock's `contentBlockDelta`). `delta_of(line)` reads such a line in one C
call into (family, request id, whether it names a model, text, reasoning); the caller
(`refresh.assemble.Assembler.delta`) writes them into the latest open request of the family
as `StreamState.extend` would, when `extend` would take the event. The C scan says None for
any line it is not sure of; which keys it must not pass over (those its family reads below,
its error keys, the keys that tell a family) is derived here from the families
(`parse.streams`), and sent with each call. Where the extension was not built, `delta_of` is
None and every line takes the generated readers (`fast.events`).

Tested equal to those readers and `extend` on every real stream line, on generated events
and with planted bugs (tests/genledger/fast/test_deltas.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from genledger.fast.extension import built
from genledger.parse.paths import ANY
from genledger.parse.streams import (
    BY_NAME,
    ERROR_KEYS,
    EXACT,
    REST,
    REST_CONDITIONS,
    TOLD_BY,
    TOOL_NOISE,
    Family,
)

# The families of the C scan's kinds, in its order (`_deltas.c`'s `K_`).
KINDS: tuple[Family, ...] = tuple(
    BY_NAME[name]
    for name in (
        "openai_chat", "anthropic", "cohere", "bedrock_converse", "openai_responses",
        "openai_completion",
    )
)  # fmt: skip
# the top-level keys the C scan takes only null (or absent): so an alternative telling a
# family by a text and their absence (`object=text_completion & !usage`) tells it there
NULLED = frozenset({"usage"})

# kind, id, whether it names a model, text, reasoning, a tool call's text (None: none)
Delta = tuple[int, str | None, bool, str | None, str | None, str | None]
DeltaOf = Callable[[bytes], Delta | None]
Told = tuple[bytes, bytes, int, bool]  # key, text, kind, exact (else a prefix)


def read_names(family: Family) -> tuple[bytes, ...]:
    """Every key path a family's events are read through, dotted (`choices.delta.content`,
    and each of its prefixes; lists left out of the names), with the error keys and the keys
    that tell a family at the top: the keys the C scan may not pass over."""
    names = {key.encode() for key in (*ERROR_KEYS, "error", *TOLD_BY)}
    for path in family.paths():
        keys = [key for key, _ in path.steps]
        if ANY in keys:  # any key may be read there: no scan of this family
            raise ValueError(f"{family.name}: a path through any key ({path.text})")
        names |= {".".join(keys[: i + 1]).encode() for i in range(len(keys))}
    return tuple(sorted(names))


def settling(family: Family) -> set[tuple[str, str]]:
    """The (key, text) pairs that make an event of `family` a start, an end or trailing
    usage: such events are left to the readers (each test one text, or one on keys the scan
    reads itself: a chat chunk's `!choices[]`, which its one choice rules out)."""
    found = set()
    for alternatives in (family.start, family.end, family.trailing):
        for alt in alternatives:
            for c in alt:
                if c.op == "eq" and len(c.path.steps) == 1 and isinstance(c.value, str):
                    found.add((c.path.top, c.value))
    return found


def _telling(alt: tuple[Any, ...]) -> tuple[str, str, bool] | None:
    """(key, text, exact) of an alternative of the families tested one by one that one told
    text settles, for the C scan: a prefix alone, or one text with keys of `NULLED` absent."""
    first, *rest = alt
    if len(first.path.steps) != 1 or not isinstance(first.value, str):
        return None
    if first.op == "prefix" and not rest:
        return first.path.top, first.value, False
    nulled = all(c.op == "absent" and c.path.text in NULLED for c in rest)
    return (first.path.top, first.value, True) if first.op == "eq" and nulled else None


def told_texts() -> tuple[tuple[Told, ...], tuple[bytes, ...], list[set[bytes]]]:
    """The texts that tell the scan's kinds (`parse.streams.EXACT`'s, but a start's, an end's
    and trailing usage's; and those of the families tested one by one, `_telling`), the
    texts of a prefix that settle a request, and per kind the keys an alternative tested
    before its own needs (the scan leaves an event holding one to the readers)."""
    told: list[Told] = []
    settled: set[bytes] = set()
    before: list[set[bytes]] = [set() for _ in KINDS]
    for kind, family in enumerate(KINDS):
        stops = settling(family)
        told += [(key.encode(), text.encode(), kind, True)
                 for (key, text), found in EXACT.items()
                 if found is family and (key, text) not in stops]  # fmt: skip
        for index, alt in enumerate(REST_CONDITIONS):
            found = _telling(alt) if REST[index][0] is family else None
            if found is None:
                continue
            key, text, exact = found
            assert not any(t.startswith(text) for _, t in EXACT), text
            told.append((key.encode(), text.encode(), kind, exact))
            settled |= {t.encode() for k, t in stops if k == key and not exact}
            before[kind] |= {k.encode() for _, needed, _ in REST[:index] for k in needed}
    return tuple(told), tuple(sorted(settled)), before


TOLD, SETTLED, BEFORE = told_texts()
NAMES = tuple(
    tuple(sorted({*read_names(family), *BEFORE[kind]})) for kind, family in enumerate(KINDS)
)
NOISE = tuple(sorted(key.encode() for key in TOOL_NOISE))  # a tool call's keys left out
CONTEXT = (NAMES, TOLD, SETTLED, NOISE)  # what the C scan is sent with each line

_C = built("_deltas")
delta_of: DeltaOf | None = None if _C is None else partial(_C.delta, *CONTEXT)
