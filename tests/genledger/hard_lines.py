"""Hard JSONL lines and record strategies shared by the speed-lever tests (fast path vs general)."""

from __future__ import annotations

import contextlib
import json
import random
from typing import Any

import orjson
from hypothesis import strategies as st

from genledger.demo import synth

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
    b'{"input_ids": [1, 2], "loss_mask": [4611686018427387904, 4611686018427387905]}',
    b'{"input_ids": [1], "loss_mask": [18446744073709551616]}',
    b'{"input_ids": [1, 2], "loss_mask": [-9223372036854775808, -1]}',
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

# --- the typed shapes (genledger/fast/shapes.py): near-misses of every shape --------------
DIGITS_400 = b"1" * 400
SHAPE_LINES: list[bytes] = [
    b'{"meta_info": {"completion_tokens": 3, "e2e_latency": ' + DIGITS_400 + b"}}",
    b'{"meta_info": {"completion_tokens": 3, "e2e_latency": 1e999}}',
    b'{"meta_info": {"completion_tokens": 3, "cached_tokens": ' + DIGITS_400 + b"}}",
    b'{"meta_info": {"completion_tokens": 3, "finish_reason": {"type": "stop", "matched": '
    + DIGITS_400
    + b"}}}",
    b'{"meta_info": {"completion_tokens": 9223372036854775807, "id": ""}, "output_ids": []}',
    b'{"meta_info": {"completion_tokens": 9223372036854775808}, "output_ids": [1]}',
    b'{"meta_info": {"completion_tokens": -9223372036854775809}}',
    b'{"meta_info": {"completion_tokens": 3, "prompt_tokens": null, "finish_reason": null}}',
    b'{"meta_info": {"completion_tokens": 3, "finish_reason": {"type": 5}}}',
    b'{"meta_info": {"completion_tokens": 3, "finish_reason": {"type": "abort", "message": "x"}}}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "a\\ud800b"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "a\xed\xa0\x80b"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "a\xc3"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "x<\\/think>"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "x\\u003c/think>"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "x</think>", "reasoning_content": null}',
    b'{"meta_info": {"completion_tokens": 3}, "text": null, "output_ids": null}',
    b'{"meta_info": {"completion_tokens": 3}, "output_ids": [[1, 2], [3]]}',
    b'{"meta_info": {"completion_tokens": 3}, "id": "top"}',
    b'{"meta_info": {"completion_tokens": 3}, "meta_info": {"completion_tokens": 4}}',
    b'{"meta_info": {"completion_tokens": 3}, "meta_info": null, "completion_tokens": 2}',
    # texts kept raw (genledger/fast/rawtext.py): every way to spell `</think>`, bad strings,
    # non-strings
    b'{"meta_info": {"completion_tokens": 3}, "text": "x</thin\\u006b>"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "x\\u003C\\u002F\\u0074hink\\u003e"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "x\\\\u003c/think>"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "x<\\\\/think>"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "<think>a</think", "id": "</think>"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "smile \\ud83d\\ude00 \\u6570"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "lone \\udc00 low"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "pair \\uD83D\\uDE00 upper"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "caf\\u00e9 \\u00"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "caf\\u00e9 \\u00a0 ok"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "end \\ud83d"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "\\ud83d\\u0041 high then A"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "\\ude00\\ud83d reversed"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "x\\u003c\\/think\\u003E"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "x<\\u002fthink>"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "raw \x01 control"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "bad \xc3\x28 utf8"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": "overlong \xc0\xaf"}',
    b'{"meta_info": {"completion_tokens": 3}, "text": 5}',
    b'{"meta_info": {"completion_tokens": 3}, "text": ["</think>"]}',
    b'{"meta_info": {"completion_tokens": 3}, "text": {"a": "</think>"}}',
    b'{"meta_info": {"completion_tokens": 3}, "text": true}',
    b'{"completion_tokens": 2, "text": "\xe6\x95\xb0 ok", "output_ids": [1, 2]}',
    b'{"details": {"generated_tokens": 4}, "generated_text": "a<\\/think>"}',
    b'{"details": {"generated_tokens": 4}, "generated_text": "\xff"}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": "ok", '
    b'"reasoning_content": "\xff"}}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": "ok", '
    b'"refusal": 7}}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": "ok", '
    b'"reasoning": "x\\ud800"}}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": "a\\u003c/think>", '
    b'"reasoning": null}}]}',
    b'{"completion_tokens": null, "output_ids": [1, 2], "input_ids": [1], "finish_reason": "x"}',
    b'{"completion_tokens": null, "output_ids": null}',
    b'{"completion_tokens": null}',
    b'{"output_ids": [1, 2], "input_ids": null}',
    b'{"output_ids": [1, 2], "input_ids": [[1], [2, 3]]}',
    b'{"completion_tokens": 2, "input_ids": [1, 1e999]}',
    b'{"completion_tokens": 2, "input_ids": ["\xff"]}',
    b'{"id": 5, "completion_tokens": 2}',
    b'{"id": "", "request_id": "r", "completion_tokens": 2, "finish_reason": {"type": "stop"}}',
    b'{"usage": {"completion_tokens": 2}, "choices": []}',
    b'{"usage": {"completion_tokens": 2}, "choices": [], "object": "text_completion"}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"text": "a"}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": "a</think>"}}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {}}, '
    b'{"message": {"content": "a</think>", "reasoning": "r"}}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": null}, '
    b'"finish_reason": "stop"}, {"message": {}, "finish_reason": "length"}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": [{"type": "text", '
    b'"text": "x"}]}}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {}, '
    b'"logprobs": {"content": []}}]}',
    b'{"usage": {"completion_tokens": 2, "prompt_tokens": true}}',
    b'{"usage": null, "completion_tokens": 4}',
    b'{"usage": {"completion_tokens": null}, "completion_tokens": 4}',
    b'{"response": {"body": {"usage": {"completion_tokens": 2}}}}',
    b'{"response": {"body": {"usage": {"completion_tokens": 2}}, "status_code": 200}}',
    b'{"response": {"body": {"usage": {"completion_tokens": 2}}, "status_code": 500}, '
    b'"custom_id": "c"}',
    b'{"response": {"body": {"usage": {"completion_tokens": 2}}, "status_code": 500}}',
    b'{"response": {"body": {"usage": {"completion_tokens": 2}}}, "custom_id": "", "id": "i"}',
    b'{"response": {"body": {"usage": {"completion_tokens": 2}}}, "error": {"code": "x"}}',
    b'{"response": {"body": {"usage": {"completion_tokens": 2}, "object": "text_completion"}}}',
    b'{"response": {"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": "a"}, '
    b'"finish_reason": "stop"}]}, "id": "w"}',
    b'{"response": {"usage": {"completion_tokens": 2}}, "custom_id": "w"}',
    b'{"response": {"usage": {"completion_tokens": 2}, "status_code": 200}}',
    b'{"details": {"generated_tokens": 4, "finish_reason": "eos_token", "seed": null}}',
    b'{"details": {"generated_tokens": 4, "seed": 18446744073709551615}}',
    b'{"details": {"generated_tokens": 4}, "generated_text": "a</think>"}',
    b'{"details": {"generated_tokens": 4, "finish_reason": {"type": "length"}}}',
    b'[{"meta_info": {"completion_tokens": 1}}, {"completion_tokens": 2}]',
    b'[{"meta_info": {"completion_tokens": 1}}, {"meta_info": {"completion_tokens": 2}}]',
    b'[{"meta_info": {"completion_tokens": 1}}, null]',
    b'[{"meta_info": {"completion_tokens": 1}}, {"meta_info": {"completion_tokens": 1}]',
]
TOKENIZED_SHAPE_LINES: list[bytes] = [
    b'{"input_ids": [1, 2, 3], "loss_mask": [0,1,1]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [0, 1,1]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [1,0,10]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [101]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [1,0,-0]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [0,1,2]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [null,1,0]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [1]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [ ]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": null}',
    b'{"input_ids": null, "loss_mask": [1,1]}',
    b'{"input_ids": [1], "id": ' + DIGITS_400 + b"}",
    b'{"input_ids": [1], "id": 9223372036854775808}',
    b'{"input_ids": [1], "id": "x\\ud800"}',
    b'{"input_ids": [1], "id": null}',
    b'[{"input_ids": [1], "loss_mask": [1]}, {"input_ids": [2, 3]}]',
    b'{"input_ids": [1], "loss_mask": [' + b"1," * 300_000 + b"0]}",
]

TEXTS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["a</think>b", "x<\\/think>", "</think", "数据 ü — “q”", "tab\there\nnl", "\u2028\x7f", ""]
    ),
)
INTS = st.one_of(
    st.integers(min_value=-3, max_value=5000),
    st.integers(min_value=2**63 - 2, max_value=2**64 + 2),
    st.integers(min_value=-(2**63) - 2, max_value=-(2**63) + 2),
)
ODD = st.one_of(
    st.none(),
    st.booleans(),
    INTS,
    st.floats(allow_nan=False, allow_infinity=False),
    TEXTS,
    st.lists(st.integers(min_value=0, max_value=3), max_size=3),
    st.lists(
        st.dictionaries(st.sampled_from(["type", "text", "x"]), TEXTS, max_size=2), max_size=2
    ),
    st.dictionaries(st.sampled_from(["type", "completion_tokens", "x"]), INTS, max_size=2),
)
FINISHES = st.one_of(
    st.none(),
    st.sampled_from(["stop", "length", ""]),
    st.fixed_dictionaries(
        {"type": st.one_of(st.sampled_from(["stop", "length"]), ODD)},
        optional={"matched": st.one_of(INTS, TEXTS, st.none()), "length": INTS, "message": TEXTS},
    ),
)
MASKS = st.one_of(IDS, st.lists(st.sampled_from([0, 1]), max_size=40))
EXTRA_KEYS = ["zzz_unknown", "reasoning_content", "custom_id", "status_code", "usage", "meta_info",
              "completion_tokens", "error", "body", "choices", "text", "output_ids"]  # fmt: skip


def shaped(
    fields: dict[str, st.SearchStrategy[Any]], required: tuple[str, ...] = ()
) -> st.SearchStrategy[Any]:
    """Objects of one shape: each key optional (but `required`), each value usually of its
    type, sometimes odd; now and then a key of another shape; now and then not an object."""

    def maybe(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(values, values, values, ODD)

    objects = st.builds(
        lambda base, extra: {**base, **extra},
        st.fixed_dictionaries(
            {k: maybe(fields[k]) for k in required},
            optional={k: maybe(v) for k, v in fields.items() if k not in required},
        ),
        st.one_of(
            st.just({}), st.just({}), st.dictionaries(st.sampled_from(EXTRA_KEYS), ODD, max_size=1)
        ),
    )
    return objects


META = shaped(
    {"completion_tokens": INTS, "id": TEXTS, "prompt_tokens": INTS, "finish_reason": FINISHES,
     "weight_version": TEXTS, "cached_tokens": INTS, "e2e_latency": st.floats(width=32)},
    ("completion_tokens",),
)  # fmt: skip
SGLANG = shaped({"meta_info": META, "text": TEXTS, "output_ids": IDS}, ("meta_info",))
FLAT = shaped(
    {"id": TEXTS, "request_id": TEXTS, "text": TEXTS, "input_ids": IDS, "output_ids": IDS,
     "prompt_tokens": INTS, "completion_tokens": INTS, "finish_reason": FINISHES},
)  # fmt: skip
MESSAGE = shaped(
    {"content": TEXTS, "role": TEXTS, "reasoning_content": TEXTS, "reasoning": TEXTS,
     "refusal": TEXTS},
)  # fmt: skip
CHOICE = shaped(
    {"message": MESSAGE, "index": INTS, "finish_reason": FINISHES, "logprobs": st.none()},
    ("message",),
)
USAGE = shaped(
    {"completion_tokens": INTS, "prompt_tokens": INTS, "total_tokens": INTS}, ("completion_tokens",)
)
CHAT = shaped(
    {"usage": USAGE, "choices": st.lists(CHOICE, max_size=3), "id": TEXTS,
     "object": st.sampled_from(["chat.completion", "text_completion", "other"]),
     "created": INTS, "model": TEXTS, "system_fingerprint": TEXTS, "service_tier": TEXTS},
    ("usage",),
)  # fmt: skip
BATCH = shaped(
    {
        "response": shaped(
            {"body": CHAT, "status_code": st.sampled_from([200, 500, 404]), "request_id": TEXTS},
            ("body",),
        ),
        "custom_id": TEXTS,
        "id": TEXTS,
        "error": st.none(),
    },
    ("response",),
)
WRAPPED = shaped({"response": CHAT, "id": TEXTS}, ("response",))
TGI = shaped(
    {"details": shaped({"generated_tokens": INTS, "finish_reason": FINISHES, "seed": INTS},
                       ("generated_tokens",)),
     "generated_text": TEXTS},
    ("details",),
)  # fmt: skip
SHAPED_RESPONSES = st.one_of(SGLANG, FLAT, CHAT, BATCH, WRAPPED, TGI)
SHAPED_TOKENIZED = shaped({"id": st.one_of(TEXTS, INTS), "input_ids": IDS, "loss_mask": MASKS})
