"""The cost (docs/cost.md): every priced record costs what genai-prices says it costs.

The expected price of a record is genai-prices' own: its usage extracted from the record by the
library's extractors (`extract_usage`, independent of genledger's counting) and priced by its
`calc_price` at the record's time, with the batch price context for batch lines; never a number
typed here. User prices are priced by the library's `ModelPrice` with the user's numbers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from genai_prices import Usage, calc_price, extract_usage
from genai_prices.data_snapshot import get_snapshot
from genai_prices.types import ModelPrice, TieredPrices, TimeOfDateConstraint
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.config import Config, FleetSettings, UserPrice
from genledger.ledger.books import account
from genledger.ledger.prices import BATCH, PriceTable
from genledger.ledger.tally import FileTally
from genledger.ledger.usage import SLOT_S, TIER_STARTS, band, priced_usage
from genledger.parse.line import facts_of_line
from genledger.refresh.collect import refresh

from ..conftest import comparable, jl

T0 = 1_794_000_000  # 2026-11-07: the records' own times (batch prices exist by then)
FILE_TIME = T0 + 7 * 3600  # the file time of records that carry none


def moment(seconds: float) -> datetime:
    """A POSIX time as an aware datetime."""
    return datetime.fromtimestamp(seconds, tz=UTC)


# --- records as the APIs return them ------------------------------------------------------------


def chat(
    rid: str,
    model: str,
    prompt: int,
    completion: int,
    cached: int = 0,
    reasoning: int = 0,
    created: int = T0,
) -> dict[str, Any]:
    """An OpenAI chat completion."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return {
        "id": rid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": usage,
    }


def completion(rid: str, model: str, prompt: int, output: int) -> dict[str, Any]:
    """A legacy completion."""
    return {
        "id": rid,
        "object": "text_completion",
        "created": T0 + 60,
        "model": model,
        "choices": [{"index": 0, "text": " ok", "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
        },
    }


def responses(
    rid: str, model: str, prompt: int, output: int, cached: int, reasoning: int
) -> dict[str, Any]:
    """An OpenAI Responses API response."""
    return {
        "id": rid,
        "object": "response",
        "created_at": T0 + 1800,
        "model": model,
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "m",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        ],
        "usage": {
            "input_tokens": prompt,
            "output_tokens": output,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": prompt + output,
        },
    }


def message(
    rid: str,
    model: str,
    fresh: int,
    output: int,
    read: int = 0,
    written: int = 0,
    thinking: int | None = None,
) -> dict[str, Any]:
    """An Anthropic message (no time of its own)."""
    usage: dict[str, Any] = {
        "input_tokens": fresh,
        "output_tokens": output,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
    }
    if thinking is not None:
        usage["output_tokens_details"] = {"thinking_tokens": thinking}
    return {
        "id": rid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": usage,
    }


def gemini(
    rid: str, model: str, prompt: int, candidates: int, thoughts: int = 0, cached: int = 0
) -> dict[str, Any]:
    """A Gemini GenerateContentResponse (REST camelCase)."""
    usage = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
    }
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    if cached:
        usage["cachedContentTokenCount"] = cached
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": rid,
        "createTime": moment(T0 + 5400).isoformat().replace("+00:00", "Z"),
    }


def cohere(rid: str, prompt: int, output: int) -> dict[str, Any]:
    """A Cohere v2 chat response (it names no model)."""
    return {
        "id": rid,
        "finish_reason": "COMPLETE",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        "usage": {"tokens": {"input_tokens": float(prompt), "output_tokens": float(output)}},
    }


# --- what genai-prices says each record costs ----------------------------------------------------


def library_price(
    body: dict[str, Any], provider: str, flavor: str, when: float, batch: bool = False
) -> Decimal:
    """genai-prices' price of one record: its own extraction, its own calculation."""
    found = extract_usage(body, provider_id=provider, api_flavor=flavor)
    context = BATCH if batch else None
    return found.calc_price(genai_request_timestamp=moment(when), price_context=context).total_price


def priced_dataset() -> dict[str, list[tuple[dict[str, Any], Decimal]]]:
    """Datasets of every built-in format of a priced provider: (line, genai-prices' price) each;
    cache reads and writes, reasoning, long prompts above a tier, batch lines."""
    openai = [
        chat("c1", "gpt-4o", 1_200, 300, cached=1_024),
        chat("c2", "gpt-4o-mini", 40_000, 90),
        chat("c3", "o3", 5_000, 4_000, cached=2_048, reasoning=3_500, created=T0 + 3 * 3600),
        completion("t1", "gpt-3.5-turbo-instruct", 700, 120),
        responses("r1", "gpt-5", 300_000, 2_000, cached=100_000, reasoning=1_500),
        responses("r2", "o3", 9_000, 700, cached=0, reasoning=600),
    ]
    lines = {"openai_api": [(r, _openai_price(r)) for r in openai]}
    wrapped = chat("w1", "gpt-4.1", 2_000, 100)
    lines["wrapped"] = [({"id": "w1", "response": wrapped}, _openai_price(wrapped))]
    batch = [chat(f"b{i}", "gpt-4o-mini", 3_000 + i, 200 + i, cached=1_024) for i in range(3)]
    lines["openai_batch"] = [
        (
            {
                "id": f"batch_{b['id']}",
                "custom_id": b["id"],
                "error": None,
                "response": {"status_code": 200, "request_id": "q", "body": b},
            },
            _openai_price(b, batch=True),
        )
        for b in batch
    ]
    claude = [
        message("m1", "claude-sonnet-4-5", 1_000, 400, read=20_000, written=3_000),
        message("m2", "claude-sonnet-4-5", 280_000, 900, read=15_000, written=10_000),  # long
        message("m3", "claude-opus-4-1", 5_000, 2_000, thinking=1_200),
    ]
    lines["anthropic"] = [(m, library_price(m, "anthropic", "default", FILE_TIME)) for m in claude]
    lines["anthropic_batch"] = [
        (
            {"custom_id": f"q{i}", "result": {"type": "succeeded", "message": m}},
            library_price(m, "anthropic", "default", FILE_TIME, batch=True),
        )
        for i, m in enumerate(claude)
    ]
    gem = [
        gemini("g1", "gemini-2.5-pro", 12_000, 800, thoughts=2_000, cached=4_096),
        gemini("g2", "gemini-2.5-pro", 250_000, 1_000, thoughts=500),  # above the 200k tier
        gemini("g3", "gemini-2.5-flash", 3_000, 300),
    ]
    when = T0 + 5400
    lines["gemini"] = [(g, library_price(g, "google", "default", when)) for g in gem]
    lines["gemini_batch"] = [
        ({"key": f"k{i}", "response": g}, library_price(g, "google", "default", when, batch=True))
        for i, g in enumerate(gem)
    ]
    return lines


def _openai_price(record: dict[str, Any], batch: bool = False) -> Decimal:
    flavor = "responses" if record.get("object") == "response" else "chat"
    when = record.get("created", record.get("created_at"))
    return library_price(record, "openai", flavor, float(when), batch)


def write_tree(root: Path, datasets: dict[str, list[dict[str, Any]]]) -> Path:
    """Each dataset's records as its responses file, written at `FILE_TIME`."""
    for name, records in datasets.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "raw_responses.jsonl"
        path.write_bytes(jl(*records))
        os.utime(path, (FILE_TIME, FILE_TIME))
    return root


def collect(tmp_path: Path, datasets: dict[str, list[dict[str, Any]]], **config: Any) -> dict:
    """A full collect of the datasets; the stats JSON."""
    root = write_tree(tmp_path / "data", datasets)
    settings = Config(
        data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "state", **config
    )
    return refresh(settings, full=True).stats


# --- the tests ----------------------------------------------------------------------------------


def test_every_priced_format_costs_what_genai_prices_says_record_by_record(tmp_path: Path) -> None:
    data = priced_dataset()
    stats = collect(tmp_path, {name: [r for r, _ in lines] for name, lines in data.items()})
    for name, lines in data.items():
        block = stats["datasets"][name]
        expected = sum((price for _, price in lines), start=Decimal(0))
        assert block["cost_usd"] == pytest.approx(float(expected), rel=1e-12), name
        assert block["cost_unpriced"] == {"n_records": 0, "models": []}, name
    total = sum((p for lines in data.values() for _, p in lines), start=Decimal(0))
    assert stats["totals"]["cost_usd"] == pytest.approx(float(total), rel=1e-12)


def test_each_models_cost_is_its_records_and_the_models_add_up_to_the_dataset(
    tmp_path: Path,
) -> None:
    lines = priced_dataset()["openai_api"]
    block = collect(tmp_path, {"ds": [r for r, _ in lines]})["datasets"]["ds"]
    by_model: dict[str, Decimal] = {}
    for record, price in lines:
        by_model[record["model"]] = by_model.get(record["model"], Decimal(0)) + price
    assert {m: e["cost_usd"] for m, e in block["models"].items()} == pytest.approx(
        {m: float(p) for m, p in by_model.items()}, rel=1e-12
    )
    for stat in ("n_done", "total_comp", "total_prompt", "total_reasoning", "total_cached_prompt"):
        assert sum(e[stat] or 0 for e in block["models"].values()) == block[stat], stat


def test_a_long_prompt_pays_its_tier_and_a_batch_line_the_batch_price(tmp_path: Path) -> None:
    short = message("s", "claude-sonnet-4-5", 1_000, 500)
    long = message("l", "claude-sonnet-4-5", 300_000, 500)
    stats = collect(
        tmp_path,
        {
            "api": [short, long],
            "batch": [{"custom_id": "x", "result": {"type": "succeeded", "message": long}}],
        },
    )
    usage = Usage(input_tokens=300_000, output_tokens=500)
    at = moment(FILE_TIME)
    tiered = calc_price(
        usage, "claude-sonnet-4-5", provider_id="anthropic", genai_request_timestamp=at
    ).total_price
    flat_rate = ModelPrice(**{k: _base(v) for k, v in tiered_model_price(at).__dict__.items()})
    assert tiered != flat_rate.calc_price(usage)["total_price"], "the table has no long tier"
    batch = calc_price(
        usage,
        "claude-sonnet-4-5",
        provider_id="anthropic",
        genai_request_timestamp=at,
        price_context=BATCH,
    ).total_price
    assert batch < tiered
    assert stats["datasets"]["batch"]["cost_usd"] == pytest.approx(float(batch), rel=1e-12)
    short_price = library_price(short, "anthropic", "default", FILE_TIME)
    api = stats["datasets"]["api"]["cost_usd"]
    assert api == pytest.approx(float(tiered + short_price), rel=1e-12)


def tiered_model_price(at: datetime) -> ModelPrice:
    """claude-sonnet-4-5's resolved price (with its tiers)."""
    found = calc_price(
        Usage(input_tokens=1),
        "claude-sonnet-4-5",
        provider_id="anthropic",
        genai_request_timestamp=at,
    )
    return found.model_price


def _base(value: Any) -> Any:
    return value.base if isinstance(value, TieredPrices) else value


def test_cohere_records_are_priced_as_the_dataset_names_their_model(tmp_path: Path) -> None:
    records = [cohere("a", 2_000, 300), cohere("b", 800, 1_200)]
    plain = collect(tmp_path / "plain", {"co": records})["datasets"]["co"]
    assert plain["cost_usd"] is None
    assert plain["cost_unpriced"] == {"n_records": 2, "models": ["(unnamed)"]}
    named = collect(tmp_path / "named", {"co": records}, models={"co": "command-r-plus"})
    block = named["datasets"]["co"]
    expected = sum(
        (
            calc_price(
                extract_usage(r, provider_id="cohere", api_flavor="tokens").usage,
                "command-r-plus",
                provider_id="cohere",
                genai_request_timestamp=moment(FILE_TIME),
            ).total_price
            for r in records
        ),
        start=Decimal(0),
    )
    assert block["cost_usd"] == pytest.approx(float(expected), rel=1e-12)
    assert list(block["models"]) == ["command-r-plus"]


def test_a_users_price_overrides_the_table_and_prices_a_model_it_lacks(tmp_path: Path) -> None:
    records = [
        chat("a", "gpt-4o", 10_000, 500, cached=2_048),
        chat("b", "our-finetune-7b", 3_000, 700),
        {"completion_tokens": 900, "prompt_tokens": 100, "model": "our-finetune-7b"},  # flat
    ]
    prices = {
        "gpt-4o": UserPrice(input=1.0, output=3.0, cache_read=0.1),
        "our-finetune-7b": UserPrice(input=0.2, output=0.4),
    }
    block = collect(tmp_path, {"ds": records}, prices=prices)["datasets"]["ds"]

    def by_user(model: str, usage: Usage) -> Decimal:
        price = prices[model]
        mine = ModelPrice(
            input_mtok=Decimal(str(price.input)),
            output_mtok=Decimal(str(price.output)),
            cache_read_mtok=None if price.cache_read is None else Decimal(str(price.cache_read)),
        )
        return mine.calc_price(usage)["total_price"]

    gpt = by_user("gpt-4o", Usage(input_tokens=10_000, cache_read_tokens=2_048, output_tokens=500))
    ours = by_user("our-finetune-7b", Usage(input_tokens=3_000, output_tokens=700))
    ours += by_user("our-finetune-7b", Usage(input_tokens=100, output_tokens=900))
    table = calc_price(
        Usage(input_tokens=10_000, cache_read_tokens=2_048, output_tokens=500),
        "gpt-4o",
        provider_id="openai",
        genai_request_timestamp=moment(T0),
    ).total_price
    assert table != gpt, "the user's price must differ from the table's for this test"
    assert block["models"]["gpt-4o"]["cost_usd"] == pytest.approx(float(gpt), rel=1e-12)
    assert block["models"]["our-finetune-7b"]["cost_usd"] == pytest.approx(float(ours), rel=1e-12)
    assert block["prices"]["user"] == ["gpt-4o", "our-finetune-7b"]
    assert block["cost_unpriced"]["n_records"] == 0


def test_an_unpriced_model_is_counted_apart_never_as_zero_dollars(tmp_path: Path) -> None:
    priced = chat("a", "gpt-4o", 1_000, 100)
    records = [
        priced,
        chat("b", "no-such-model-xyz", 5_000, 500),
        chat("c", "no-such-model-xyz", 6_000, 600),
    ]
    stats = collect(tmp_path, {"ds": records, "none": [records[1]]})
    block = stats["datasets"]["ds"]
    assert block["cost_unpriced"] == {"n_records": 2, "models": ["no-such-model-xyz"]}
    assert block["cost_usd"] == pytest.approx(float(_openai_price(priced)), rel=1e-12)
    assert block["models"]["no-such-model-xyz"]["cost_usd"] is None
    nothing = stats["datasets"]["none"]
    assert (nothing["cost_usd"], nothing["cost_projected_usd"]) == (None, None)
    assert stats["totals"]["cost_unpriced"] == {"n_records": 3, "models": ["no-such-model-xyz"]}


def test_the_summary_names_unpriced_records_beside_the_cost(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "data",
        {"ds": [chat("a", "gpt-4o", 1_000, 100), chat("b", "no-such-model-xyz", 10, 10)]},
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "genledger.cli",
            "collect",
            str(root),
            "-o",
            str(tmp_path / "s.json"),
            "--state",
            str(tmp_path / "st"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    cost = [line for line in done.stderr.splitlines() if "cost" in line]
    assert cost and all("1 record unpriced" in line for line in cost), done.stderr
    assert all("no-such-model-xyz" in line for line in cost)


def test_the_projection_scales_the_cost_so_far_to_the_expected_records(tmp_path: Path) -> None:
    lines = priced_dataset()["anthropic"]
    root = write_tree(tmp_path / "data", {"ds": [r for r, _ in lines]})
    (root / "ds" / "prompts.jsonl").write_bytes(jl(*({"p": i} for i in range(10))))
    stats = refresh(
        Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    ).stats
    block = stats["datasets"]["ds"]
    spent = sum((p for _, p in lines), start=Decimal(0))
    assert block["cost_projected_usd"] == pytest.approx(float(spent / len(lines) * 10), rel=1e-12)
    assert stats["totals"]["cost_projected_usd"] == block["cost_projected_usd"]


def test_a_fleet_costs_its_gpu_hours_from_the_first_write_to_the_last_shared_by_tokens(
    tmp_path: Path,
) -> None:
    root = tmp_path / "data"
    sglang = [
        {
            "text": "x",
            "meta_info": {"id": f"s{i}", "completion_tokens": 100 * (i + 1), "prompt_tokens": 10},
        }
        for i in range(4)
    ]
    vllm = [
        {
            "request_id": "v",
            "prompt_token_ids": [1, 2],
            "outputs": [{"index": 0, "text": "y", "token_ids": list(range(250))}],
        }
    ]
    times = {
        "a/raw_responses.jsonl": T0,
        "a/part-1/raw_responses.jsonl": T0 + 3600,
        "b/raw_responses.jsonl": T0 + 3 * 3600,
    }
    files = {
        "a/raw_responses.jsonl": sglang[:2],
        "a/part-1/raw_responses.jsonl": sglang[2:],
        "b/raw_responses.jsonl": vllm,
    }
    for name, records in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(jl(*records))
        os.utime(root / name, (times[name], times[name]))
    (root / "c").mkdir()
    (root / "c" / "raw_responses.jsonl").write_bytes(jl(chat("x", "gpt-4o", 100, 10)))
    fleet = FleetSettings(gpu_hour_usd=2.5, gpus=8)
    stats = refresh(
        Config(
            data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st", fleet=fleet
        )
    ).stats
    hours = (max(times.values()) - min(times.values())) / 3600
    whole = 2.5 * 8 * hours
    tokens = {"a": sum(r["meta_info"]["completion_tokens"] for r in sglang), "b": 250}
    for name, generated in tokens.items():
        share = whole * generated / sum(tokens.values())
        assert stats["datasets"][name]["cost_usd"] == pytest.approx(share, rel=1e-9), name
        assert stats["datasets"][name]["prices"]["fleet"]["hours"] == pytest.approx(hours)
    assert stats["datasets"]["c"]["prices"]["fleet"] is None
    assert stats["datasets"]["a"]["models"]["(unnamed)"]["priced_by"] == ["fleet"]
    assert stats["totals"]["prices"]["fleet"]["gpus"] == 8
    api = float(_openai_price(chat("x", "gpt-4o", 100, 10)))
    assert stats["totals"]["cost_usd"] == pytest.approx(whole + api, rel=1e-9)


def test_self_hosted_records_without_a_fleet_or_a_price_are_unpriced(tmp_path: Path) -> None:
    records = [{"text": "x", "meta_info": {"id": "s", "completion_tokens": 9}}]
    block = collect(tmp_path, {"ds": records})["datasets"]["ds"]
    assert block["cost_usd"] is None
    assert block["cost_unpriced"] == {"n_records": 1, "models": ["(unnamed)"]}


def test_an_append_prices_only_the_new_records_and_equals_a_full_scan(tmp_path: Path) -> None:
    data = priced_dataset()
    records = [r for lines in data.values() for r, _ in lines]
    root = write_tree(tmp_path / "data", {"ds": records[:7]})
    config = Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    refresh(config)
    with (root / "ds" / "raw_responses.jsonl").open("ab") as out:
        out.write(jl(*records[7:]))
    incremental = refresh(config).stats
    full = refresh(config, full=True).stats
    assert comparable(incremental)["datasets"] == comparable(full)["datasets"]
    expected = sum((p for lines in data.values() for _, p in lines), start=Decimal(0))
    assert incremental["datasets"]["ds"]["cost_usd"] == pytest.approx(float(expected), rel=1e-12)


def _rows(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        ("f", i + 1, 0, 0, None, *facts_of_line(orjson.dumps(r), "responses")[0])
        for i, r in enumerate(records)
    ]


RECORDS = st.lists(
    st.builds(
        lambda m, p, c, cached, at: chat("r", m, p, c, cached=min(cached, p), created=at),
        st.sampled_from(["gpt-4o", "gpt-4o-mini", "claude-x"]),
        st.integers(0, 400_000),
        st.integers(0, 5_000),
        st.integers(0, 300_000),
        st.integers(T0, T0 + 3 * 86_400),
    ),
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(RECORDS, st.integers(0, 20))
def test_the_price_keys_of_two_pieces_add_up_to_those_of_the_whole(
    records: list[dict[str, Any]], cut: int
) -> None:
    rows = _rows(records)
    whole = FileTally.accounted(account("responses")(rows))
    parts = FileTally.accounted(account("responses")(rows[:cut]))
    parts = parts + FileTally.accounted(account("responses")(rows[cut:]))
    assert parts.group("models") == whole.group("models")
    keys = whole.group("models")
    assert sum(values[0] for values in keys.values()) == whole["records"]


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(
        [
            ("openai", "gpt-4o"),
            ("anthropic", "claude-sonnet-4-5"),
            ("google", "gemini-2.5-pro"),
            ("openai", "gpt-5"),
        ]
    ),
    st.booleans(),
    st.lists(
        st.tuples(st.integers(0, 350_000), st.integers(0, 8_000), st.integers(0, 100)),
        min_size=1,
        max_size=6,
    ),
)
def test_pricing_a_keys_summed_usage_equals_pricing_each_of_its_records(
    model: tuple[str, str], batch: bool, usages: list[tuple[int, int, int]]
) -> None:
    provider, name = model
    table = PriceTable({})
    by_key: dict[int, list[tuple[int, int, int, int, int]]] = {}
    for prompt, output, percent in usages:
        usage = (prompt, prompt * percent // 200, prompt * percent // 400, output, output // 3)
        by_key.setdefault(band(prompt), []).append(usage)
    when = T0 // SLOT_S
    for which, members in by_key.items():
        rates = table.rates((provider, batch, name, which, when))
        assert rates is not None, (name, which)
        summed = tuple(sum(u[i] for u in members) for i in range(5))
        names = (
            "input_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "output_tokens",
            "output_reasoning_tokens",
        )
        each = sum(
            (
                calc_price(
                    Usage(**dict(zip(names, u, strict=True))),
                    name,
                    provider_id=provider,
                    genai_request_timestamp=moment(when * SLOT_S),
                    price_context=BATCH if batch else None,
                ).total_price
                for u in members
            ),
            start=Decimal(0),
        )
        assert rates.cost(summed, len(members)) == each


def test_the_billed_usage_is_what_the_books_sum() -> None:
    sums = {
        "total_prompt": 11,
        "total_cached_prompt": 3,
        "total_cache_write": 2,
        "total_comp": 7,
        "total_reasoning": 5,
    }
    assert priced_usage(sums) == (11, 3, 2, 7, 5)


def _every_price(model: Any) -> list[Any]:
    prices = model.prices if isinstance(model.prices, list) else []
    found = [p.prices for p in prices] or [model.prices]
    return found + [v.prices for v in model.price_variants or ()]


def test_every_tier_and_time_of_day_of_the_installed_table_fits_the_price_keys() -> None:
    misfits = []
    for provider in get_snapshot().providers:
        for model in provider.models:
            for price in _every_price(model):
                for key, value in price.__dict__.items():
                    if isinstance(value, TieredPrices):
                        misfits += [
                            (model.id, key, t.start)
                            for t in value.tiers
                            if t.start not in TIER_STARTS
                        ]
            constraints = (
                [p.constraint for p in model.prices] if isinstance(model.prices, list) else []
            )
            for constraint in constraints:
                if isinstance(constraint, TimeOfDateConstraint):
                    for t in (constraint.start_time, constraint.end_time):
                        if (t.hour * 3600 + t.minute * 60 + t.second) % SLOT_S:
                            misfits.append((model.id, "time of day", str(t)))
    assert not misfits, f"prices change where the price keys cannot tell: {misfits[:10]}"


def test_a_refresh_that_meets_no_new_price_key_does_not_load_the_table(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "data", {"ds": [chat("a", "gpt-4o", 1_000, 100)]})
    config = Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    first = refresh(config).stats["datasets"]["ds"]["cost_usd"]
    probe = (
        "import sys; from pathlib import Path; from genledger.config import Config;"
        "from genledger.refresh.collect import refresh;"
        f"c = Config(data_root=Path({str(root)!r}), stats_path=Path({str(tmp_path / 's.json')!r}),"
        f" state_dir=Path({str(tmp_path / 'st')!r}));"
        "s = refresh(c, full=True).stats;"
        "print(s['datasets']['ds']['cost_usd'], 'genai_prices' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [repr(first), "False"]


def test_a_datasets_provider_pins_who_priced_its_openai_compatible_records(
    tmp_path: Path,
) -> None:
    records = [chat("a", "gpt-oss-120b", 4_000, 900), chat("b", "gpt-oss-120b", 1_000, 50)]
    stats = collect(
        tmp_path,
        {"openai_compatible": records, "cerebras": records, "ours": records},
        providers={"cerebras": "cerebras", "ours": "self-hosted"},
        fleet=FleetSettings(gpu_hour_usd=3.0, gpus=2),
    )
    usage = [
        Usage(input_tokens=4_000, output_tokens=900),
        Usage(input_tokens=1_000, output_tokens=50),
    ]
    for name, provider in (("openai_compatible", "openai"), ("cerebras", "cerebras")):
        expected = sum(
            (
                calc_price(
                    u, "gpt-oss-120b", provider_id=provider, genai_request_timestamp=moment(T0)
                ).total_price
                for u in usage
            ),
            start=Decimal(0),
        )
        block = stats["datasets"][name]
        assert block["cost_usd"] == pytest.approx(float(expected), rel=1e-12), name
        (label,) = block["models"]["gpt-oss-120b"]["priced_by"]
        assert label.startswith(f"genai-prices {provider}/"), label
    ours = stats["datasets"]["ours"]  # the fleet's, written at one moment: no hours to bill
    assert ours["prices"]["fleet"]["hours"] == 0
    assert (ours["cost_usd"], ours["models"]["gpt-oss-120b"]["priced_by"]) == (None, [])
    assert ours["cost_unpriced"] == {"n_records": 2, "models": ["gpt-oss-120b"]}


def test_one_datasets_refresh_shares_the_fleet_as_the_whole_refresh_does(tmp_path: Path) -> None:
    from genledger.refresh.collect import refresh_dataset
    from genledger.tail.discovery import discover

    root = tmp_path / "data"
    for name, at, tokens in (("a", T0, 300), ("b", T0 + 7200, 100)):
        (root / name).mkdir(parents=True)
        record = {"text": "x", "meta_info": {"id": name, "completion_tokens": tokens}}
        (root / name / "raw_responses.jsonl").write_bytes(jl(record))
        os.utime(root / name / "raw_responses.jsonl", (at, at))
    config = Config(
        data_root=root,
        stats_path=tmp_path / "s.json",
        state_dir=tmp_path / "st",
        fleet=FleetSettings(gpu_hour_usd=4.0, gpus=2),
    )
    whole = refresh(config).stats["datasets"]
    assert whole["a"]["cost_usd"] == pytest.approx(4.0 * 2 * 2 * 300 / 400)
    for dataset in discover(root, config):
        alone = refresh_dataset(config, dataset)
        assert alone["cost_usd"] == pytest.approx(whole[dataset.name]["cost_usd"]), dataset.name


def test_a_declared_format_names_its_model_time_provider_and_batch(tmp_path: Path) -> None:
    declared = {
        "name": "our_batch_dump",
        "completion_tokens": "out.n",
        "prompt_tokens": "inp.n",
        "model": "meta.llm",
        "created": "meta.at",
        "provider": "anthropic",
        "batch": True,
    }
    at = moment(T0).isoformat()
    records = [
        {"out": {"n": 700}, "inp": {"n": 9_000}, "meta": {"llm": "claude-sonnet-4-5", "at": at}}
    ]
    block = collect(tmp_path, {"ds": records}, formats=(declared,))["datasets"]["ds"]
    expected = calc_price(
        Usage(input_tokens=9_000, output_tokens=700),
        "claude-sonnet-4-5",
        provider_id="anthropic",
        genai_request_timestamp=moment(T0),
        price_context=BATCH,
    ).total_price
    assert block["formats"] == {"our_batch_dump": 1}
    assert block["cost_usd"] == pytest.approx(float(expected), rel=1e-12)
    assert block["models"]["claude-sonnet-4-5"]["priced_by"][0].endswith(" batch")


def test_rates_found_by_two_refreshes_at_once_are_both_remembered() -> None:
    slot = T0 // SLOT_S
    first, second = PriceTable({}), PriceTable({})
    assert first.rates(("openai", False, "gpt-4o", 0, slot)) is not None
    assert second.rates(("anthropic", True, "claude-sonnet-4-5", 0, slot)) is not None
    kept = second.dump(first.dump())
    again = PriceTable({}, kept)
    assert len(again.found) == 2 and again.dump() is None  # nothing new to remember


def test_the_price_table_version_is_the_installed_one_without_importlib_metadata() -> None:
    # A refresh names the genai-prices version it priced with; reading it must not cost every
    # refresh the import of importlib.metadata (email, zipfile, ...).
    from importlib import metadata

    code = (
        "import sys\n"
        "from genledger.ledger.prices import table_version\n"
        "print(table_version(), 'importlib.metadata' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [metadata.version("genai-prices"), "False"]
