"""Hard JSONL lines and record strategies shared by the speed-lever tests (fast path vs general)."""

from __future__ import annotations

import contextlib
import json
import random
import re
from typing import Any

import orjson
from hypothesis import strategies as st

from genledger.synth.records import WRITERS, openai_chat, sglang_generate, tokenized

RNG = random.Random(5)
BIG = 10**30


def _dumps(record: Any) -> bytes:
    return orjson.dumps(record)


SYNTH = [_dumps(w(f"id-{i}", 5 + i, 9 + i, RNG)) for i, w in enumerate(WRITERS.values())]
CHAT = openai_chat("c1", 3, 4, RNG)
# v2 formats: one line of each (docs/formats.md), their failures, stream pieces, odd counts
V2_LINES: list[bytes] = [
    b'{"id": "resp_1", "object": "response", "status": "completed", "error": null, "output": '
    b'[{"type": "reasoning", "id": "rs_1", "summary": []}, {"type": "message", "content": '
    b'[{"type": "output_text", "text": "4"}]}], "usage": {"input_tokens": 812, '
    b'"input_tokens_details": {"cached_tokens": 512}, "output_tokens": 1533, '
    b'"output_tokens_details": {"reasoning_tokens": 1280}}}',
    b'{"id": "resp_2", "object": "response", "status": "failed", "error": {"code": "x", '
    b'"message": "m"}, "output": [], "usage": {"input_tokens": 8, "output_tokens": 0}}',
    b'{"id": "resp_3", "object": "response", "status": "incomplete", "incomplete_details": '
    b'{"reason": "max_output_tokens"}, "output": [{"type": "reasoning", "summary": []}], '
    b'"usage": {"input_tokens": 8, "output_tokens": 64}}',
    b'{"id": "msg_1", "type": "message", "content": [{"type": "thinking", "thinking": "..."}, '
    b'{"type": "text", "text": "4"}], "stop_reason": "end_turn", "usage": {"input_tokens": 300, '
    b'"cache_creation_input_tokens": null, "cache_read_input_tokens": 2048, "output_tokens": 497, '
    b'"output_tokens_details": {"thinking_tokens": 328}}}',
    b'{"id": "msg_2", "type": "message", "content": [{"type": "thinking", "thinking": "..."}], '
    b'"stop_reason": "max_tokens", "usage": {"input_tokens": 3, "output_tokens": 99}}',
    b'{"custom_id": "r1", "result": {"type": "succeeded", "message": {"id": "m", "type": '
    b'"message", "content": [], "usage": {"input_tokens": 1, "output_tokens": 2}}}}',
    b'{"custom_id": "r2", "result": {"type": "errored", "error": {"type": "error", "error": '
    b'{"type": "invalid_request_error", "message": "prompt is too long"}}}}',
    b'{"custom_id": "r3", "result": {"type": "canceled"}}',
    b'{"custom_id": "r4", "result": {"type": "expired"}}',
    b'{"candidates": [{"content": {"role": "model", "parts": [{"text": "...", "thought": true}, '
    b'{"text": "4"}]}, "finishReason": "STOP"}], "responseId": "g1", "usageMetadata": '
    b'{"promptTokenCount": 2472, "cachedContentTokenCount": 1024, "candidatesTokenCount": 2353, '
    b'"thoughtsTokenCount": 4507}}',
    b'{"candidates": [{"content": {"parts": [{"text": "t", "thought": true}]}, "finish_reason": '
    b'"MAX_TOKENS"}], "usage_metadata": {"prompt_token_count": 4, "thoughts_token_count": 90}}',
    b'{"prompt_feedback": {"block_reason": "SAFETY"}, "usage_metadata": {"prompt_token_count": 4}}',
    b'{"key": "k1", "response": {"usageMetadata": {"candidatesTokenCount": 3}}}',
    b'{"key": "k2", "error": {"code": 3, "message": "bad"}}',
    b'{"id": "co-1", "finish_reason": "COMPLETE", "message": {"content": [{"type": "text", '
    b'"text": "4"}]}, "usage": {"tokens": {"input_tokens": 1456.0, "output_tokens": 2295.0}}}',
    b'{"usage": {"tokens": {"input_tokens": 1.5, "output_tokens": 22.5}}}',
    b'{"usage": {"tokens": {"output_tokens": 1e30}}}',
    b'{"request_id": "0", "prompt_token_ids": [1, 2, 3], "outputs": [{"token_ids": [5, 6, 7], '
    b'"finish_reason": "stop", "text": ""}, {"token_ids": [8, 9], "finish_reason": "length"}], '
    b'"num_cached_tokens": 2}',
    b'{"request_id": "1", "outputs": [{"token_ids": [1]}, {"token_ids": "x"}]}',
    b'{"request_id": "2", "outputs": [{"token_ids": [[1, 2]]}, {"token_ids": null}]}',
    b'{"id": "s", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": '
    b'{"content": "Hi"}, "finish_reason": null}], "usage": null}',
    b'{"id": "s", "object": "chat.completion.chunk", "choices": [], "usage": '
    b'{"prompt_tokens": 9, "completion_tokens": 3}}',
    b'{"index": 1, "token": {"id": 5, "text": " P", "special": false}, "generated_text": null, '
    b'"details": null}',
    b'{"index": 3, "token": {"id": 2}, "generated_text": "a</think>b", "details": '
    b'{"finish_reason": "eos_token", "generated_tokens": 3, "input_length": 531}}',
    b'{"text": "<think>r</think>4", "meta_info": {"id": "a", "completion_tokens": 0, '
    b'"finish_reason": {"type": "abort", "message": "Abort in waiting queue"}}}',
    b'{"text": "", "meta_info": {"id": "b", "completion_tokens": 40, "reasoning_tokens": 40, '
    b'"finish_reason": {"type": "length", "length": 40}}}',
    b'{"choices": [{"message": {"content": "", "reasoning_content": "r"}, "finish_reason": '
    b'"length"}], "usage": {"completion_tokens": 9, "completion_tokens_details": '
    b'{"reasoning_tokens": 9}, "prompt_tokens_details": {"cached_tokens": 4}}}',
    b'{"choices": [{"message": {"content": null, "tool_calls": [{"id": "t"}]}}], "usage": '
    b'{"completion_tokens": 9}}',
    b'{"choices": [{"message": {"content": "a"}}, {"message": {"content": "b"}}], "usage": '
    b'{"completion_tokens": 9, "reasoning_tokens": 2}}',
    b'{"id": "x", "type": "thing", "usage": {"input_tokens": 1, "output_tokens": 2}, '
    b'"content": "hi"}',
    b'{"custom_id": "b5", "response": {"status_code": 200, "body": {"object": "response", '
    b'"status": "completed", "output": [], "usage": {"input_tokens": 3, "output_tokens": 4}}}}',
]
RESPONSE_LINES: list[bytes] = [
    *SYNTH,
    *V2_LINES,
    _dumps([sglang_generate(f"b{i}", 2, 3, RNG) for i in range(3)]),  # an SGLang batch
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
    # each count within int64, the completion with its reasoning beside it beyond
    b'{"usage": {"completion_tokens": 9, "completion_tokens_details": {"reasoning_tokens": '
    b'9223372036854775807}}, "choices": [{"message": {"content": "a"}}]}',
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
    _dumps(tokenized(3, 4, RNG)),
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

# Long integer arrays counted from their bytes (genledger/fast/lift.py): hostile spellings,
# each short (the tests also lift every array, whatever its length) and long (the default).
_IDS = list(range(90, 190))
_MASK = [0] * 40 + [1] * 60


def _long(line: str) -> list[bytes]:
    """A line with `IDS`/`MASK` standing for short arrays and, again, for long ones."""
    short = line.replace("IDS", "[7, 8, 9]").replace("MASK", "[0, 1, 1]")
    spaced = line.replace("IDS", json.dumps(_IDS)).replace("MASK", json.dumps(_MASK))
    compact = line.replace("IDS", _dumps(_IDS).decode()).replace("MASK", _dumps(_MASK).decode())
    return [short.encode(), spaced.encode(), compact.encode()]


LIFT_TOKENIZED_LINES: list[bytes] = [
    line
    for text in [
        '{"input_ids": IDS, "loss_mask": MASK}',
        '{"loss_mask": MASK, "input_ids": IDS, "id": 9}',  # masks first
        '{"input\\u005fids": IDS, "loss_mask": MASK}',  # an escaped key
        '{"input_ids": IDS, "input_ids": [4, 5], "loss_mask": [1, 1]}',  # duplicate keys
        '{"input_ids": [4, 5], "input_ids": IDS, "loss_mask": MASK, "loss_mask": [1]}',
        '{"input_ids": [1, 2], "input\\u005fids": IDS}',  # duplicate by an escape
        '{"input_ids": IDS, "loss\\u005fmask": MASK, "loss_mask": [1, 1, 0]}',
        '{"meta": {"input_ids": IDS, "loss_mask": MASK}, "input_ids": [5, 6]}',  # nested key
        '{"meta": {"input_ids": IDS}, "loss_mask": MASK}',
        '{"input_ids": [IDS], "loss_mask": [MASK]}',  # a [1, L] tensor
        '{"input_ids": [IDS, IDS], "loss_mask": [MASK, MASK]}',
        '{"input_ids": [IDS, [1, 2]], "loss_mask": [MASK, [1, 1]]}',
        '{"input_ids": [IDS, []], "loss_mask": [MASK, []]}',
        '{"input_ids": [IDS, 3], "loss_mask": [MASK, 1]}',
        '{"input_ids": [[IDS]], "loss_mask": [[MASK]]}',
        '{"input_ids": IDS, "loss_mask": [MASK, 1]}',
        '{"input_ids": IDS, "loss_mask": IDS}',  # a mask of ids
        '{"input_ids": MASK, "loss_mask": MASK}',
        '{"input_ids": IDS, "labels": [-100, -100, 5], "attention_mask": MASK, '
        '"position_ids": [0, 1, 2]}',
        '{"input_ids": IDS, "loss_mask": MASK, "text": "a: IDS, b: MASK"}',  # arrays in a text
        '{"text": "\\u0001", "input_ids": IDS}',  # the stand-ins' mark, spelled by the line
        '{"text": "\\u00013", "input_ids": IDS, "loss_mask": MASK}',
        '{"input_ids": "\\u00013", "loss_mask": "\\u00013:1"}',  # look-alike stand-ins
        '{"input_ids": ["\\u00013", IDS], "loss_mask": MASK}',
        '{"input_ids": IDS, "loss_mask": MASK, "text": "\\\\u0001"}',
        '{"input_ids": IDS, "loss_mask": MASK, "text": "数据 ü"}',  # ensure_ascii=False
        '{"input_ids": IDS, "loss_mask": MASK, "x": NaN}',
        '{"input_ids": IDS, "loss_mask": MASK, "x": 1e999}',
        '{"input_ids": IDS, "loss_mask": MASK',  # truncated
        '{"input_ids": IDS, "loss_mask": MASK} x',
        '{"input_ids": IDS, "loss_mask": MASK}}',
        '[{"input_ids": IDS}, {"input_ids": IDS, "loss_mask": MASK}]',  # a batch line
        '[{"input_ids": IDS}, 5]',
        '{"input_ids": IDS, "loss_mask": MASK, "text": "\\ud800"}',  # a lone surrogate
        '{"ids": {"input_ids": IDS}, "loss_mask": MASK, "input_ids": null}',
        '{"input_ids" : IDS , "loss_mask" :MASK}',
        '{"input_ids":IDS,"loss_mask":MASK}',
        '{"input_ids": IDS, "loss_mask": MASK, "extra": [IDS, {"a": MASK}]}',
    ]
    for line in _long(text)
] + [
    b'{"input_ids": [1, 2, 3], "loss_mask": [0, 1, 1], "text": "\xff"}',  # invalid UTF-8
    b'{"input_ids": [1, 2, 3], "loss_mask": [0, 1, 1], "text": "\x0c"}',  # a raw form feed
    b'{"input_ids": [01, 2], "loss_mask": [0, 1]}',  # leading zeros
    b'{"input_ids": [1, 02], "loss_mask": [0, 01]}',
    b'{"input_ids": [1,02], "loss_mask": [-01, 1]}',
    b'{"input_ids": [-0, 1, -5], "loss_mask": [-0, 1]}',
    b'{"input_ids": [1,\t2], "loss_mask": [0,\r1]}',  # other whitespace
    b'{"input_ids": [1,  2], "loss_mask": [0 , 1]}',
    b'{"input_ids": [ 1, 2], "loss_mask": [0, 1 ]}',
    b'{"input_ids": [1, , 2], "loss_mask": [0,, 1]}',  # empty elements
    b'{"input_ids": [1, 2,], "loss_mask": [,0, 1]}',
    b'{"input_ids": [1 2], "loss_mask": [0 1]}',
    b'{"input_ids": [1-2, 3], "loss_mask": [--1, 1]}',
    b'{"input_ids": [1, -], "loss_mask": [0, 1-]}',
    b'{"input_ids": [1.0, 2], "loss_mask": [0, 1.0]}',  # floats, exponents
    b'{"input_ids": [1e2, 2], "loss_mask": [0, 1E0]}',
    b'{"input_ids": [true, 2], "loss_mask": [false, true]}',
    b'{"input_ids": [null, 2], "loss_mask": [0, null]}',
    b'{"input_ids": ["1", 2], "loss_mask": [0, "1"]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [0, 1, 2]}',  # a mask other than 0/1
    b'{"input_ids": [1, 2, 3], "loss_mask": [0, 1, 10]}',
    b'{"input_ids": [1, 2, 3], "loss_mask": [1, 1, -1]}',
    b'{"input_ids": [9223372036854775808, 18446744073709551616, 1], "loss_mask": [0, 1, 1]}',
    b'{"input_ids": [1, 2], "loss_mask": [9223372036854775807, 9223372036854775807]}',
    b'{"input_ids": [' + b", ".join(b"%d" % i for i in range(300)) + b"]" + b"]}",
    b'{"input_ids": [' + b", ".join(b"%d" % i for i in range(300)) + b', "x"]}',
    b'{"input_ids": [' + b", ".join(b"%d" % i for i in range(300)) + b", 01]}",
    b'{"loss_mask": [' + b"0, " * 200 + b"1, 2]}",
    b'{"loss_mask": [' + b"0, " * 200 + b"1,  1]}",
    b'{"loss_mask": [' + b"0," * 200 + b"1, 1]}",
    b'{"loss_mask": [' + b"1, " * 200 + b"1]",
]
TOKENIZED_LINES += LIFT_TOKENIZED_LINES
LIFT_RESPONSE_LINES: list[bytes] = [
    line
    for text in [
        '{"meta_info": {"id": "a", "completion_tokens": 3}, "text": "t", "output_ids": IDS}',
        '{"meta_info": {"completion_tokens": 3}, "output_ids": IDS, "output_ids": [1]}',
        '{"meta_info": {"completion_tokens": 3}, "output\\u005fids": IDS}',
        '{"meta_info": {"completion_tokens": 3, "output_ids": IDS}, "output_ids": IDS}',
        '{"meta_info": {"completion_tokens": 3}, "output_ids": [IDS]}',
        '{"meta_info": {"completion_tokens": 3}, "output_ids": [IDS, IDS]}',
        '{"meta_info": {"completion_tokens": 3}, "text": "\\u0001", "output_ids": IDS}',
        '{"meta_info": {"completion_tokens": 3}, "text": "\\u00015", "output_ids": IDS}',
        '{"meta_info": {"completion_tokens": 3}, "output_ids": "\\u00015"}',
        '{"meta_info": {"completion_tokens": 3}, "text": "output_ids": IDS}',
        '{"meta_info": {"completion_tokens": 3}, "text": "\\"output_ids": IDS"}',
        '{"meta_info": {"completion_tokens": 3}, "text\\"output_ids": IDS}',
        '{"id": "f", "text": "x", "input_ids": IDS, "output_ids": MASK, "completion_tokens": 3}',
        '{"id": "f", "input_ids": IDS, "output_ids": IDS, "prompt_tokens": 2}',  # derived
        '{"id": "f", "input_ids": [IDS], "output_ids": IDS}',
        '{"id": "f", "input_ids": IDS, "output_ids": [IDS], "completion_tokens": 3}',
        '{"id": "f", "input_ids": IDS, "output_ids": IDS, "completion_tokens": 3, "x": 1e999}',
        '{"request_id": "v", "prompt_token_ids": IDS, "outputs": [{"text": "a", "token_ids": '
        'IDS, "finish_reason": "length"}, {"text": "b", "token_ids": MASK}]}',
        '[{"meta_info": {"completion_tokens": 3}, "output_ids": IDS}, '
        '{"meta_info": {"completion_tokens": 4}, "output_ids": MASK}]',
        '{"meta_info": {"completion_tokens": 3}, "output_ids": IDS',
        '{"meta_info": {"completion_tokens": 3}, "output_ids": IDS, "text": "\\ud800"}',
        '{"meta_info": {"completion_tokens": 3}, "output_ids": IDS, "text": "a</think>"}',
    ]
    for line in _long(text)
] + [
    b'{"meta_info": {"completion_tokens": 3}, "output_ids": [1, 2, 3], "text": "\xff"}',
    b'{"meta_info": {"completion_tokens": 3}, "output_ids": [01, 2]}',
    b'{"meta_info": {"completion_tokens": 3}, "output_ids": [1,  2]}',
    b'{"meta_info": {"completion_tokens": 3}, "output_ids": [1, -2, 3]}',
    b'{"id": "f", "output_ids": [1, 2, 03], "input_ids": [4], "completion_tokens": 3}',
    b'{"id": "f", "output_ids": [1, 2], "input_ids": [1.5, 01], "completion_tokens": 3}',
]
RESPONSE_LINES += LIFT_RESPONSE_LINES

# --- hypothesis: records in every shape, with the keys the fact functions read ---
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=3000),
    st.integers(min_value=2**62, max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(
        ["stop", "length", "</think>", "a<\\/think>", "<think>a", "数据", "", "text_completion"]
    ),
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
                 "choices", "status_code", "code", "generated_tokens", "token_ids", "x",
                 "output_tokens", "input_tokens", "tokens", "candidatesTokenCount",
                 "thoughtsTokenCount", "thought", "parts", "reasoning_tokens", "cached_tokens",
                 "total_tokens", "outputTokens", "inputTokens", "totalTokens", "meta_info",
                 "statistics_x", "errorMessage"]
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
    "prompt_tokens", "finish_reason", "model", "zzz_unknown", "type", "content", "stop_reason",
    "usageMetadata", "candidates", "key", "result", "output", "request_id", "status",
    "prompt_token_ids", "num_cached_tokens", "token", "index", "promptFeedback",
    # v3 sources (docs/formats.md)
    "total_tokens", "eval_count", "done", "created_at", "tokens_predicted", "stop", "id_slot",
    "recordId", "modelOutput", "request", "processed_time", "distilabel_metadata", "x_groq",
    "metadata", "messageStart", "delta", "message", "raw",
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
MESSAGE_LINE = (
    b'{"id": "m", "type": "message", "content": [{"type": "thinking", "thinking": "t",'
    b' "signature": "s"}, {"type": "text", "text": "4", "citations": null}], "diagnostics": null,'
    b' "stop_reason": "end_turn", "stop_details": null, "usage": {"output_tokens": 5,'
    b' "input_tokens": 3, "cache_read_input_tokens": 2, "inference_geo": null, "speed": null}}'
)
GEMINI_LINE = (
    b'{"usageMetadata": {"candidatesTokenCount": 3, "thoughtsTokenCount": 2},'
    b' "responseId": "r", "candidates": [{"finishReason": "STOP", "content": {"parts":'
    b' [{"text": "t", "thought": true}, {"text": "4", "functionCall": null}]}}]}'
)
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
    # a reply cut inside an unclosed `<think>`, spelled every way
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": "<think>a"}, '
    b'"finish_reason": "length"}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": "\\u003cthink>a"}}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": "<thin\\u006b>a"}}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": "x <think", '
    b'"reasoning_content": null}}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": [{"type": "text", '
    b'"text": "<think>r"}]}}]}',
    b'{"usage": {"completion_tokens": 2}, "choices": [{"message": {"content": "<think>a", '
    b'"reasoning": "r"}}]}',
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
    # Every field the typed shapes write down, each with its own value (a fact put in the
    # wrong place of the positional tuple shows).
    b'{"details": {"generated_tokens": 4, "finish_reason": "eos_token", "seed": 3, '
    b'"input_length": 7}, "generated_text": "hi"}',
    b'{"details": {"generated_tokens": 0, "input_length": 12}, "generated_text": ""}',
    b'{"text": "ab", "output_ids": [1, 2, 3], "meta_info": {"id": "m", "completion_tokens": 9, '
    b'"prompt_tokens": 8, "reasoning_tokens": 6, "cached_tokens": 5, "finish_reason": '
    b'{"type": "length", "length": 9}}}',
    b'{"text": "", "meta_info": {"completion_tokens": 2, "prompt_tokens": 11}}',
    b'{"id": "f", "text": "ab", "input_ids": [1, 2], "output_ids": [3, 4, 5], '
    b'"prompt_tokens": 13, "completion_tokens": 14, "finish_reason": "stop"}',
    b'{"id": "d", "text": "", "input_ids": [1, 2], "output_ids": [3, 4, 5], "finish_reason": '
    b'{"type": "stop", "matched": 2}}',
    b'{"details": {"generated_tokens": 4, "finish_reason": "eos_token", "seed": null}}',
    b'{"details": {"generated_tokens": 4, "seed": 18446744073709551615}}',
    b'{"details": {"generated_tokens": 4}, "generated_text": "a</think>"}',
    b'{"details": {"generated_tokens": 4, "finish_reason": {"type": "length"}}}',
    b'[{"meta_info": {"completion_tokens": 1}}, {"completion_tokens": 2}]',
    b'[{"meta_info": {"completion_tokens": 1}}, {"meta_info": {"completion_tokens": 2}}]',
    b'[{"meta_info": {"completion_tokens": 1}}, null]',
    b'[{"meta_info": {"completion_tokens": 1}}, {"meta_info": {"completion_tokens": 1}]',
    # the hosted APIs' shapes (genledger/fast/apishapes.py)
    b'{"object": "response", "usage": {"output_tokens": 5}, "output": []}',
    b'{"object": "response", "usage": {"output_tokens": 5}, "status": "incomplete",'
    b' "incomplete_details": {"reason": "max_output_tokens"}, "output": [{"type": "reasoning",'
    b' "summary": [{"type": "summary_text", "text": "s"}]}]}',
    b'{"object": "response", "usage": {"output_tokens": 5}, "status": "incomplete",'
    b' "incomplete_details": {"reason": null}}',
    b'{"object": "response", "usage": {"output_tokens": 5}, "status": "failed"}',
    b'{"object": "response", "usage": {"output_tokens": 5}, "error": {"code": "x"}}',
    b'{"object": "response", "usage": {"output_tokens": 5}, "output": [{"type": "function_call",'
    b' "arguments": "{}"}, {"type": "message", "content": [{"type": "output_text", "text": ""},'
    b' {"type": "refusal", "refusal": "no</think>"}]}]}',
    b'{"object": "response", "usage": {"output_tokens": 5, "input_tokens": 3,'
    b' "input_tokens_details": {"cached_tokens": 2}, "output_tokens_details": null}}',
    b'{"object": "responses", "usage": {"output_tokens": 5}}',
    b'{"type": "message", "usage": {"output_tokens": 5, "input_tokens": 3,'
    b' "cache_creation_input_tokens": -1, "cache_read_input_tokens": 4}, "content": []}',
    b'{"type": "message", "usage": {"output_tokens": 5, "input_tokens": 9223372036854775807,'
    b' "cache_read_input_tokens": 1}, "content": null}',
    b'{"type": "message", "usage": {"output_tokens": 5, "input_tokens": 3,'
    b' "cache_read_input_tokens": null}, "content": [{"type": "thinking", "thinking": "t"},'
    b' {"type": "text", "text": ""}], "stop_reason": "max_tokens"}',
    b'{"usageMetadata": {"candidatesTokenCount": 3, "thoughtsTokenCount": 4},'
    b' "candidates": [{"content": {"parts": [{"text": "t", "thought": true}]}},'
    b' {"finishReason": "STOP"}]}',
    b'{"usageMetadata": {"candidatesTokenCount": 3, "thoughtsTokenCount": -4},'
    b' "candidates": [{"content": {"parts": [{"text": "t", "thought": false}]}}]}',
    b'{"usageMetadata": {"thoughtsTokenCount": 4}, "candidates": [], "responseId": ""}',
    b'{"usageMetadata": {"promptTokenCount": 4}, "candidates": []}',
    b'{"usageMetadata": {"candidatesTokenCount": 3}, "candidates": [{"finishReason": "MAX_TOKENS"},'
    b' {"finishReason": "STOP", "content": {"parts": [{"text": ""}]}}]}',
    b'{"object": "response", "usage": {"output_tokens": 5}, "output": [{"type": "function_call",'
    b' "arguments": "{}", "content": []}]}',
    b'{"usageMetadata": {"candidatesTokenCount": 9223372036854775807, "thoughtsTokenCount": 1}}',
    b'{"usage": {"tokens": {"output_tokens": 5.0, "input_tokens": -0.0}}, "message": {}}',
    b'{"usage": {"tokens": {"output_tokens": 5.5}}}',
    b'{"usage": {"tokens": {"output_tokens": 9007199254740993}}}',
    b'{"usage": {"tokens": {"output_tokens": 3, "input_tokens": 1e400}}}',
    b'{"usage": {"tokens": {"output_tokens": null}}}',
    b'{"request_id": "r", "outputs": [{"token_ids": [1, 2], "finish_reason": "length"},'
    b' {"token_ids": [3], "text": "", "finish_reason": null}, {"token_ids": null,'
    b' "finish_reason": {"type": "stop"}}]}',
    b'{"request_id": "r", "outputs": [{"token_ids": [1, 2], "text": "a"},'
    b' {"token_ids": [], "text": "b", "finish_reason": "stop"}, {"finish_reason": "length"}]}',
    b'{"prompt_token_ids": [1, 2, 3], "outputs": [{"token_ids": [[1, 2]]}]}',
    b'{"prompt_token_ids": [1, 2, 3], "outputs": [{"token_ids": [1, 2]}]}',
    b'{"outputs": [{"token_ids": [1, 2]}]}',
    b'{"request_id": "", "outputs": [{"text": "x"}]}',
    # batch result lines and the SDK's dumps (Anthropic, Gemini camelCase and snake_case)
    b'{"custom_id": "c", "result": {"type": "succeeded", "message": ' + MESSAGE_LINE + b"}}",
    b'{"custom_id": "", "result": {"type": "succeeded", "message": ' + MESSAGE_LINE + b"}}",
    b'{"custom_id": 7, "result": {"type": "succeeded", "message": ' + MESSAGE_LINE + b"}}",
    b'{"custom_id": null, "result": {"type": "succeeded", "message": ' + MESSAGE_LINE + b"}}",
    b'{"custom_id": "c", "result": {"type": "succeeded", "message": null}}',
    b'{"custom_id": "c", "result": {"type": "succeeded"}}',
    b'{"custom_id": "c", "result": {"type": "other", "message": ' + MESSAGE_LINE + b"}}",
    b'{"custom_id": "c", "result": {"type": "errored", "message": ' + MESSAGE_LINE + b"}}",
    b'{"custom_id": "c", "result": {"type": "errored", "error": {"error": {"message": "m"}}}}',
    b'{"custom_id": "c", "result": {"type": "canceled"}}',
    b'{"custom_id": "c", "result": {"type": "succeeded", "message": ' + MESSAGE_LINE + b"},"
    b' "zzz_unknown": 1}',
    b'{"custom_id": "c", "result": {"type": "succeeded", "message": {"type": "message",'
    b' "usage": {"output_tokens": 9223372036854775808}}}}',
    b'{"custom_id": "c", "result": {"type": "succeeded", "message": {"type": "message",'
    b' "usage": {"output_tokens": 1}, "content": [{"type": "text", "text": "a</think>"}]}}}',
    b'{"custom_id": "c", "result": {"type": "succeeded", "message": {"type": "message",'
    b' "usage": {"output_tokens": 1, "speed": "fast"}, "stop_details": {"type": "x"}}}}',
    b'{"custom_id": "c", "id": "i", "result": {"type": "succeeded", "message": '
    + MESSAGE_LINE
    + b"}}",
    b'[{"custom_id": "a", "result": {"type": "succeeded", "message": ' + MESSAGE_LINE + b"}},"
    b' {"custom_id": "b", "result": {"type": "expired"}}]',
    b'{"key": "k", "response": ' + GEMINI_LINE + b"}",
    b'{"key": "", "response": ' + GEMINI_LINE + b"}",
    b'{"key": null, "response": ' + GEMINI_LINE + b"}",
    b'{"key": "k", "response": null}',
    b'{"key": "k", "response": {}}',
    b'{"key": "k", "error": {"code": 3, "message": "Invalid request"}}',
    b'{"key": "k", "response": ' + GEMINI_LINE + b', "error": {"code": 3}}',
    b'{"key": "k", "response": ' + GEMINI_LINE + b', "zzz_unknown": null}',
    b'{"key": "k", "response": {"usageMetadata": {"candidatesTokenCount": 99999999999999999999}}}',
    b'{"key": "k", "response": {"usageMetadata": {"candidatesTokenCount": 3},'
    b' "candidates": [{"content": {"parts": [{"text": "a</think>"}]}}]}}',
    b'{"key": "k", "response": {"usageMetadata": {"candidatesTokenCount": 3},'
    b' "promptFeedback": {"blockReason": "SAFETY"}}}',
    b'{"key": "k", "response": {"usage_metadata": {"candidates_token_count": 3},'
    b' "response_id": "r", "candidates": [{"finish_reason": "STOP", "content": {"parts":'
    b' [{"text": "t", "thought": true}, {"text": null, "function_call": null}]}}]}}',
    b'{"key": "k", "response": {"usage_metadata": {"candidates_token_count": 3},'
    b' "usageMetadata": {"candidatesTokenCount": 4}}}',
    b'{"usage_metadata": {"candidates_token_count": 3, "thoughts_token_count": 2,'
    b' "prompt_tokens_details": [{"modality": "TEXT", "token_count": 5}]}, "candidates": null}',
    b'{"usage_metadata": {"candidates_token_count": 3}, "candidates": [{"content": {"parts":'
    b' [{"text": "", "function_call": {"name": "f"}}]}}]}',
    b'{"usage_metadata": {"candidates_token_count": 3}, "prompt_feedback": null,'
    b' "parsed": null, "sdk_http_response": {"headers": {}}}',
    b'{"usage_metadata": {"prompt_token_count": 3}, "candidates": []}',
    b'{"usage_metadata": null, "candidates": []}',
    b'{"usage_metadata": {"candidates_token_count": 3}, "candidatesTokenCount": 3}',
    b'{"usageMetadata": {"candidatesTokenCount": 3, "promptTokensDetails": [{"modality":'
    b' "TEXT", "tokenCount": 9223372036854775808}]}}',
    b'{"usageMetadata": {"candidatesTokenCount": 3}, "candidates": [{"content": {"parts":'
    b' [{"text": "a", "thought": null, "thoughtSignature": null, "fileData": null}]},'
    b' "finishMessage": "m", "tokenCount": 4, "safetyRatings": null}], "modelStatus": null}',
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
     "weight_version": TEXTS, "cached_tokens": INTS, "e2e_latency": st.floats(width=32),
     "reasoning_tokens": INTS, "cached_tokens_details": st.none()},
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
    {"completion_tokens": INTS, "prompt_tokens": INTS, "total_tokens": INTS,
     "reasoning_tokens": INTS, "cached_tokens": INTS, "prompt_cache_hit_tokens": INTS,
     "completion_tokens_details": shaped({"reasoning_tokens": INTS, "audio_tokens": INTS}),
     "prompt_tokens_details": shaped({"cached_tokens": INTS, "audio_tokens": INTS,
                                      "cache_write_tokens": INTS})},
    ("completion_tokens",),
)  # fmt: skip
CHAT = shaped(
    {"usage": USAGE, "choices": st.lists(CHOICE, max_size=3), "id": TEXTS,
     "object": st.sampled_from(
         ["chat.completion", "text_completion", "other", "chat.completion.chunk"]
     ),
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
    {"details": shaped({"generated_tokens": INTS, "finish_reason": FINISHES, "seed": INTS,
                        "input_length": INTS}, ("generated_tokens",)),
     "generated_text": TEXTS},
    ("details",),
)  # fmt: skip
PARTS = st.lists(
    shaped({"type": st.sampled_from(["text", "thinking", "output_text"]), "text": TEXTS,
            "thought": st.booleans(), "thinking": TEXTS, "refusal": TEXTS}),
    max_size=3,
)  # fmt: skip
RESPONSES_API = shaped(
    {"object": st.just("response"),
     "status": st.sampled_from(["completed", "failed", "incomplete"]),
     "error": st.none(), "id": TEXTS,
     "incomplete_details": st.one_of(st.none(), shaped({"reason": TEXTS})),
     "output": st.lists(shaped({"type": st.sampled_from(["message", "function_call"]),
                                "content": PARTS, "arguments": TEXTS,
                                "summary": st.lists(shaped({"type": TEXTS, "text": TEXTS}),
                                                    max_size=1)}),
                        max_size=2),
     "usage": shaped({"output_tokens": INTS, "input_tokens": INTS, "total_tokens": INTS,
                      "output_tokens_details": shaped({"reasoning_tokens": INTS}),
                      "input_tokens_details": shaped({"cached_tokens": INTS,
                                                      "cache_write_tokens": INTS})},
                     ("output_tokens",))},
    ("usage", "object"),
)  # fmt: skip
ANTHROPIC = shaped(
    {"type": st.just("message"), "id": TEXTS, "content": PARTS,
     "stop_reason": st.sampled_from(["end_turn", "max_tokens"]),
     "usage": shaped({"output_tokens": INTS, "input_tokens": INTS,
                      "cache_creation_input_tokens": INTS, "cache_read_input_tokens": INTS,
                      "output_tokens_details": shaped({"thinking_tokens": INTS})},
                     ("output_tokens",))},
    ("usage", "type"),
)  # fmt: skip
ANTHROPIC_BATCH = shaped(
    {"custom_id": TEXTS,
     "result": shaped({"type": st.sampled_from(["succeeded", "errored", "expired"]),
                       "message": ANTHROPIC}, ("type",))},
    ("custom_id", "result"),
)  # fmt: skip
GEMINI_PARTS = st.lists(
    shaped({"text": TEXTS, "thought": st.one_of(st.booleans(), st.none()),
            "thoughtSignature": TEXTS}),
    max_size=3,
)  # fmt: skip
GEMINI = shaped(
    {"candidates": st.lists(shaped({"content": shaped({"parts": st.one_of(PARTS, GEMINI_PARTS)}),
                                    "finishReason": TEXTS, "index": INTS}), max_size=2),
     "responseId": TEXTS,
     "usageMetadata": shaped({"candidatesTokenCount": INTS, "thoughtsTokenCount": INTS,
                              "promptTokenCount": INTS, "cachedContentTokenCount": INTS,
                              "toolUsePromptTokenCount": INTS, "totalTokenCount": INTS}),
     "promptFeedback": shaped({"blockReason": TEXTS})},
    ("usageMetadata",),
)  # fmt: skip
FLOATS = st.one_of(INTS, st.floats(allow_nan=False, allow_infinity=False), st.just(47.0))
COHERE = shaped(
    {"id": TEXTS, "finish_reason": TEXTS,
     "message": shaped({"content": PARTS}),
     "usage": shaped({"tokens": shaped({"output_tokens": FLOATS, "input_tokens": FLOATS},
                                       ("output_tokens",)),
                      "billed_units": shaped({"output_tokens": FLOATS}),
                      "cached_tokens": FLOATS}, ("tokens",))},
    ("usage",),
)  # fmt: skip
VLLM = shaped(
    {"request_id": TEXTS, "prompt_token_ids": IDS, "num_cached_tokens": INTS,
     "outputs": st.lists(shaped({"token_ids": IDS, "text": TEXTS, "finish_reason": FINISHES,
                                 "index": INTS, "stop_reason": INTS}),
                         max_size=4), "prompt": TEXTS, "finished": st.booleans()},
    ("request_id", "outputs"),
)  # fmt: skip


def exact(fields: dict[str, Any], required: tuple[str, ...] = ()) -> st.SearchStrategy[Any]:
    """Objects of one shape, every value of its type: the typed shapes take most of them."""
    return st.fixed_dictionaries(
        {k: fields[k] for k in required},
        optional={k: v for k, v in fields.items() if k not in required},
    )


COUNTS = st.one_of(st.integers(-2, 5000), st.just(2**63 - 1), st.none())
PART = exact({"type": st.sampled_from(["text", "output_text"]), "text": TEXTS})
ANTHROPIC_EXACT = exact(
    {"type": st.just("message"), "id": TEXTS, "stop_reason": TEXTS,
     "content": st.one_of(st.none(), st.lists(PART, max_size=2)),
     "diagnostics": st.none(), "stop_details": st.none(),
     "usage": exact({"output_tokens": COUNTS, "input_tokens": COUNTS,
                     "cache_creation_input_tokens": COUNTS, "cache_read_input_tokens": COUNTS,
                     "output_tokens_details": exact({"thinking_tokens": COUNTS}),
                     "inference_geo": st.none(), "speed": st.none()},
                    ("output_tokens",))},
    ("type", "usage"),
)  # fmt: skip
GEMINI_EXACT = exact(
    {"candidates": st.one_of(st.none(), st.lists(exact({
         "content": exact({"parts": st.lists(exact({
             "text": TEXTS, "thought": st.one_of(st.booleans(), st.none()),
             "functionCall": st.none(), "thoughtSignature": st.none()}), max_size=3)}),
         "finishReason": st.one_of(TEXTS, st.none()), "safetyRatings": st.none()}), max_size=2)),
     "responseId": TEXTS, "promptFeedback": st.none(),
     "usageMetadata": exact({"candidatesTokenCount": COUNTS, "thoughtsTokenCount": COUNTS,
                             "promptTokenCount": COUNTS, "cachedContentTokenCount": COUNTS,
                             "toolUsePromptTokenCount": COUNTS, "totalTokenCount": COUNTS,
                             "promptTokensDetails": st.lists(exact(
                                 {"modality": TEXTS, "tokenCount": COUNTS}), max_size=2)})},
    ("usageMetadata",),
)  # fmt: skip


def snake_case(value: Any) -> Any:
    """A camelCase record's keys as the google-genai SDK's default dump spells them."""
    if isinstance(value, dict):
        return {re.sub("([A-Z])", lambda m: "_" + m[1].lower(), k): snake_case(v)
                for k, v in value.items()}  # fmt: skip
    if isinstance(value, list):
        return [snake_case(v) for v in value]
    return value


API_EXACT = st.one_of(
    exact({"object": st.just("response"), "id": TEXTS,
           "status": st.sampled_from(["completed", "incomplete", "failed", None]),
           "incomplete_details": st.one_of(st.none(), exact({"reason": TEXTS})),
           "output": st.lists(exact({"type": st.sampled_from(["message", "function_call"]),
                                     "content": st.lists(exact({
                                         "type": st.just("output_text"), "text": TEXTS,
                                         "refusal": TEXTS}), max_size=2),
                                     "arguments": TEXTS}, ("type",)), max_size=2),
           "usage": exact({"output_tokens": COUNTS, "input_tokens": COUNTS, "total_tokens": COUNTS,
                           "output_tokens_details": exact({"reasoning_tokens": COUNTS}),
                           "input_tokens_details": exact({"cached_tokens": COUNTS})},
                          ("output_tokens",))}, ("object", "usage")),
    ANTHROPIC_EXACT,
    GEMINI_EXACT,
    GEMINI_EXACT.map(snake_case),
    exact({"custom_id": TEXTS,
           "result": exact({"type": st.just("succeeded"), "message": ANTHROPIC_EXACT},
                           ("type", "message"))}, ("custom_id", "result")),
    exact({"key": TEXTS, "response": st.one_of(GEMINI_EXACT, GEMINI_EXACT.map(snake_case))},
          ("key", "response")),
    exact({"id": TEXTS, "finish_reason": TEXTS,
           "message": exact({"content": st.lists(PART, max_size=2)}),
           "usage": exact({"tokens": exact({"output_tokens": FLOATS, "input_tokens": FLOATS},
                                           ("output_tokens",))}, ("tokens",))}, ("usage",)),
    exact({"recordId": TEXTS, "modelInput": exact({"prompt": TEXTS}),
           "modelOutput": ANTHROPIC_EXACT}, ("recordId", "modelOutput")),
    exact({"status": st.sampled_from(["", "Bad Request"]), "processed_time": TEXTS,
           "request": st.one_of(st.none(), exact({"contents": st.lists(TEXTS, max_size=1)})),
           "response": GEMINI_EXACT}, ("status", "request", "response")),
    exact({"request_id": st.one_of(TEXTS, st.none()), "prompt_token_ids": IDS,
           "outputs": st.lists(exact({"token_ids": IDS, "text": TEXTS,
                                      "finish_reason": FINISHES}), max_size=4)}, ("outputs",)),
)  # fmt: skip
# the hosted APIs' shapes (genledger/fast/apishapes.py), near misses and exact
GEMINI_BATCH = shaped(
    {"key": TEXTS, "response": st.one_of(GEMINI, GEMINI.map(snake_case)),
     "error": st.one_of(st.none(), shaped({"code": INTS, "message": TEXTS}))},
    ("key",),
)  # fmt: skip
API_RESPONSES = st.one_of(
    RESPONSES_API, ANTHROPIC, ANTHROPIC_BATCH, GEMINI, GEMINI.map(snake_case), GEMINI_BATCH,
    COHERE, VLLM, API_EXACT, API_EXACT,
)  # fmt: skip
SHAPED_RESPONSES = st.one_of(
    SGLANG,
    FLAT,
    CHAT,
    BATCH,
    WRAPPED,
    TGI,
    RESPONSES_API,
    ANTHROPIC,
    ANTHROPIC_BATCH,
    GEMINI,
    COHERE,
    VLLM,
)
SHAPED_TOKENIZED = shaped({"id": st.one_of(TEXTS, INTS), "input_ids": IDS, "loss_mask": MASKS})


# --- v3 sources (docs/formats.md): one line of each, their failures, stream pieces, and
# records whose own numbers disagree (the audit) --------------------------------------------
V3_LINES: list[bytes] = [
    b'{"model": "llama3.2", "created_at": "2024", "message": {"role": "assistant", "content": '
    b'"Hi"}, "done_reason": "stop", "done": true, "prompt_eval_count": 26, "eval_count": 282}',
    b'{"model": "llama3.2", "created_at": "2024", "response": "The", "done": false}',
    b'{"model": "llama3.2", "created_at": "2024", "response": "", "done": true, '
    b'"done_reason": "load"}',
    b'{"model": "r1", "created_at": "2024", "message": {"role": "assistant", "content": '
    b'"<think>x</think>4", "thinking": null}, "done": true, "eval_count": 9}',
    b'{"index": 0, "content": "", "id_slot": 0, "stop": true, "tokens_predicted": 7, '
    b'"tokens_evaluated": 14, "tokens_cached": 20, "stop_type": "eos", "timings": {"cache_n": '
    b'3, "prompt_n": 11}, "generation_settings": {"n_predict": 5, "seed": 1, "stop": []}}',
    b'{"index": 0, "content": "Hel", "stop": false, "id_slot": 0}',
    b'{"index": 0, "content": "", "stop": true, "id_slot": 0}',
    b'{"output": {"message": {"role": "assistant", "content": [{"text": "Hi"}]}}, '
    b'"stopReason": "end_turn", "usage": {"inputTokens": 3, "outputTokens": 121, '
    b'"cacheReadInputTokens": 1712, "cacheWriteInputTokens": 236, "totalTokens": 2072}}',
    b'{"output": {"message": {"content": [{"text": "4"}]}}, "usage": {"inputTokens": 5, '
    b'"outputTokens": 7, "totalTokens": 12, "cacheReadInputTokenCount": 0}}',
    b'{"output": {"message": {"content": [{"reasoningContent": {"reasoningText": {"text": '
    b'"r"}}}]}}, "stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 5}}',
    b'{"messageStart": {"role": "assistant"}}',
    b'{"contentBlockDelta": {"delta": {"text": "Hi"}, "contentBlockIndex": 0}}',
    b'{"metadata": {"usage": {"inputTokens": 12, "outputTokens": 30, "totalTokens": 42}, '
    b'"metrics": {"latencyMs": 3}}}',
    b'{"modelStreamErrorException": {"message": "stream failed", "originalStatusCode": 500}}',
    b'{"recordId": "r1", "modelInput": {}, "modelOutput": {"type": "message", "content": [], '
    b'"usage": {"input_tokens": 111, "output_tokens": 73}}}',
    b'{"recordId": "r2", "modelInput": {}, "modelOutput": {"inputTextTokenCount": 8, '
    b'"results": [{"tokenCount": 3, "outputText": "blue", "completionReason": "FINISH"}]}}',
    b'{"recordId": "r3", "modelInput": {}, "modelOutput": {"generation": "x", '
    b'"prompt_token_count": 10, "generation_token_count": 20, "stop_reason": "stop"}}',
    b'{"recordId": "r4", "modelInput": {}, "error": {"errorCode": 400, "errorMessage": "bad"}}',
    b'{"recordId": "r5", "modelInput": {}, "modelOutput": {"outputs": [{"text": "x"}]}}',
    b'{"status": "", "request": {}, "response": {"candidates": [{"finishReason": "STOP", '
    b'"content": {"parts": [{"text": "4"}]}}], "usageMetadata": {"promptTokenCount": 9, '
    b'"candidatesTokenCount": 10, "totalTokenCount": 19}}}',
    b'{"status": "Bad Request: ' + b"x" * 300 + b'", "request": {}, "response": {}}',
    b'{"instruction": "i", "generation": "g", "distilabel_metadata": {"raw_output_a": "g", '
    b'"statistics_a": {"input_tokens": 73, "output_tokens": 58}, "statistics_b": '
    b'{"input_tokens": [4], "output_tokens": [5]}}, "model_name": "m"}',
    b'{"instruction": "i", "generation": "", "distilabel_metadata": {"statistics_a": '
    b'{"input_tokens": 7, "output_tokens": 9}}}',
    b'{"id": "x", "object": "chat.completion", "choices": [{"message": {"content": "4"}}], '
    b'"usage": {"prompt_tokens": 13, "completion_tokens": 1, "total_tokens": 233, '
    b'"completion_tokens_details": {"reasoning_tokens": 219}, "num_sources_used": 0}}',
    b'{"id": "x2", "outputs": [{"finish_reason": "REASON_STOP", "message": {"content": "4"}}], '
    b'"usage": {"completion_tokens": 52, "prompt_tokens": 1889, "total_tokens": 2102, '
    b'"reasoning_tokens": 161, "cached_prompt_text_tokens": 1347}}',
    b'{"choices": [{"message": {"content": "4", "extra_content": {"google": {"thought": true}}}}], '
    b'"usage": {"completion_tokens": 12, "prompt_tokens": 35, "total_tokens": 109}}',
    # the audit: numbers that disagree under an undeclared meaning
    b'{"choices": [{"message": {"content": "4"}}], "usage": {"completion_tokens": 12, '
    b'"prompt_tokens": 35, "total_tokens": 109}}',
    b'{"choices": [{"message": {"content": "4"}}], "usage": {"completion_tokens": 52, '
    b'"prompt_tokens": 1889, "total_tokens": 2102, "completion_tokens_details": '
    b'{"reasoning_tokens": 161}}}',
    b'{"choices": [{"message": {"content": "4"}}], "usage": {"completion_tokens": 5, '
    b'"prompt_tokens": 10, "total_tokens": 11}}',
    b'{"choices": [{"message": {"content": "4"}}], "usage": {"completion_tokens": 5, '
    b'"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 50}}}',
    b'{"id": "s", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, '
    b'"finish_reason": "stop"}], "x_groq": {"id": "req", "usage": {"prompt_tokens": 21, '
    b'"completion_tokens": 988, "total_tokens": 1009}}}',
    b'{"error": {"message": "Tool call validation failed", "type": "invalid_request_error", '
    b'"code": "tool_use_failed"}}',
    b'{"error": "model \'x\' not found"}',
    b'{"type": "error", "sequence_number": 3, "code": "server_error", "message": "boom"}',
    b'{"object": "error", "message": "bad", "type": "BadRequestError", "code": 400}',
    b'{"type": "response.created", "sequence_number": 0, "response": {"id": "r", "object": '
    b'"response", "status": "in_progress", "output": [], "usage": null}}',
    b'{"type": "response.output_text.delta", "sequence_number": 1, "delta": "4"}',
    b'{"type": "response.completed", "sequence_number": 2, "response": {"id": "r", "object": '
    b'"response", "status": "completed", "output": [], "usage": {"input_tokens": 3, '
    b'"output_tokens": 4, "total_tokens": 7}}}',
    b'{"type": "message_start", "message": {"id": "m", "type": "message", "content": [], '
    b'"usage": {"input_tokens": 30, "output_tokens": 1}}}',
    b'{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "4"}}',
    b'{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": '
    b'{"output_tokens": 15, "input_tokens": 30, "cache_read_input_tokens": 4}}',
    b'{"type": "message_stop"}',
    b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
    b'{"candidates": [{"content": {"parts": [{"text": "The"}]}}], "usageMetadata": '
    b'{"promptTokenCount": 10, "totalTokenCount": 10}}',
    b'{"candidates": [{"content": {"parts": [{"text": "."}]}, "finishReason": "STOP"}]}',
    b'{"usageMetadata": {"promptTokenCount": 95, "candidatesTokenCount": 66, '
    b'"thoughtsTokenCount": 132, "toolUsePromptTokenCount": 439, "totalTokenCount": 732}, '
    b'"candidates": [{"content": {"parts": [{"text": "4"}]}, "finishReason": "STOP"}]}',
    b'{"index": 4, "token": {"id": 5}, "generated_text": "P", "details": null}',
    b'{"phase": "gen", "prompt": "p", "raw": {"text": "x", "meta_info": {"id": "a", '
    b'"completion_tokens": 64, "prompt_tokens": 2}}}',
    b'{"phase": "gen", "a": {"usage": {"completion_tokens": 1}}, "b": {"usage": '
    b'{"completion_tokens": 2}}}',
    b'{"id": "env", "output": {"object": "chat.completion.chunk", "choices": []}}',
    b'{"settings": {"a": 1, "b": {"c": 2}}, "deep": {"l1": {"l2": {"l3": {"l4": 1}}}}}',
]
RESPONSE_LINES += V3_LINES

OLLAMA = shaped(
    {"model": TEXTS, "created_at": TEXTS, "done": st.booleans(), "done_reason": TEXTS,
     "eval_count": INTS, "prompt_eval_count": INTS, "response": TEXTS, "message": MESSAGE,
     "context": IDS},
    ("created_at", "done"),
)  # fmt: skip
LLAMACPP = shaped(
    {"content": TEXTS, "stop": st.booleans(), "id_slot": INTS, "tokens_predicted": INTS,
     "tokens_evaluated": INTS, "stop_type": TEXTS, "tokens_cached": INTS,
     "timings": shaped({"cache_n": INTS, "prompt_n": INTS}),
     "generation_settings": shaped({"n_predict": INTS, "stop": st.lists(TEXTS, max_size=2)})},
    ("content", "stop"),
)  # fmt: skip
CONVERSE_USAGE = shaped(
    {"inputTokens": INTS, "outputTokens": INTS, "totalTokens": INTS,
     "cacheReadInputTokens": INTS, "cacheWriteInputTokens": INTS,
     "cacheReadInputTokenCount": INTS, "cacheWriteInputTokenCount": INTS},
    ("outputTokens",),
)  # fmt: skip
CONVERSE = shaped(
    {"output": shaped({"message": shaped({"content": PARTS})}), "stopReason": TEXTS,
     "usage": CONVERSE_USAGE, "metrics": shaped({"latencyMs": INTS})},
    ("usage",),
)  # fmt: skip
TITAN = shaped(
    {"inputTextTokenCount": INTS,
     "results": st.lists(shaped({"tokenCount": INTS, "outputText": TEXTS,
                                 "completionReason": TEXTS}), max_size=2)},
    ("inputTextTokenCount", "results"),
)  # fmt: skip
LLAMA = shaped(
    {"generation": TEXTS, "prompt_token_count": INTS, "generation_token_count": INTS,
     "stop_reason": TEXTS},
    ("generation_token_count",),
)  # fmt: skip
ERRORS = st.one_of(TEXTS, shaped({"message": TEXTS, "code": st.one_of(INTS, TEXTS),
                                  "errorCode": INTS, "errorMessage": TEXTS}))  # fmt: skip
STEPS = st.dictionaries(
    st.sampled_from(["statistics_a", "statistics_b", "raw_output_a"]),
    st.one_of(shaped({"input_tokens": st.one_of(INTS, st.lists(INTS, max_size=2)),
                      "output_tokens": st.one_of(INTS, st.lists(INTS, max_size=2))}), TEXTS),
    max_size=3,
)  # fmt: skip
V3_RESPONSES = st.one_of(
    OLLAMA,
    LLAMACPP,
    CONVERSE,
    shaped({"metadata": shaped({"usage": CONVERSE_USAGE})}, ("metadata",)),
    st.sampled_from([{"messageStart": {"role": "assistant"}}, {"messageStop": {}},
                     {"modelStreamErrorException": {"message": "x"}}]),
    shaped({"recordId": TEXTS, "modelInput": shaped({"x": TEXTS}),
            "modelOutput": st.one_of(CONVERSE, TITAN, LLAMA, ANTHROPIC), "error": ERRORS},
           ("recordId",)),
    TITAN,
    LLAMA,
    shaped({"status": TEXTS, "processed_time": TEXTS, "request": shaped({"x": TEXTS}),
            "response": st.one_of(GEMINI, st.just({}))}, ("request", "status")),
    shaped({"generation": TEXTS, "distilabel_metadata": STEPS}, ("distilabel_metadata",)),
    shaped({"id": TEXTS, "outputs": st.lists(shaped({"finish_reason": TEXTS,
                                                     "message": MESSAGE}), max_size=2),
            "usage": shaped({"completion_tokens": INTS, "prompt_tokens": INTS,
                             "reasoning_tokens": INTS, "total_tokens": INTS,
                             "cached_prompt_text_tokens": INTS}, ("completion_tokens",))},
           ("outputs", "usage")),
    CHAT.map(lambda r: {**r, "usage": {**r["usage"], "num_sources_used": 0}}
             if isinstance(r, dict) and isinstance(r.get("usage"), dict) else r),
    shaped({"object": st.just("chat.completion.chunk"), "choices": st.lists(CHOICE, max_size=1),
            "x_groq": shaped({"id": TEXTS, "usage": USAGE}), "usage": st.none()},
           ("object",)),
    shaped({"type": st.sampled_from(["message_start", "content_block_delta", "message_delta",
                                     "message_stop", "ping", "error"]),
            "usage": shaped({"output_tokens": INTS, "input_tokens": INTS,
                             "cache_read_input_tokens": INTS}),
            "delta": shaped({"stop_reason": TEXTS}), "error": ERRORS, "message": ANTHROPIC},
           ("type",)),
    shaped({"type": st.sampled_from(["response.completed", "response.created", "error",
                                     "response.failed", "response.output_text.delta"]),
            "response": RESPONSES_API, "sequence_number": INTS, "message": TEXTS,
            "code": TEXTS}, ("type",)),
    shaped({"error": ERRORS, "id": TEXTS}, ("error",)),
    st.builds(lambda key, inner, extra: {**extra, key: inner},
              st.sampled_from(["raw", "output", "result", "data"]),
              st.one_of(SGLANG, CHAT, CONVERSE, OLLAMA),
              st.dictionaries(st.sampled_from(["phase", "prompt", "id"]), TEXTS, max_size=2)),
)  # fmt: skip
