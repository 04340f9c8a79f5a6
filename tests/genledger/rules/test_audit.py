"""The audit: pandera, validating the same tables, finds exactly the failures of the books' pass
(and of the row functions of the small tables), row for row."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.config import Config, Switches
from genledger.ledger.books import account
from genledger.ledger.idlist import IdList
from genledger.ledger.tally import FileTally
from genledger.parse.jsonline import Malformed
from genledger.parse.line import facts_of_line as general_facts
from genledger.parse.table import TableBuilder
from genledger.refresh import count
from genledger.refresh.collect import refresh
from genledger.rules import rows
from genledger.rules.audit import AuditMismatch, audit, validate
from genledger.rules.catalogue import TABLE_COLUMNS, Table, rules_of
from genledger.rules.models import schema_of
from genledger.rules.result import MAX_EXAMPLES, RuleTally

from ..conftest import comparable
from ..hard_lines import (
    RESPONSE_LINES,
    RESPONSE_RECORDS,
    TOKENIZED_LINES,
    TOKENIZED_RECORDS,
    encodings,
)


def builder_of(lines: list[bytes], role: str) -> TableBuilder:
    builder = TableBuilder(role, "f.jsonl")
    offset = 0
    for number, line in enumerate(lines, start=1):
        try:
            for item, facts in enumerate(general_facts(line, role)):
                builder.add(number, offset, item, facts)
        except Malformed as exc:
            builder.add_malformed(number, offset, str(exc))
        offset += len(line) + 1
    return builder


def tally(builder: TableBuilder) -> FileTally:
    """The books' pass over a builder's rows."""
    return FileTally.accounted(account(builder.role)(builder.rows))


def failing_by_row(table: Table, values: list[tuple[Any, ...]]) -> dict[str, list[int]]:
    """Every rule's failing row positions by the compiled row function."""
    failed_of = rows.failing_rules(table)
    found: dict[str, list[int]] = {}
    for position, row in enumerate(values):
        for name in failed_of(row):
            found.setdefault(name, []).append(position)
    return found


def failing_by_pandera(table: Table, frame: pd.DataFrame) -> dict[str, list[int]]:
    return {k: v.tolist() for k, v in validate(table, frame).failing.items() if len(v)}


def assert_audit_agrees(builder: TableBuilder) -> FileTally:
    """pandera fails the same rows as the row functions, and the audit of the books' pass
    finds nothing to object to."""
    table = Table(builder.role)
    assert failing_by_pandera(table, builder.frame()) == failing_by_row(table, builder.rows)
    done = tally(builder)
    audit(builder.role, builder.rows, done.failures)
    return done


def test_every_response_defect_fails_the_same_rows_under_pandera() -> None:
    assert assert_audit_agrees(builder_of(RESPONSE_LINES * 2, "responses")).failures


def test_every_tokenized_defect_fails_the_same_rows_under_pandera() -> None:
    assert assert_audit_agrees(builder_of(TOKENIZED_LINES * 2, "tokenized")).failures


def drawn_table(data: st.DataObject) -> TableBuilder:
    """A table of a drawn role: generated records and hard lines, up to 12 lines."""
    role = data.draw(st.sampled_from(["responses", "tokenized"]))
    records = RESPONSE_RECORDS if role == "responses" else TOKENIZED_RECORDS
    pool = RESPONSE_LINES if role == "responses" else TOKENIZED_LINES
    lines = data.draw(
        st.lists(st.one_of(records.flatmap(encodings), st.sampled_from(pool)), max_size=12)
    )
    return builder_of(lines, role)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_generated_tables_fail_the_same_rows_under_pandera(data: st.DataObject) -> None:
    assert_audit_agrees(drawn_table(data))


def test_the_audit_raises_when_the_books_miscount() -> None:
    builder = builder_of(RESPONSE_LINES, "responses")
    failures = tally(builder).failures
    name = next(iter(failures))
    wrong = {**failures, name: type(failures[name])(failures[name].count + 1)}
    with pytest.raises(AuditMismatch, match=name):
        audit("responses", builder.rows, wrong)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.integers(1, 50),
                # few ids (duplicates everywhere) or many (shards that skip the id-by-id loop)
                st.sampled_from(["a", "b", "c", "7", "é"]) | st.text(min_size=1, max_size=4),
            ),
            max_size=8,
        ),
        max_size=4,
    )
)
def test_duplicate_ids_across_shards_are_found_alike(shards: list[list[tuple[int, str]]]) -> None:
    files = [(f"raw_responses_{i}.jsonl", IdList.of(s)) for i, s in enumerate(shards)]
    # the rule reads each file's ids in line order (a stream's request is listed when it
    # settles, maybe after later lines: `rules.rows._by_line`)
    table = [
        (name, line, rid)
        for name, ids in files
        for line, rid in sorted(ids, key=lambda pair: pair[0])
    ]
    frame = pd.DataFrame(
        {
            "file": pd.array([r[0] for r in table], dtype=object),
            "line": pd.array([r[1] for r in table], dtype="int64"),
            "record_id": pd.array([r[2] for r in table], dtype=object),
        }
    )
    found = rows.id_failures(files).get("duplicate_ids", RuleTally())
    expected = failing_by_pandera(Table.IDS, frame).get("duplicate_ids", [])
    assert found.count == len(expected)
    assert [(e["file"], e["line"]) for e in found.examples] == [
        table[i][:2] for i in expected[:MAX_EXAMPLES]
    ]


FILE_BASE = {"pending_bytes": 0, "settled": False, "line": 0}
FILE_ROWS = [
    {"file": "a", "role": "responses", "records": 0, "error": None} | FILE_BASE,
    {"file": "b", "role": "tokenized", "records": 3, "error": "gone: No such file"} | FILE_BASE,
    {"file": "c", "role": "responses", "records": 2, "error": None} | FILE_BASE,
    {"file": "p", "role": "prompts", "records": 9, "error": None}
    | {"pending_bytes": 4, "settled": True, "line": 10},
    {"file": "d", "role": "responses", "records": 1, "error": None}
    | {"pending_bytes": 4, "settled": False, "line": 2},
]


def small_table(table: Table, dicts: list[dict[str, Any]]) -> tuple[list[Any], pd.DataFrame]:
    """Row tuples and the typed frame of a small rule table given as dicts."""
    from genledger.rules.catalogue import TABLE_SCHEMAS

    names = TABLE_COLUMNS[table]
    values = [tuple(d[n] for n in names) for d in dicts]
    frame = pd.DataFrame(
        {c.name: pd.array([d[c.name] for d in dicts], dtype=c.dtype) for c in TABLE_SCHEMAS[table]}
    )
    return values, frame


def test_file_rules_agree_including_a_dataset_with_no_data_file() -> None:
    for dicts in (FILE_ROWS, FILE_ROWS[2:], []):
        values, frame = small_table(Table.FILES, dicts)
        assert failing_by_row(Table.FILES, values) == failing_by_pandera(Table.FILES, frame)
        counts = {k: v.count for k, v in rows.file_failures(dicts).items()}
        assert counts == {k: len(v) for k, v in failing_by_row(Table.FILES, values).items()}


def test_the_root_rule_agrees() -> None:
    for n_datasets in (0, 1, 7):
        values, frame = small_table(Table.ROOT, [{"n_datasets": n_datasets}])
        assert failing_by_row(Table.ROOT, values) == failing_by_pandera(Table.ROOT, frame)
    assert rows.root_failures(0)["no_datasets"].count == 1
    assert rows.root_failures(1) == {}


def test_the_dataset_rule_agrees() -> None:
    for n_done, n_nonzero in [(0, 0), (3, 0), (3, 1)]:
        values, frame = small_table(Table.DATASET, [{"n_done": n_done, "n_nonzero": n_nonzero}])
        assert failing_by_row(Table.DATASET, values) == failing_by_pandera(Table.DATASET, frame)
        assert bool(rows.dataset_failures(n_done, n_nonzero)) == (n_done > 0 and not n_nonzero)


def test_every_rule_of_every_table_is_a_column_of_its_pandera_schema() -> None:
    for table in Table:
        assert {r.name for r in rules_of(table)} <= set(schema_of(table).columns)


def test_chunked_tallies_add_up_to_the_whole_file() -> None:
    builder = builder_of(RESPONSE_LINES * 3, "responses")
    whole = FileTally.accounted(account("responses")(builder.rows))
    parts = [
        FileTally.accounted(account("responses")(builder.rows[i : i + 7]))
        for i in range(0, len(builder), 7)
    ]
    total = sum(parts[1:], parts[0])
    assert total.to_dict() | {"failures": {}} == whole.to_dict() | {"failures": {}}
    assert {k: v.to_dict() for k, v in total.failures.items()} == {
        k: v.to_dict() for k, v in whole.failures.items()
    }
    assert count.CHUNK_ROWS >= 1000  # chunks stay big enough to amortise their overhead


def test_a_small_append_is_refreshed_without_importing_pandas(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from genledger.refresh.collect import refresh
        from genledger.config import Config, Switches
        root = Path({str(tmp_path)!r}) / "data"
        (root / "ds").mkdir(parents=True)
        f = root / "ds" / "raw_responses.jsonl"
        f.write_bytes(b'{{"id": "a", "completion_tokens": 3}}\\n')
        config = Config(data_root=root, stats_path=root.parent / "s.json",
                        state_dir=root.parent / "st")
        refresh(config)
        with f.open("ab") as out:
            out.write(b'{{"id": "a", "completion_tokens": 0}}\\n{{"x": 1}}\\n')
        stats = refresh(config).stats
        q = stats["totals"]["quality"]
        print("pandas" in sys.modules, q["duplicate_ids"], q["zero_tokens"], q["missing_tokens"])
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "1", "1", "1"]


def test_refresh_in_chunks_equals_refresh_in_one_with_the_audit_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    (data / "ds").mkdir(parents=True)
    (data / "ds" / "raw_responses.jsonl").write_bytes(b"\n".join(RESPONSE_LINES * 3) + b"\n")
    (data / "ds" / "tokenized_data.jsonl").write_bytes(b"\n".join(TOKENIZED_LINES * 3))
    (data / "empty").mkdir()
    (data / "empty" / "prompts.jsonl").write_bytes(b"{}\n")
    runs = {}
    for mode, chunk in (("audit", 10**9), ("rows", 7)):
        monkeypatch.setattr(count, "CHUNK_ROWS", chunk)
        where = tmp_path / mode
        config = Config(
            data_root=data,
            stats_path=where / "s.json",
            state_dir=where / "st",
            switches=Switches(audit=mode == "audit"),
        )
        runs[mode] = comparable(refresh(config).stats)
    assert runs["rows"] == runs["audit"]
    assert runs["rows"]["totals"]["quality"]["status"] == "error"
