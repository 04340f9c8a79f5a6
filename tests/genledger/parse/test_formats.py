"""docs/formats.md format table: which path gives the count, prompt count and finish reason."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from genledger.parse.formats import record_id, response_facts


def facts_of(text: str) -> Any:
    """Facts of a record written as a JSON line, parsed as the reader parses it."""
    return response_facts(orjson.loads(text))


SGLANG = (
    '{"text": " Paris.", "output_ids": [12095, 13, 1084, 374, 279], "meta_info": {"id": "c6",'
    ' "finish_reason": {"type": "length", "length": 5}, "prompt_tokens": 7,'
    ' "completion_tokens": 5, "cached_tokens": 2}}'
)
CHAT = (
    '{"id": "chatcmpl-abc", "object": "chat.completion", "choices": [{"index": 0, "message":'
    ' {"role": "assistant", "content": "4.", "reasoning_content": "2+2"}, "finish_reason":'
    ' "stop"}], "usage": {"prompt_tokens": 24, "completion_tokens": 1577, "total_tokens": 1601}}'
)
COMPLETION = (
    '{"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, "text": "4.",'
    ' "finish_reason": "length"}], "usage": {"prompt_tokens": 3, "completion_tokens": 16}}'
)
BATCH = (
    '{"id": "batch_req_123", "custom_id": "request-2", "response": {"status_code": 200,'
    ' "request_id": "req_123", "body": {"id": "chatcmpl-123", "object": "chat.completion",'
    ' "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello."},'
    ' "finish_reason": "stop"}], "usage": {"prompt_tokens": 22, "completion_tokens": 2,'
    ' "total_tokens": 24}}}, "error": null}'
)
WRAPPED = (
    '{"id": "w-1", "response": {"id": "chatcmpl-9", "object": "chat.completion", "choices":'
    ' [{"index": 0, "message": {"content": "ok"}, "finish_reason": "tool_calls"}],'
    ' "usage": {"prompt_tokens": 11, "completion_tokens": 9}}}'
)
TGI = (
    '{"generated_text": " Paris is the capital.", "details": {"finish_reason": "eos_token",'
    ' "generated_tokens": 6, "seed": null, "prefill": [], "tokens": []}}'
)
FLAT = (
    '{"id": "B2-000123", "input_ids": [163594, 14062, 163601], "output_ids": [3900, 554, 261,'
    ' 163586], "text": "def add(a, b): ...", "prompt_tokens": 3, "completion_tokens": 4,'
    ' "finish_reason": "stop"}'
)
VLLM = (
    '{"request_id": "0", "prompt_token_ids": [1, 2, 3], "outputs": [{"index": 0, "text": "...",'
    ' "token_ids": [4, 5, 6, 7], "finish_reason": "length", "stop_reason": null}],'
    ' "finished": true}'
)
OUTPUT_IDS = '{"input_ids": [1, 2], "output_ids": [9, 8, 7], "finish_reason": {"type": "stop"}}'


@pytest.mark.parametrize(
    ("line", "fmt", "completion", "prompt", "finish", "rid"),
    [
        (SGLANG, "sglang_generate", 5, 7, "length", "c6"),
        (CHAT, "openai_chat", 1577, 24, "stop", "chatcmpl-abc"),
        (COMPLETION, "openai_completion", 16, 3, "length", "cmpl-1"),
        (BATCH, "openai_batch", 2, 22, "stop", "request-2"),
        (WRAPPED, "wrapped_openai", 9, 11, "tool_calls", "w-1"),
        (TGI, "tgi", 6, None, "eos_token", None),
        (FLAT, "flat", 4, 3, "stop", "B2-000123"),
        (VLLM, "vllm_offline", 4, 3, "length", "0"),
        (OUTPUT_IDS, "derived", 3, 2, "stop", None),
    ],
)
def test_each_format_of_the_table_resolves_its_own_paths(
    line: str, fmt: str, completion: int, prompt: int | None, finish: str, rid: str | None
) -> None:
    facts = facts_of(line)
    assert (facts.format, facts.completion_tokens, facts.count_type) == (fmt, completion, "int")
    assert (facts.prompt_tokens, facts.finish_reason, facts.record_id) == (prompt, finish, rid)
    assert not facts.failed_request and not facts.think_leak


def test_legacy_completion_is_recognised_by_choice_text_without_object() -> None:
    record = orjson.loads(COMPLETION)
    del record["object"]
    assert response_facts(record).format == "openai_completion"


def test_object_field_decides_chat_versus_completion() -> None:
    record = orjson.loads(COMPLETION)
    record["object"] = "chat.completion"
    assert response_facts(record).format == "openai_chat"


def test_chat_completion_without_object_stays_openai_chat() -> None:
    record = orjson.loads(CHAT)
    del record["object"]
    assert response_facts(record).format == "openai_chat"


def test_first_present_path_wins_over_later_ones() -> None:
    record = {
        "meta_info": {"completion_tokens": 5, "prompt_tokens": 1},
        "usage": {"completion_tokens": 50, "prompt_tokens": 10},
        "completion_tokens": 500,
        "output_ids": [1, 2, 3, 4, 5],
    }
    facts = response_facts(record)
    assert (facts.format, facts.completion_tokens, facts.prompt_tokens) == ("sglang_generate", 5, 1)


def test_null_count_skips_to_the_next_path() -> None:
    record = {
        "meta_info": {"completion_tokens": None, "prompt_tokens": 3},
        "usage": {"completion_tokens": None},
        "details": {"generated_tokens": 8, "finish_reason": "length"},
    }
    facts = response_facts(record)
    assert (facts.format, facts.completion_tokens, facts.finish_reason) == ("tgi", 8, "length")


def test_outputs_without_a_request_id_or_prompt_ids_are_no_vllm_dump() -> None:
    record = {"output_ids": None, "outputs": [{"token_ids": [1, 2], "finish_reason": "stop"}]}
    facts = response_facts(record)
    assert (facts.format, facts.completion_tokens, facts.output_len) == (None, None, None)
    assert facts.missing_detail == (
        "no known format; keys: output_ids, outputs[]{token_ids, finish_reason}"
    )


def test_mistyped_parent_is_not_a_present_path() -> None:
    record = {"meta_info": [1, 2], "usage": "n/a", "completion_tokens": 4}
    assert response_facts(record).format == "flat"


def test_invalid_count_on_an_earlier_path_still_wins_and_is_not_valid() -> None:
    record = {"usage": {"completion_tokens": "12"}, "completion_tokens": 12}
    facts = response_facts(record)
    assert (facts.format, facts.count_type, facts.completion_tokens) == (
        "openai_chat",
        "string",
        None,
    )


@pytest.mark.parametrize(
    ("raw", "count_type", "valid"),
    [
        ("true", "bool", None),
        ("false", "bool", None),
        ('"1577"', "string", None),
        ("1577.0", "float", None),
        ("1.5e3", "float", None),
        ("-3", "int", -3),
        ("0", "int", 0),
        ("1577", "int", 1577),
        ("[1]", "array", None),
        ('{"n": 1}', "object", None),
    ],
)
def test_count_facts_keep_the_json_type_of_the_value(
    raw: str, count_type: str, valid: int | None
) -> None:
    facts = facts_of('{"completion_tokens": ' + raw + "}")
    assert (facts.format, facts.count_type, facts.completion_tokens) == ("flat", count_type, valid)
    assert (facts.count_raw is None) == (valid is not None)


def test_record_without_any_path_has_no_format() -> None:
    facts = facts_of('{"id": "x", "text": "an answer", "meta": {"tokens": 9}}')
    assert (facts.format, facts.count_type, facts.completion_tokens) == (None, None, None)


def test_prompt_count_that_is_not_an_int_is_not_kept() -> None:
    facts = facts_of('{"completion_tokens": 3, "prompt_tokens": "7"}')
    assert facts.prompt_tokens is None


def test_finish_reason_object_is_unwrapped_and_null_is_none() -> None:
    assert facts_of('{"completion_tokens": 1, "finish_reason": {"type": "abort"}}').finish_reason
    assert (
        facts_of('{"meta_info": {"completion_tokens": 1, "finish_reason": null}}').finish_reason
        is None
    )


def test_output_length_is_reported_next_to_a_reported_count() -> None:
    facts = facts_of('{"completion_tokens": 9, "output_ids": [1, 2, 3]}')
    assert (facts.completion_tokens, facts.output_len) == (9, 3)


def test_record_id_prefers_custom_id_then_id_then_meta_info_id() -> None:
    assert record_id({"custom_id": "a", "id": "b", "meta_info": {"id": "c"}}) == "a"
    assert record_id({"custom_id": None, "id": "b", "meta_info": {"id": "c"}}) == "b"
    assert record_id({"meta_info": {"id": "c"}}) == "c"
    assert record_id({"id": 7}) == "7"
    assert record_id({"custom_id": "", "id": "b"}) == "b"
    assert record_id({"id": True}) is None
    assert record_id({"text": "no id"}) is None


@pytest.mark.parametrize(
    "record",
    [
        {"id": "b1", "custom_id": "r1", "response": None, "error": {"code": "x", "message": "m"}},
        {"custom_id": "r1", "response": {"status_code": 500, "body": {"error": {"message": "m"}}}},
        {"custom_id": "r1", "response": {"status_code": 429, "body": None}},
        {"id": "batch_req_1", "response": None, "error": {"code": "timeout"}},
        {"id": "batch_req_1", "response": {"status_code": 400, "body": {"error": {}}}},
    ],
)
def test_failed_batch_lines_are_failed_requests_without_a_count(record: dict[str, Any]) -> None:
    facts = response_facts(record)
    assert facts.failed_request and facts.request_detail
    assert (facts.format, facts.count_type, facts.n_samples) == ("openai_batch", None, 0)
    assert facts.missing_detail is None


def test_successful_batch_and_wrapped_lines_are_not_failed_requests() -> None:
    assert not facts_of(BATCH).failed_request
    assert not facts_of(WRAPPED).failed_request


@pytest.mark.parametrize(
    ("record", "leaks"),
    [
        ({"choices": [{"message": {"content": "a</think>b", "reasoning_content": None}}]}, True),
        ({"choices": [{"message": {"content": "a</think>b"}}]}, True),
        ({"choices": [{"message": {"content": "a</think>b", "reasoning_content": "r"}}]}, False),
        ({"choices": [{"message": {"content": "a</think>b", "reasoning": "r"}}]}, False),
        ({"choices": [{"message": {"content": "no tag", "reasoning_content": None}}]}, False),
        # raw completions carry the whole trace by design: never a leak
        ({"choices": [{"text": "a</think>b"}], "object": "text_completion"}, False),
        ({"text": "a</think>b", "meta_info": {"completion_tokens": 3}}, False),
        ({"text": "a</think>b", "completion_tokens": 3}, False),
        ({"generated_text": "a</think>b", "details": {"generated_tokens": 3}}, False),
        ({"request_id": "r", "outputs": [{"text": "</think>x", "token_ids": [1]}]}, False),
        (
            {
                "id": "w",
                "response": {
                    "choices": [{"message": {"content": "</think>x"}}],
                    "usage": {"completion_tokens": 2},
                },
            },
            True,
        ),
        (
            {
                "custom_id": "b",
                "response": {
                    "status_code": 200,
                    "body": {
                        "choices": [{"message": {"content": "</think>x"}}],
                        "usage": {"completion_tokens": 2},
                    },
                },
            },
            True,
        ),
        ({"choices": [{"message": {"content": None, "reasoning_content": None}}]}, False),
    ],
)
def test_think_leak_needs_a_closing_tag_and_no_reasoning(
    record: dict[str, Any], leaks: bool
) -> None:
    assert response_facts(record).think_leak is leaks


def test_nested_id_lists_of_a_saved_tensor_are_unwrapped_once() -> None:
    facts = facts_of('{"input_ids": [[1, 2]], "output_ids": [[7, 8, 9]]}')
    assert (facts.format, facts.completion_tokens, facts.prompt_tokens, facts.output_len) == (
        "derived",
        3,
        2,
        3,
    )


def test_output_ids_that_are_not_a_list_are_an_invalid_derived_count() -> None:
    facts = facts_of('{"output_ids": "1 2 3"}')
    assert (facts.format, facts.count_type, facts.completion_tokens) == (
        "derived",
        "string",
        None,
    )
