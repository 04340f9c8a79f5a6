"""The usual OpenAI chat completion line read in C (`_chatline.c`): the native tier.

A line of a spelled read (`fast.rawtext.SPELLED`: valid UTF-8, no think tag, no `\\u` or
`\\/` escape) holding one chat completion whose sole message answers with a text is read by
one C call, straight into the facts `fast.shapes.Chat.facts` writes for it; the rules those
facts follow (`parse.usage.settle`, the answer key, the facts' constructor) are the Python
ones, called from C. The C scan says None for any line it is not sure of (another shape, a
key the shape does not state, a repeated key, an escaped id, a `\\u` escape, a number with
a fraction or beyond 18 digits, a call, a refusal); the typed shapes read that line. Where
the extension was not built, the typed shapes read every line: slower, the same facts.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from genledger.fast.answerkeys import key_of_spelled_bytes
from genledger.fast.rawtext import SPELLED
from genledger.fast.shapes import CHAT_FACTS, Chat
from genledger.parse.schema import Facts
from genledger.parse.usage import settle

LineFacts = Callable[[bytes], Facts | None]


def _built() -> LineFacts | None:
    """The C reader with its context bound, or None if the extension was not built."""
    try:
        from genledger.fast._chatline import chat_facts
    except ImportError:  # installed without a compiler (the build is optional)
        return None
    context = (CHAT_FACTS, settle, key_of_spelled_bytes, "openai_chat", "openai_completion")
    return partial(chat_facts, context)


NATIVE: LineFacts | None = _built()


def native_reader(shape: type[Any], plain: int | None) -> LineFacts | None:
    """The native tier for a run of lines that `shape` read last, in a read whose lines are
    all `plain` (`rawtext.read_plain`); None where it does not apply."""
    if NATIVE is None or shape is not Chat or plain != SPELLED:
        return None
    return NATIVE
