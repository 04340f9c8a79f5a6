"""The stats JSON's JSON Schema: published in docs/ as the generator prints it, a valid
draft 2020-12 schema, accepting what genledger writes and rejecting a renamed or mistyped
field. (Every stats JSON the suite writes is validated too: tests/stats_schema.py.)"""

from __future__ import annotations

import copy
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.ledger.schema import schema_text, stats_schema
from genledger.ledger.stats import BOOK_STATS, DATASET_FIELDS, TOTALS_FIELDS
from genledger.refresh.collect import refresh
from genledger.synth.records import WRITERS, line
from genledger.synth.tree import write_sample_tree
from tests.stats_schema import PUBLISHED, validator

PROJECT = Path(__file__).resolve().parents[3]


def test_the_published_schema_is_the_generators_output() -> None:
    assert PUBLISHED.read_text() == schema_text(), (
        "docs/stats-schema.json is stale: regenerate it with "
        "`.venv/bin/genledger schema > docs/stats-schema.json`"
    )


def test_genledger_schema_prints_it() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "genledger.cli", "schema"],
        capture_output=True, check=True, cwd=PROJECT, timeout=60,
    )  # fmt: skip
    assert out.stdout.decode() == schema_text()


def test_it_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(stats_schema())


def test_every_declared_field_is_required_in_its_order() -> None:
    schema = stats_schema()
    dataset, totals = schema["$defs"]["dataset"], schema["$defs"]["totals"]
    assert list(dataset["properties"]) == list(DATASET_FIELDS) == dataset["required"]
    assert list(totals["properties"]) == list(TOTALS_FIELDS) == totals["required"]
    assert set(BOOK_STATS) <= set(dataset["properties"])


@pytest.fixture(scope="module")
def stats(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A collect of the sample run: clean, warn, error and pretokenized datasets."""
    from genledger.config import Config

    tmp = tmp_path_factory.mktemp("schema")
    root = write_sample_tree(tmp / "data")
    config = Config(data_root=root, stats_path=tmp / "stats.json", state_dir=tmp / "state")
    return refresh(config).stats


def test_a_written_stats_json_validates(stats: dict[str, Any]) -> None:
    validator().validate(stats)


def _renamed(stats: dict[str, Any], where: list[str], old: str, new: str) -> dict[str, Any]:
    changed = copy.deepcopy(stats)
    block = changed
    for step in where:
        block = block[step]
    block[new] = block.pop(old)
    return changed


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        ([], "generated_at", "generatedAt"),
        (["totals"], "total_comp", "total_completion"),
        (["totals"], "n_datasets", "datasets"),
        (["totals", "quality"], "missing_tokens", "tokens_missing"),
    ],
)
def test_a_renamed_field_is_rejected(
    stats: dict[str, Any], where: list[str], old: str, new: str
) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validator().validate(_renamed(stats, where, old, new))


def test_a_renamed_dataset_field_is_rejected(stats: dict[str, Any]) -> None:
    name = next(iter(stats["datasets"]))
    with pytest.raises(jsonschema.ValidationError):
        validator().validate(_renamed(stats, ["datasets", name], "n_done", "done"))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (["totals", "n_done"], "12"),  # a count as text
        (["totals", "n_done"], -1),
        (["totals", "progress"], "50%"),
        (["totals", "finish_reasons"], {"stop": 1.5}),
        (["totals", "quality", "status"], "fine"),
        (["schema_version"], 2),
        (["totals", "cost_usd"], "0.1"),
    ],
)
def test_a_mistyped_field_is_rejected(stats: dict[str, Any], path: list[str], value: Any) -> None:
    changed = copy.deepcopy(stats)
    block = changed
    for step in path[:-1]:
        block = block[step]
    block[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        validator().validate(changed)


def test_the_suites_check_validates_what_a_test_writes_and_can_fail(
    stats: dict[str, Any], tmp_path: Path
) -> None:
    import orjson

    from tests.stats_schema import check_folder

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "stats.json").write_bytes(orjson.dumps(stats))
    (tmp_path / "out" / "config.json").write_bytes(b'{"not": "stats"}')
    assert check_folder(tmp_path) == 1
    broken = _renamed(stats, ["totals"], "n_done", "records_done")
    (tmp_path / "out" / "stats.json").write_bytes(orjson.dumps(broken))
    with pytest.raises(AssertionError, match=r"does not match docs/stats-schema\.json"):
        check_folder(tmp_path)
    (tmp_path / "out" / "stats.json").write_bytes(orjson.dumps(stats))  # the hook runs after


RUN = st.lists(
    st.tuples(
        st.sampled_from(sorted(WRITERS)), st.integers(0, 50), st.integers(0, 80), st.booleans()
    ),
    min_size=0,
    max_size=12,
)


@settings(max_examples=25, deadline=None)
@given(st.lists(RUN, min_size=1, max_size=3), st.booleans(), st.integers(0, 3))
def test_any_run_gives_a_stats_json_the_schema_accepts(
    tmp_path_factory: pytest.TempPathFactory, datasets: list, prompts: bool, status: int
) -> None:
    # every format, malformed lines, prompts files, batch status objects good and bad
    from genledger.config import Config
    from tests.genledger.ledger.batch_objects import anthropic_batch, openai_batch

    tmp = tmp_path_factory.mktemp("any")
    rng = random.Random(1)
    for i, plan in enumerate(datasets):
        folder = tmp / "data" / f"ds{i}"
        folder.mkdir(parents=True)
        lines = [
            b"{not json\n" if broken else line(WRITERS[kind](f"r{i}-{j}", p, c, rng))
            for j, (kind, p, c, broken) in enumerate(plan)
        ]
        (folder / "raw_responses.jsonl").write_bytes(b"".join(lines))
        if prompts:
            ids = "".join(f'{{"custom_id": "r{i}-{j}"}}\n' for j in range(len(plan) + 1))
            (folder / "prompts.jsonl").write_text(ids)
        objects = [b"", openai_batch(len(plan), 0, 10, 5), anthropic_batch(len(plan)), b"[]"]
        if status:
            (folder / "batch_x.json").write_bytes(objects[status])
    config = Config(data_root=tmp / "data", stats_path=tmp / "s.json", state_dir=tmp / "st")
    validator().validate(refresh(config).stats)
