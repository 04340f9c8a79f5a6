"""The usage buckets are stated once (genledger/parse/buckets.py): every consumer — the facts
schema, the audit, the stream merge, the books and the stats JSON with its schema, the prices,
the per-model block, the OpenMetrics names — covers exactly the table's buckets, and a bucket
added to the table reaches them all (docs/architecture.md, "Adding a usage bucket")."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any

import genai_prices
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.ledger import cost, metrics, prices, usage
from genledger.ledger.books import BOOKS, GROUP_FIELDS, Sum
from genledger.ledger.schema import BOOK_SCHEMAS, nullable
from genledger.ledger.stats import BOOK_STATS
from genledger.parse import buckets, streams
from genledger.parse import usage as audit
from genledger.parse.buckets import BUCKETS, DECLARED, RESTS, SIDES
from genledger.parse.declarations import BUILT_IN
from genledger.parse.schema import RESPONSES

BUCKET_COLUMNS = {b.column for b in BUCKETS}


def test_the_table_is_whole() -> None:
    buckets.check()
    assert {b.side for b in BUCKETS} == {s.name for s in SIDES}
    assert len({b.name for b in BUCKETS}) == len(BUCKETS)
    assert all(b.name.startswith(f"{b.side}_") for b in BUCKETS)  # a bucket names its side


def test_the_facts_schema_has_a_count_column_per_bucket() -> None:
    for bucket in BUCKETS:
        column = RESPONSES.by_name[bucket.column]
        assert column.kind == "count"
        assert column.declared == bucket.declared  # a rest is settled, never read
        assert bucket.name in column.doc
    declared_parts = [c for c in RESPONSES.declared if c in BUCKET_COLUMNS]
    assert declared_parts == [b.column for b in DECLARED]
    for side in SIDES:
        assert side.column in RESPONSES.declared


def test_the_audit_settles_exactly_the_table() -> None:
    assert tuple(b.column for b in DECLARED) == audit.PARTS
    rests = [c for c in audit.SETTLED if c in {b.column for b in RESTS}]
    assert rests == [b.column for b in RESTS]
    assert buckets.UNITEMISED.column in audit.SETTLED
    assert set(audit.SETTLED) <= set(RESPONSES.fields)


COUNT = st.one_of(st.none(), st.integers(-3, 10_000))


@settings(max_examples=400, deadline=None)
@given(COUNT, COUNT, COUNT, st.lists(COUNT, min_size=len(DECLARED), max_size=len(DECLARED)))
def test_each_rest_is_its_whole_less_its_parts_and_a_part_left_out_is_none(
    prompt: Any, completion: Any, total: Any, parts: list[Any]
) -> None:
    settled = dict(zip(audit.SETTLED, audit.settle(prompt, completion, total, *parts), strict=True))
    given_parts = dict(zip(audit.PARTS, parts, strict=True))
    given_parts[buckets.UNITEMISED.column] = settled[buckets.UNITEMISED.column]
    for side in SIDES:
        whole, rest = settled[side.column], settled[buckets.rest_of(side).column]
        if whole is None or whole < 0:
            assert rest is None
            continue
        inside = sum(
            given_parts[b.column]
            for b in buckets.parts_of(side)
            if given_parts[b.column] is not None and given_parts[b.column] >= 0
        )
        assert rest == whole - inside >= 0
    # the parts a caller does not state are absent (the typed shapes state fewer)
    trailing_none = [*parts[:1], *(None for _ in parts[1:])]
    assert audit.settle(prompt, completion, total, *parts[:1]) == audit.settle(
        prompt, completion, total, *trailing_none
    )


def test_the_books_sum_each_bucket_once_and_the_stats_say_unknown_as_null() -> None:
    sums = [e for e in BOOKS["responses"] if isinstance(e, Sum) and e.column in BUCKET_COLUMNS]
    assert [(e.column, e.stat, e.known) for e in sums] == [
        (b.column, b.stat, b.known) for b in BUCKETS
    ]
    for bucket in BUCKETS:
        assert bucket.stat in BOOK_STATS
        assert BOOK_SCHEMAS[bucket.stat] == nullable({"type": "integer", "minimum": 0})


def test_the_billed_usage_is_the_wholes_and_the_buckets_priced_apart() -> None:
    priced = [s.price for s in SIDES] + [b.price for b in BUCKETS if b.price]
    assert sorted(usage.USAGE_KEYS) == sorted(priced)
    with warnings.catch_warnings():  # genai-prices warns of a usage key it does not know
        warnings.simplefilter("error")
        genai_prices.Usage(**dict.fromkeys(usage.USAGE_KEYS, 1))
    for key in prices.PRICE_KEYS:  # each price key prices some model of the table
        assert any(getattr(p, key, None) is not None for p in _model_prices()), key
    for key, stat, whole in zip(usage.USAGE_KEYS, usage.USAGE_SUMS, usage.WHOLE_OF, strict=True):
        row = next(r for r in (*SIDES, *BUCKETS) if r.price == key)
        assert row.stat == stat
        if whole is not None:  # a part is taken out of its own side's whole
            assert usage.USAGE_KEYS[whole] == buckets.SIDE[row.side].price  # type: ignore[union-attr]
    assert set(GROUP_FIELDS["models"]) >= set(usage.USAGE_SUMS)


def _model_prices() -> list[Any]:
    from genai_prices.data_snapshot import get_snapshot

    found = []
    for provider in get_snapshot().providers:
        for model in provider.models:
            listed = model.prices if isinstance(model.prices, list) else []
            found += [p.prices for p in listed] or [model.prices]
    return found


def test_the_rates_take_each_priced_part_out_of_its_own_whole() -> None:
    # a price per million for every key: 1, 2, 3... so each leaf's cost tells it apart
    rates = prices.Rates(
        tuple(prices.Decimal(i + 1) for i in range(len(usage.USAGE_KEYS))), None, "t"
    )
    counts = [1_000_000 * (10 if w is None else 1) for w in usage.WHOLE_OF]
    expected = 0
    for at, whole in enumerate(usage.WHOLE_OF):
        inside = sum(counts[p] for p, w in enumerate(usage.WHOLE_OF) if w == at)
        leaf = counts[at] - inside if whole is None else counts[at]
        expected += (at + 1) * leaf // 1_000_000  # prices are per million
    assert rates.cost(counts, 0) == expected


def test_the_per_model_block_and_the_metrics_name_the_table() -> None:
    model_stats = {stat: known for stat, _, known in cost.MODEL_STATS}
    for side in SIDES:
        assert model_stats[side.stat] is None
    for bucket in BUCKETS:
        assert (bucket.stat in model_stats) == bucket.by_model
    families = {f.name: f for f in (*metrics.MODEL_FAMILIES, *metrics.DATASET_FAMILIES)}
    for row in (*SIDES, *BUCKETS):
        if row.metric is None:
            continue
        assert row.metric.startswith("gen_ai_usage_") and row.metric.endswith("_tokens")
        family = families[row.metric]
        assert family.stat == row.stat
        assert ("model" in family.labels) == getattr(row, "by_model", True)
    named = {f.stat for f in families.values() if f.name.startswith("gen_ai_")}
    assert named == {r.stat for r in (*SIDES, *BUCKETS) if r.metric}


def test_every_stream_family_merges_usage_as_the_table_says() -> None:
    # every provider documents running totals today: no family sums a field
    assert all(not summed for summed in streams.SUMMED.values())
    for name, columns in streams.USAGE_FIELDS.items():
        assert columns <= set(RESPONSES.declared), name


def test_a_family_whose_bucket_reports_deltas_sums_that_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reasoning = buckets.UNITEMISED
    deltas = dataclasses.replace(reasoning, merge_by_family=(("cohere", "sum"),))
    rows = {**streams._ROWS, reasoning.column: deltas}
    monkeypatch.setattr(streams, "_ROWS", rows)
    fields = streams.summed_fields("cohere")
    reads = {n for n, cols in streams.USAGE_FIELDS.items() if reasoning.column in cols}
    assert fields == reads and "reasoning_tokens" in fields
    assert streams.summed_fields("anthropic") == frozenset()
    merged = streams._merge_usage(
        {"reasoning_tokens": 3, "output_tokens": 5},
        {"reasoning_tokens": 4, "output_tokens": 9},
        fields,
    )
    assert merged == {"reasoning_tokens": 7, "output_tokens": 9}


@pytest.mark.parametrize("decl", BUILT_IN, ids=lambda d: d.name)
def test_every_declared_count_of_a_format_is_a_whole_a_bucket_or_the_total(decl: Any) -> None:
    usage_columns = {s.column for s in SIDES} | {b.column for b in DECLARED} | {"total_tokens"}
    for column, _ in decl.counts:
        assert column in usage_columns or RESPONSES.by_name[column].value_read != "count"


def test_the_formats_page_names_every_bucket_with_its_column_and_stat() -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "formats.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line for line in page.splitlines()
            if line.startswith("| `")}  # fmt: skip
    for bucket in BUCKETS:
        assert f"`{bucket.column}`" in rows[bucket.name]
        assert f"`{bucket.stat}`" in rows[bucket.name]


# A new bucket as a row of the table, and a user's format giving its path (the two code files
# a new bucket touches; the third is docs/formats.md): run in a fresh interpreter, where the
# table is changed before anything is made from it.
NEW_BUCKET = r"""
import json, sys
import genledger.parse.buckets as b

audio = b.Bucket(
    "input_audio", "audio prompt tokens (a part of prompt), where reported", side="input",
    column="audio_tokens", declared=True, audit="audio", stat="total_input_audio",
    known="n_input_audio", label="bucket/input_audio", price="input_audio_tokens",
    metric="gen_ai_usage_audio_input_tokens", metric_help="Audio input tokens",
)
b.BUCKETS = (*b.DECLARED, audio, *b.RESTS)
b.DECLARED = tuple(x for x in b.BUCKETS if x.declared)
b.check()

from genledger.cli import main
from genledger.ledger.metrics import family_names
from genledger.ledger.schema import stats_schema
from genledger.ledger.usage import USAGE_KEYS

code = main(["collect", sys.argv[1], "-o", sys.argv[2], "--state", sys.argv[3],
             "--config", sys.argv[4], "-q"])
from assets.metadata import _role_numbers

import jsonschema

document = json.load(open(sys.argv[2]))
block = document["datasets"]["ds"]
print(json.dumps({
    "valid": jsonschema.Draft202012Validator(stats_schema()).is_valid(document),
    "code": code, "block": block, "usage_keys": USAGE_KEYS, "metrics": family_names(),
    "schema": sorted(stats_schema()["$defs"]["dataset"]["properties"]),
    "metadata": _role_numbers(block, "responses"),
}))
"""


def _chat(prompt: int, cached: int, audio: int, completion: int) -> dict[str, Any]:
    details = {"cached_tokens": cached, "audio_tokens": audio}
    usage = {"prompt_tokens": prompt, "completion_tokens": completion,
             "prompt_tokens_details": details}  # fmt: skip
    return {"object": "chat.completion", "choices": [{"message": {"content": "hi"}}],
            "usage": usage}  # fmt: skip


@pytest.mark.stats_by_hand  # by a genledger with one more bucket: checked against its schema
def test_a_new_bucket_reaches_every_consumer(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    data = tmp_path / "data" / "ds"
    data.mkdir(parents=True)
    # OpenAI's prompt_tokens_details.audio_tokens is a part of prompt_tokens, as cached_tokens
    records = [_chat(100, 30, 50, 10), _chat(40, 0, 0, 5), _chat(10, 5, 20, 1)]
    (data / "raw_responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    config = tmp_path / "genledger.toml"
    config.write_text(
        '[[formats]]\nname = "chat_audio"\nextends = "openai_chat"\n'
        'audio_tokens = "usage.prompt_tokens_details.audio_tokens"\n'
    )
    args = [tmp_path / "data", tmp_path / "stats.json", tmp_path / "state", config]
    done = subprocess.run(
        [sys.executable, "-c", NEW_BUCKET, *map(str, args)],
        cwd=root, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    block = found["block"]
    assert block["formats"] == {"chat_audio": 3}  # a user's format is tried first
    assert found["valid"]  # the stats JSON matches its (new) JSON Schema
    assert block["total_input_audio"] == 50 + 0 + 20  # the books' sum, in the stats JSON
    # each prompt less its cached and audio parts; the third's parts (5 + 20) exceed its
    # prompt (10): counted beside it, so its prompt is 35 and 10 of it uncached
    assert block["total_input_uncached"] == (100 - 30 - 50) + 40 + 10
    assert "total_input_audio" in found["schema"]  # its JSON Schema
    assert "input_audio_tokens" in found["usage_keys"]  # billed at genai-prices' audio rate
    assert "gen_ai_usage_audio_input_tokens" in found["metrics"]
    assert found["metadata"]["bucket/input_audio"] == 70
    # the audit knows it as a part of the prompt: 5 + 20 > 10 is counted beside it
    assert block["quality"]["usage_inconsistent"] == 1
    assert block["total_prompt"] == 100 + 40 + (10 + 25)
