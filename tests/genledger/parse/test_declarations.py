"""Formats as declarations: the path language, a user's `[[formats]]`, and the unknown shape."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.config import Config, ConfigError, load_config
from genledger.parse.declarations import BUILT_IN, FormatSet, user_declaration
from genledger.parse.formats import response_facts
from genledger.parse.paths import PathError, parse_condition, parse_field, parse_path
from genledger.refresh.collect import refresh

from ..fast.test_lines import assert_same
from ..hard_lines import INTS, RESPONSE_RECORDS, SHAPED_RESPONSES, TEXTS, encodings, shaped
from ..test_cli_collect import run


def formats(*tables: dict[str, Any]) -> FormatSet:
    """The user's declarations of `tables`, then the built-in ones."""
    return FormatSet(tuple(user_declaration(t, "test") for t in tables))


@pytest.mark.parametrize(
    ("path", "record", "value"),
    [
        ("a.b", {"a": {"b": 3}}, 3),
        ("a.b", {"a": {"b": None}}, None),
        ("a.b", {"a": [1]}, None),
        ("a[].b", {"a": [{"b": 2}, {"b": 5}, {"c": 1}, 7]}, 7),
        ("len(a)", {"a": [1, 2, 3]}, 3),
        ("len(a)", {"a": [[1, 2], [3]]}, 3),  # a saved [1, L] tensor
        ("len(a[].ids)", {"a": [{"ids": [1, 2]}, {"ids": [3]}]}, 3),
        ("len(a)", {"a": "abc"}, "abc"),  # no list: the value itself, reported as invalid
        ("a[].b", {"a": [{"b": 2}, {"b": "x"}]}, "x"),  # the first value that is no count
        ("a[].b", {"a": []}, None),
    ],
)
def test_paths_visit_lists_and_count_lengths(path: str, record: Any, value: Any) -> None:
    assert parse_path(path).raw(record, floats=False) == value


def test_fields_sum_terms_and_take_the_first_present_alternative() -> None:
    both = parse_field("u.a + u.b | c")
    assert both.raw({"u": {"a": 2, "b": 3}, "c": 100}) == 5
    assert both.raw({"u": {"b": 3}, "c": 100}) == 3  # an absent term is 0
    assert both.raw({"u": {}, "c": 100}) == 100  # all absent: the next alternative
    assert both.raw({"u": {"a": 2, "b": True}}) is True  # a term that is no count
    assert parse_field("n").raw({"n": 47.0}, floats=True) == 47
    assert parse_field("n").raw({"n": 47.5}, floats=True) == 47.5


@pytest.mark.parametrize(
    ("condition", "record", "holds"),
    [
        ("a", {"a": 0}, True),
        ("a", {"a": None}, False),
        ("!a", {}, True),
        ("has(a)", {"a": None}, True),
        ("a.t=abort", {"a": {"t": "abort"}}, True),
        ("s!=200", {"s": 200}, False),
        ("s!=200", {"s": 400}, True),
        ("s!=200", {}, False),
        ("s=true", {"s": 1}, False),
    ],
)
def test_conditions(condition: str, record: Any, holds: bool) -> None:
    assert parse_condition(condition).holds(record) is holds


@pytest.mark.parametrize("path", ["", "a..b", "a.b[", "len()", "a b", "a[0].b", "len(a"])
def test_a_bad_path_is_refused_with_a_message_naming_it(path: str) -> None:
    with pytest.raises(PathError, match="path"):
        parse_path(path)


def test_every_built_in_declaration_reads_only_valid_paths() -> None:
    assert all(p.text for d in BUILT_IN for p in d.paths())


MY_PIPELINE = {
    "name": "my_pipeline",
    "completion_tokens": "result.gen.n_tokens",
    "prompt_tokens": "result.prompt.n_tokens",
    "reasoning_tokens": "result.gen.thinking",
    "cached_tokens": "result.prompt.cached",
    "finish_reason": "result.gen.stop",
    "id": "uid",
    "text": "result.gen.text",
}


def my_record(uid: str, n: int, text: str = "4") -> dict[str, Any]:
    """A record of the user's own pipeline, which no built-in declaration knows."""
    gen = {"n_tokens": n, "thinking": n // 2, "stop": "eos", "text": text}
    return {"uid": uid, "result": {"gen": gen, "prompt": {"n_tokens": 7, "cached": 3}}}


def test_a_user_declaration_reads_every_declared_field() -> None:
    mine = formats(MY_PIPELINE)
    facts = response_facts(my_record("u1", 10), mine)
    named = ("record_id", "format", "count_type", "completion_tokens", "count_raw")
    named += ("prompt_tokens", "reasoning_tokens", "cached_tokens", "n_samples")
    assert tuple(getattr(facts, n) for n in named) == (
        "u1",
        "my_pipeline",
        "int",
        10,
        None,
        7,
        5,
        3,
        1,
    )
    assert (facts.finish_reason, facts.empty_output) == ("eos", False)
    assert response_facts(my_record("u2", 10, text=""), mine).empty_output
    for record in (my_record("u1", 10), my_record("u2", 10, text="")):
        assert_same(orjson.dumps(record), "responses", mine)


def test_user_declarations_are_tried_before_the_built_in_ones() -> None:
    record = {"completion_tokens": 5, "mine": {"n": 9}}
    assert response_facts(record).format == "flat"
    mine = formats({"name": "mine", "completion_tokens": "mine.n"})
    facts = response_facts(record, mine)
    assert (facts.format, facts.completion_tokens) == ("mine", 9)
    assert response_facts(record).format == "flat"  # a value, not a setting in force


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"name": "x", "completion_tokens": "a..b"}, "formats[0] (x): bad path 'a..b'"),
        ({"name": "x"}, "formats[0] (x): `completion_tokens`"),
        ({"completion_tokens": "a"}, "formats[0]: `name`"),
        ({"name": "x", "completion_tokens": "a", "colour": "b"}, "unknown key 'colour'"),
        ({"name": "x", "completion_tokens": "a", "text": "len("}, "formats[0] (x)"),
    ],
)
def test_a_bad_declaration_in_the_config_is_a_config_error_naming_it(
    table: dict[str, Any], message: str, tmp_path: Path
) -> None:
    config = tmp_path / "genledger.toml"
    entries = "".join(f"{k} = {orjson.dumps(v).decode()}\n" for k, v in table.items())
    config.write_text("[[formats]]\n" + entries)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(config, env={})


def test_an_unknown_shape_is_missing_and_its_reason_names_the_keys_it_saw(tmp_path: Path) -> None:
    record = {"id": "x", "type": "thing", "usage": {"input_tokens": 1, "output_tokens": 2}}
    record["content"] = "hi"
    root = tmp_path / "data"
    (root / "ds").mkdir(parents=True)
    (root / "ds" / "raw_responses.jsonl").write_bytes(orjson.dumps(record) + b"\n")
    done = run("collect", root, "-o", tmp_path / "s.json", "--state", tmp_path / "st", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    block = orjson.loads((tmp_path / "s.json").read_bytes())["datasets"]["ds"]
    failures = {f["check"]: f for f in block["quality"]["failures"]}
    reason = failures["missing_tokens"]["examples"][0]["reason"]
    assert reason == "no known format; keys: id, type, usage{input_tokens, output_tokens}, content"


def test_the_same_shape_declared_in_genledger_toml_is_counted(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "ds").mkdir(parents=True)
    records = [my_record("u1", 10), my_record("u2", 30), my_record("u3", 8, text="")]
    lines = b"".join(orjson.dumps(r) + b"\n" for r in records)
    (root / "ds" / "raw_responses.jsonl").write_bytes(lines)
    toml = "[[formats]]\n" + "".join(f'{k} = "{v}"\n' for k, v in MY_PIPELINE.items())
    (tmp_path / "genledger.toml").write_text(toml)
    args = ("collect", root, "-o", tmp_path / "s.json", "--state", tmp_path / "st")
    done = run(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    block = orjson.loads((tmp_path / "s.json").read_bytes())["datasets"]["ds"]
    assert (block["total_comp"], block["total_prompt"], block["formats"]) == (
        48,
        21,
        {"my_pipeline": 3},
    )
    assert (block["total_reasoning"], block["total_cached_prompt"]) == (5 + 15 + 4, 9)
    assert block["quality"]["empty_outputs"] == 1
    # a declaration with a bad path stops the run before anything is read: exit 2, one line
    (tmp_path / "genledger.toml").write_text(toml.replace("result.gen.n_tokens", "result..n"))
    done = run(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "bad path 'result..n'" in done.stderr


DECLARED = shaped(
    {"uid": TEXTS, "result": shaped({"gen": shaped({"n_tokens": INTS, "thinking": INTS,
                                                    "text": TEXTS, "stop": TEXTS}),
                                     "prompt": shaped({"n_tokens": INTS, "cached": INTS})})},
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_declared_format_takes_the_fast_path_with_the_general_facts(data: st.DataObject) -> None:
    record = data.draw(st.one_of(DECLARED, SHAPED_RESPONSES, RESPONSE_RECORDS))
    assert_same(data.draw(encodings(record)), "responses", formats(MY_PIPELINE))


def test_new_declarations_read_every_file_again(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "ds").mkdir(parents=True)
    records = [my_record("u1", 10), my_record("u2", 30)]
    (root / "ds" / "raw_responses.jsonl").write_bytes(
        b"".join(orjson.dumps(r) + b"\n" for r in records)
    )
    config = Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    before = refresh(config).stats["datasets"]["ds"]
    assert (before["total_comp"], before["quality"]["missing_tokens"]) == (0, 2)
    declared_config = replace(config, formats=(MY_PIPELINE,))
    after = refresh(declared_config).stats["datasets"]["ds"]
    assert (after["total_comp"], after["quality"]["missing_tokens"]) == (40, 0)
    assert refresh(config).stats["datasets"]["ds"]["total_comp"] == 0  # and back again


def test_a_declared_failure_rule_makes_failed_requests() -> None:
    table = {**MY_PIPELINE, "failed_when": "result.status=error"}
    record = {**my_record("u1", 0), "result": {"status": "error", "gen": {"n_tokens": 0}}}
    facts = response_facts(record, formats(table))
    assert facts.failed_request and facts.request_detail == "failed_when result.status=error"
    assert (facts.format, facts.completion_tokens, facts.n_samples) == ("my_pipeline", 0, 0)


# --- declarations v3 (docs/formats.md) ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "record", "value"),
    [
        ("m.*.o", {"m": {"a": {"o": 3}, "b": {"o": 4}, "c": "text"}}, 7),  # any one key, summed
        ("m.*.o", {"m": {"a": {"x": 3}}}, None),
        ("m.*.o[]", {"m": {"a": {"o": [1, 2]}, "b": {"o": 5}}}, 3),  # only the lists
        ("u.t - u.p", {"u": {"t": 109, "p": 35}}, 74),
        ("u.t - u.p - u.c", {"u": {"t": 109, "p": 35, "c": 12}}, 62),
        ("u.t - u.p", {"u": {"t": 10}}, 10),  # an absent subtracted term is 0
        ("u.t - u.p", {"u": {"p": 35}}, None),  # no added term: absent
        ("u.t - u.p | u.c", {"u": {"c": 12}}, 12),
        ("u.t - u.p", {"u": {"t": 3, "p": 5}}, -2),  # below 0: no count (invalid, not summed)
        ("u.t - u.p", {"u": {"t": 3, "p": "5"}}, "5"),  # a term that is no count
        ("u.a-b", {"u": {"a-b": 4}}, 4),  # without spaces `-` is a key's character
        ("u.a + u.b - u.c", {"u": {"b": 9, "c": 4}}, 5),
    ],
)
def test_fields_take_any_one_key_and_subtract(text: str, record: Any, value: Any) -> None:
    assert parse_field(text).raw(record) == value


def test_a_path_may_not_start_with_any_key() -> None:
    with pytest.raises(PathError, match="cannot come first"):
        parse_path("*.usage")


@pytest.mark.parametrize(
    ("condition", "record", "holds"),
    [
        ('status != ""', {"status": ""}, False),  # Vertex batch: "" is a success
        ('status != ""', {"status": "Bad Request: ..."}, True),
        ('status != ""', {}, False),
        ("status", {"status": ""}, True),  # present: why `failed_when = "status"` is a trap
        ('status == "x"', {"status": "x"}, True),
        ('status == "x"', {"status": "y"}, False),
        ("code == 400", {"code": 400}, True),
        ('s == "a=b"', {"s": "a=b"}, True),  # the leftmost operator splits
        ('type ^= "response."', {"type": "response.created"}, True),
        ('type ^= "response."', {"type": "error"}, False),
        ("has(m.*)", {"m": {"a": None}}, True),
        ("has(m.*)", {"m": {}}, False),
    ],
)
def test_the_failed_when_forms(condition: str, record: Any, holds: bool) -> None:
    assert parse_condition(condition).holds(record) is holds


def test_a_declared_failure_gives_the_sources_own_message_cut() -> None:
    table = {"name": "vertexish", "completion_tokens": "n", "failed_when": 'status != ""'}
    mine = formats(table)
    failed = response_facts({"n": 0, "status": "Bad Request: " + "x" * 500}, mine)
    assert failed.failed_request
    assert failed.request_detail == f'failed_when status != "": Bad Request: {"x" * 187}'
    assert not response_facts({"n": 3, "status": ""}, mine).failed_request
    errored = formats({**table, "failed_when": "has(error)"})
    facts = response_facts({"n": 0, "error": {"code": 7, "message": "quota"}}, errored)
    assert facts.request_detail == "failed_when has(error): quota"


GEMINI_RECORD = {
    "candidates": [{"content": {"parts": [{"text": ""}]}, "finishReason": "MAX_TOKENS"}],
    "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 4, "thoughtsTokenCount": 3,
                      "extraPromptCount": 5, "totalTokenCount": 21},
    "promptFeedback": None,
}  # fmt: skip


def test_extends_changes_only_the_fields_given() -> None:
    table = {
        "name": "my_gemini",
        "extends": "gemini",
        "prompt_tokens": "usageMetadata.promptTokenCount + usageMetadata.extraPromptCount",
    }
    facts = response_facts(GEMINI_RECORD, formats(table))
    # the changed field, and everything else of the built-in: counts, total, answer paths
    assert (facts.format, facts.prompt_tokens, facts.completion_tokens) == ("my_gemini", 14, 7)
    assert (facts.reasoning_tokens, facts.total_tokens, facts.usage_detail) == (3, 21, None)
    assert facts.empty_output and facts.finish_reason == "MAX_TOKENS"
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {}}
    assert response_facts(blocked, formats(table)).request_detail == "blocked SAFETY"
    assert_same(orjson.dumps(GEMINI_RECORD), "responses", formats(table))


def test_extends_adds_a_failure_and_keeps_the_built_in_ones() -> None:
    table = {"name": "batchish", "extends": "openai_batch", "failed_when": "flagged"}
    mine = formats(table)
    line = {"custom_id": "c", "response": None, "error": {"code": "x", "message": "gone"}}
    assert response_facts(line, mine).request_detail == "error x: gone"
    assert response_facts({**line, "flagged": "yes"}, mine).request_detail == (
        "failed_when flagged: yes"
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"name": "x", "extends": "nope"}, "no built-in format 'nope'"),
        ({"name": "x", "extends": 3}, "`extends` must be a string"),
    ],
)
def test_extending_an_unknown_format_is_refused(table: dict[str, Any], message: str) -> None:
    with pytest.raises(PathError, match=re.escape(message)):
        user_declaration(table, "test")


def test_a_user_declaration_that_misreads_a_sources_meaning_is_flagged_and_counted_whole() -> None:
    # Bedrock Converse read as if inputTokens held the cache: the audit catches the trap
    table = {
        "name": "my_bedrock",
        "completion_tokens": "usage.outputTokens",
        "prompt_tokens": "usage.inputTokens",
        "cached_tokens": "usage.cacheReadInputTokens",
        "total_tokens": "usage.totalTokens",
    }
    record = {"usage": {"inputTokens": 3, "outputTokens": 121, "cacheReadInputTokens": 1712,
                        "totalTokens": 1836}}  # fmt: skip
    facts = response_facts(record, formats(table))
    assert facts.usage_detail == "cached 1712 > prompt 3: counted beside it"
    assert (facts.prompt_tokens, facts.input_uncached, facts.cached_tokens) == (1715, 3, 1712)


def test_a_missing_reason_names_nested_keys_three_deep_and_no_settings() -> None:
    settings_ = {f"s{i}": i for i in range(30)}
    record = {"a": {"b": {"c": {"d": 1}}}, "generation_settings": settings_, "choices": [
        {"message": {"role": "assistant"}}]}  # fmt: skip
    reason = response_facts(record).missing_detail
    assert reason == (
        "no known format; keys: a{b{c}}, generation_settings{…}, choices[]{message{role}}"
    )
    many = {f"k{i}": {"x": i} for i in range(40)}
    reason = response_facts(many).missing_detail
    assert reason is not None and reason.endswith(", …")
    named = re.findall(r"\b(?:k\d+|x)\b", reason.split("keys: ", 1)[1])
    assert len(named) == 30  # at most 30 keys named
