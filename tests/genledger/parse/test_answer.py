"""Answer keys: the typed decoders (raw JSON text bytes) give the general path's key for any
text however it is written, and only whitespace at the ends is ignored."""

from __future__ import annotations

import json
import random
import re

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.fast import vector
from genledger.fast.answerkeys import key_of_escaped, key_of_spelled, key_of_spelled_bytes
from genledger.fast.lines import fast_facts
from genledger.fast.rawtext import NOTHING_PLAIN, bytes_flags, inspect
from genledger.parse.answer import (
    SIGN,
    escaped,
    hash64,
    key_of_texts,
)
from genledger.parse.formats import response_facts
from genledger.parse.schema import RESPONSES
from genledger.synth.records import WRITERS

from ..hard_lines import RESPONSE_LINES

HASH = RESPONSES.fact("answer_hash")
# Texts with what makes escaping hard: quotes, backslashes (before n, u, ...), control and
# whitespace characters at the ends and inside, non-ASCII, slashes, `</` (not `</think>`).
PIECES = st.sampled_from(
    ['"', "\\", "\\n", "\\u0041", "/", "\n", "\t", "\r", "\x0b", "\x0c", "\x01", " ", "  ",
     "é", "解", "😀", "\u2028", "a", "word", "</b>"]
)  # fmt: skip
TEXTS = st.lists(PIECES, max_size=12).map("".join)
WRITES = ("orjson", "ascii", "python", "slashes")


def written(record: dict, how: str) -> bytes:
    """One record as a writer writes it: orjson, json with \\u escapes, json keeping
    non-ASCII, or with every `/` escaped (as some writers do)."""
    if how == "orjson":
        return orjson.dumps(record)
    if how == "ascii":
        return json.dumps(record).encode()
    text = json.dumps(record, ensure_ascii=False)
    return (text.replace("/", "\\/") if how == "slashes" else text).encode()


def keys(line: bytes) -> tuple[list[object], object]:
    """(the fast tiers' keys, the general path's) of a one-record line: the fast ones read
    alone and as a read's line, whose flags may let its texts be hashed as they are."""
    vector.load()
    found = []
    for flags in (
        NOTHING_PLAIN,
        inspect(line + b"\n", len(line) + 1),
        bytes_flags(line, len(line)),
    ):
        fast = fast_facts(line, "responses", flags)
        found.append(None if fast is None else fast[0][HASH])
    general = response_facts(orjson.loads(line))
    return found, general[HASH]


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.sampled_from(sorted(WRITERS)), st.sampled_from(WRITES))
def test_every_writer_and_text_gives_the_fast_path_the_general_key(
    text: str, writer: str, how: str
) -> None:
    record = WRITERS[writer]("r1", 3, 5, random.Random(1))
    for place in ("text", "content", "generated_text"):
        _replace_text(record, place, text)
    fast, general = keys(written(record, how))
    # None: the fast tiers left the line to the general path
    assert all(key is None or key == general for key in fast), fast


def _replace_text(record: object, key: str, text: str) -> None:
    if isinstance(record, dict):
        for k, v in record.items():
            if k == key and isinstance(v, str):
                record[k] = text
            else:
                _replace_text(v, key, text)
    elif isinstance(record, list):
        for v in record:
            _replace_text(v, key, text)


def test_the_hard_lines_get_the_same_key_on_every_path() -> None:
    for line in RESPONSE_LINES:
        fast = fast_facts(line, "responses")
        if fast is None:
            continue
        records = orjson.loads(line)
        general = [response_facts(r) for r in (records if isinstance(records, list) else [records])]
        assert [f[HASH] for f in fast] == [g[HASH] for g in general], line[:120]


def test_whitespace_at_the_ends_is_ignored_and_runs_inside_it_are_one_space() -> None:
    assert key_of_texts([" answer\n"]) == key_of_texts(["answer"]) == key_of_texts(["\tanswer  "])
    assert (
        key_of_texts(["an  answer"])
        == key_of_texts(["an\n\tanswer"])
        == key_of_texts(["an answer"])
    )
    assert key_of_texts(["an answer"]) != key_of_texts(["ananswer"])
    assert key_of_texts(["", " \n"]) is None


def test_reasoning_is_no_part_of_the_answer() -> None:
    a = WRITERS["gemini"]("r1", 3, 5, random.Random(1), thought="one way", text="4")
    b = WRITERS["gemini"]("r2", 3, 5, random.Random(1), thought="another", text="4")
    assert response_facts(a)[HASH] == response_facts(b)[HASH] is not None


SPACED = st.lists(
    st.sampled_from(["a", "b", "é", " ", "  ", "\n", "\t", "\r\n", "\\", '"', "\u00a0", "x y"]),
    max_size=12,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(SPACED, SPACED)
def test_whitespace_runs_collapse_alike_on_the_fast_and_the_general_path(a: str, b: str) -> None:
    # answers that differ only in runs of ASCII whitespace share a key on both paths
    def line(text: str) -> bytes:
        message = {"role": "assistant", "content": text}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        usage = {"prompt_tokens": 3, "completion_tokens": 4}
        record = {"id": "c", "object": "chat.completion", "choices": [choice], "usage": usage}
        return orjson.dumps(record)

    facts = [response_facts(orjson.loads(line(t)))[HASH] for t in (a, b)]
    fast = [fast_facts(line(t), "responses")[0][HASH] for t in (a, b)]
    assert facts == fast
    words = [re.split(r"[ \t\n\r]+", t.strip(" \t\n\r")) for t in (a, b)]
    assert (facts[0] == facts[1]) == (words[0] == words[1])


# Runs of every whitespace, raw and as text that looks like an escape (`\\n`, `u000b`).
RUNS = st.lists(
    st.sampled_from(
        [" ", "  ", "   ", "\n", "\t", "\r", "\x0b", "\x0c", "\\", "\\n", "u000b", "a", "é", '"',
         "\x01", "/"]
    ),
    max_size=30,
).map("".join)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(RUNS)
def test_an_answer_as_orjson_escapes_it_has_its_texts_key(text: str) -> None:
    # the escaped bytes are collapsed without decoding them, exactly as the text is
    body = escaped(text)
    assert key_of_escaped([body]) == key_of_texts([text])
    assert key_of_spelled(b'"' + body + b'"') == key_of_texts([text])
    assert key_of_spelled_bytes(b'"' + body + b'"') == key_of_texts([text])


def test_a_bytes_key_that_skips_the_collapse_is_caught() -> None:
    # planted bug: the usual answer's test without the backslash check (a `\n` kept as is)
    def planted(data: bytes) -> int | None:
        if len(data) > 3 and data[1] not in b" \\" and data[-2] != 32 and b"  " not in data:
            return hash64(data[1:-1]) - SIGN
        return key_of_spelled(data)

    def differs(text: str) -> bool:
        spelled = b'"' + escaped(text) + b'"'
        return planted(spelled) != key_of_texts([text])

    assert differs("a\nb")
    assert not differs("a b")
