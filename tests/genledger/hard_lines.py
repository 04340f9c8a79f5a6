"""Hard JSONL lines and record strategies shared by the speed-lever tests (fast path vs general)."""

from __future__ import annotations

import contextlib
import json
import random
from typing import Any

import orjson
from hypothesis import strategies as st

from genledger import synth

RNG = random.Random(5)
BIG = 10**30


def _dumps(record: Any) -> bytes:
    return orjson.dumps(record)


SYNTH = [_dumps(w(f"id-{i}", 5 + i, 9 + i, RNG)) for i, w in enumerate(synth.WRITERS.values())]
CHAT = synth.openai_chat("c1", 3, 4, RNG)
RESPONSE_LINES: list[bytes] = [
    *SYNTH,
    _dumps([synth.sglang_generate(f"b{i}", 2, 3, RNG) for i in range(3)]),  # an SGLang batch
    b"[]",
    b'[{"completion_tokens": 1}, 5]',
    b'{"object": "text_completion", "choices": [{"text": "x</think>"}], "usage": '
    b'{"completion_tokens": 2, "prompt_tokens": 1}}',
    b'{"id": "w", "response": ' + _dumps(CHAT) + b"}",
    b'{"custom_id": "f1", "response": null, "error": {"code": "server_error"}}',
    b'{"custom_id": "f2", "response": {"status_code": 500, "body": {}}, "error": null}',
    b'{"request_id": "v", "outputs": [{"text": "a", "token_ids": [1, 2, 3], '
    b'"finish_reason": "length"}], "prompt_token_ids": [1]}',
    b'{"output_ids": [1, 2, 3]}',
    b'{"output_ids": [], "input_ids": [ ]}',
    b'{"output_ids": [[1, 2], [3]], "completion_tokens": 3}',
    b'{"output_ids": [1, "2", 3], "completion_tokens": 3}',
    b'{"output_ids": [1.5, true, null, -4, 1e3], "completion_tokens": 9}',
    b'{"output_ids": [ 1 ,\t2 ], "completion_tokens": 2}',
    b'{"output_ids": null, "outputs": [{"token_ids": [4, 5]}]}',
    b'{"output_ids": "abc"}',
    b'{"output_ids": 7}',
    b'{"output_ids": [1], "output_ids": [1, 2, 3], "completion_tokens": 1}',
    b'{"out\\u0070ut_ids": [1, 2], "completion_tokens": 9}',
    b'{"completion_tokens": true}',
    b'{"completion_tokens": "12"}',
    b'{"completion_tokens": 12.0}',
    b'{"completion_tokens": -3}',
    b'{"completion_tokens": 0, "output_ids": [1, 2, 3, 4]}',
    b'{"completion_tokens": ' + str(BIG).encode() + b"}",
    b'{"completion_tokens": 18446744073709551615}',
    b'{"completion_tokens": ' + b"9" * 400 + b"}",
    b'{"completion_tokens": 1e999}',
    b'{"completion_tokens": 1, "unknown": 1e999}',
    b'{"completion_tokens": 1, "output_ids": [1, 1e999]}',
    b'{"completion_tokens": 1, "output_ids": [1, 1E400, 2]}',
    b'{"completion_tokens": 1, "completion_tokens": 2}',
    b'{"id": ' + str(BIG).encode() + b', "completion_tokens": 1}',
    b'{"id": 12345678901234567890123, "completion_tokens": 1}',
    b'{"id": "12345678901234567890123", "completion_tokens": 1}',
    b'{"meta_info": {"id": 7, "completion_tokens": 3, "finish_reason": {"type": "stop"}}}',
    b'{"meta_info": null, "completion_tokens": 3, "finish_reason": {"type": "length"}}',
    b'{"meta_info": "weird", "usage": [], "completion_tokens": 3}',
    b'{"text": "a<\\/think>b", "completion_tokens": 1}',
    b'{"text": "a\\u003c/think>b", "completion_tokens": 1}',
    b'{"choices": [{"message": {"content": [{"type": "text", "text": "x</think>"}], '
    b'"reasoning": null}}], "usage": {"completion_tokens": 1}}',
    b'{"choices": [{"message": {"content": "x</think>", "reasoning_content": "r"}}], '
    b'"usage": {"completion_tokens": 1}}',
    '{"text": "数据 — ü", "completion_tokens": 2}'.encode(),
    json.dumps({"text": "数据 ü </think>", "completion_tokens": 2}).encode(),  # \\u escapes
    b'{"text": "\xff\xfe", "completion_tokens": 1}',
    b'{"unknown": "\xff", "completion_tokens": 1}',
    b'{"unknown": "\xed\xa0\x80", "completion_tokens": 1}',
    b'{"text": "\\ud800", "completion_tokens": 1}',
    b'{"unknown": "\\ud800", "completion_tokens": 1}',
    b'{"completion_tokens": 1, "output_ids": [1, 2,]}',
    b'{"completion_tokens": 1',
    b'  {"completion_tokens": 1}  ',
    b'{"completion_tokens": 1}\r',
    b"\xef\xbb\xbf" + b'{"completion_tokens": 1}',
    b'"just a string"',
    b"42",
    b"null",
    b"{}",
    b"\x00\x00",
    b"NaN",
    b'{"completion_tokens": NaN}',
]
TOKENIZED_LINES: list[bytes] = [
    _dumps(synth.tokenized(3, 4, RNG)),
    b'{"input_ids": [[1, 2, 3]], "loss_mask": [[0, 1, 1]]}',
    b'{"input_ids": [[1, 2], [3]], "loss_mask": [0, 1, 1]}',
    b'{"input_ids": [[]], "loss_mask": []}',
    b'{"input_ids": [], "loss_mask": []}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [0, 0, 0]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [0, 1]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [1, 2, 1]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [10, 0, 1]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [-1, 1, 1]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [1.0, 0, 1]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [true, false, 1]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [ 1 , 0 ,\n1 ]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [null, 0, 1]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": "1,1,1"}',
    b'{"input_ids": "1 2 3"}',
    b'{"input_ids": null, "loss_mask": [1]}',
    b'{"loss_mask": [1, 1]}',
    b'{"id": 3, "input_ids": [1, 2], "attention_mask": [1, 1], "labels": [-100, 5]}',
    b'{"input_ids": [1, 2], "extra": {"k": "v"}}',
    b'[{"input_ids": [1]}, {"input_ids": [1, 2], "loss_mask": [1, 1]}]',
    b'{"input_ids": [1, 2',
    b'{"input_ids": [1, "\xff"]}',
    b'{"input_ids": [1], "labels": ["\xff"]}',
    b'{"input_ids": [1], "labels": ["ok", "\\ud800"]}',
    b'{"input_ids": [1], "attention_mask": [1e999]}',
    b'{"input_ids": [1], "position_ids": [0, 1.5e3], "attention_mask": [1, 1]}',
]

# --- hypothesis: records in every shape, with the keys the fact functions read ---
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=3000),
    st.integers(min_value=2**62, max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(["stop", "length", "</think>", "a<\\/think>", "数据", "", "text_completion"]),
)
IDS = st.one_of(
    st.lists(st.integers(min_value=-2, max_value=200_000), max_size=30),
    st.lists(st.lists(st.integers(min_value=0, max_value=9), max_size=4), max_size=3),
    st.lists(st.sampled_from([0, 1]), max_size=30),
    st.lists(SCALARS, max_size=4),
    SCALARS,
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(
                ["completion_tokens", "prompt_tokens", "finish_reason", "type", "id", "text",
                 "content", "message", "reasoning_content", "reasoning", "usage", "body",
                 "choices", "status_code", "code", "generated_tokens", "token_ids", "x"]
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=8,
)  # fmt: skip
RESPONSE_KEYS = [
    "id", "custom_id", "object", "choices", "usage", "meta_info", "response", "error", "details",
    "outputs", "text", "generated_text", "reasoning_content", "completion_tokens",
    "prompt_tokens", "finish_reason", "model", "zzz_unknown",
]  # fmt: skip
TOKENIZED_KEYS = ["id", "text", "zzz_unknown"]


def records(keys: list[str], id_keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with any of `keys` (JSON values) and of `id_keys` (id-array-like values)."""
    return st.builds(
        lambda a, b: {**a, **b},
        st.dictionaries(st.sampled_from(keys), JSON, max_size=5),
        st.dictionaries(st.sampled_from(id_keys), IDS, max_size=len(id_keys)),
    )


def encodings(value: Any) -> st.SearchStrategy[bytes]:
    """`value` written as different writers would: orjson, json (ASCII escapes), spaced."""
    written = [
        json.dumps(value).encode(),
        json.dumps(value, ensure_ascii=False, separators=(" , ", " : ")).encode(),
    ]
    with contextlib.suppress(orjson.JSONEncodeError):  # ints beyond 64 bits: json only
        written.append(orjson.dumps(value))
    return st.sampled_from(written)


RESPONSE_RECORDS = records(RESPONSE_KEYS, ["output_ids", "input_ids"])
TOKENIZED_RECORDS = records(TOKENIZED_KEYS, ["input_ids", "loss_mask", "attention_mask"])
