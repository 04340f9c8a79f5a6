"""The row evaluation of the rules tallies exactly what the pandera models tally."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.config import Config, Switches
from genledger.ledger import account
from genledger.ledger.idlist import IdList
from genledger.ledger.tally import FileTally
from genledger.parse.jsonline import Malformed
from genledger.parse.line import facts_of_line as general_facts
from genledger.parse.table import TableBuilder
from genledger.refresh import scan
from genledger.refresh.collect import refresh
from genledger.rules import frame as quality
from genledger.rules import rows

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


def both(builder: TableBuilder) -> tuple[FileTally, FileTally]:
    if builder.role == "responses":
        return account.responses_by_rows(builder.rows), account.responses_by_frame(builder.frame())
    return account.tokenized_by_rows(builder.rows), account.tokenized_by_frame(builder.frame())


def test_every_response_defect_tallies_the_same_without_pandera() -> None:
    quick, pandera = both(builder_of(RESPONSE_LINES * 2, "responses"))
    assert quick.failures  # the hard lines do fail rules, so examples are compared too
    assert quick.to_dict() == pandera.to_dict()


def test_every_tokenized_defect_tallies_the_same_without_pandera() -> None:
    quick, pandera = both(builder_of(TOKENIZED_LINES * 2, "tokenized"))
    assert quick.failures
    assert quick.to_dict() == pandera.to_dict()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_generated_tables_tally_the_same_without_pandera(data: st.DataObject) -> None:
    role = data.draw(st.sampled_from(["responses", "tokenized"]))
    records = RESPONSE_RECORDS if role == "responses" else TOKENIZED_RECORDS
    pool = RESPONSE_LINES if role == "responses" else TOKENIZED_LINES
    lines = data.draw(
        st.lists(st.one_of(records.flatmap(encodings), st.sampled_from(pool)), max_size=12)
    )
    quick, pandera = both(builder_of(lines, role))
    assert quick.to_dict() == pandera.to_dict()


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
    assert rows.id_failures(files) == quality.id_failures(files)


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


def test_file_rules_agree_including_a_dataset_with_no_data_file() -> None:
    for table in (FILE_ROWS, FILE_ROWS[2:], []):
        assert rows.file_failures(table) == quality.file_failures(table)


def test_the_root_rule_agrees() -> None:
    for n_datasets in (0, 1, 7):
        assert rows.root_failures(n_datasets) == quality.root_failures(n_datasets)
    assert rows.root_failures(0)["no_datasets"].count == 1
    assert rows.root_failures(1) == {}


def test_the_dataset_rule_agrees() -> None:
    for n_done, n_nonzero in [(0, 0), (3, 0), (3, 1)]:
        quick = rows.dataset_failures(n_done, n_nonzero)
        assert quick == quality.dataset_failures(n_done, n_nonzero)


def test_chunked_tallies_add_up_to_the_whole_file() -> None:
    builder = builder_of(RESPONSE_LINES * 3, "responses")
    whole = account.responses_by_rows(builder.rows)
    parts = [account.responses_by_rows(builder.rows[i : i + 7]) for i in range(0, len(builder), 7)]
    total = sum(parts[1:], parts[0])
    assert total.to_dict() | {"failures": {}} == whole.to_dict() | {"failures": {}}
    assert {k: v.to_dict() for k, v in total.failures.items()} == {
        k: v.to_dict() for k, v in whole.failures.items()
    }
    assert scan.CHUNK_ROWS >= 1000  # chunks stay big enough to amortise their overhead


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


def test_refresh_by_rows_in_chunks_equals_refresh_by_pandera(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    (data / "ds").mkdir(parents=True)
    (data / "ds" / "raw_responses.jsonl").write_bytes(b"\n".join(RESPONSE_LINES * 3) + b"\n")
    (data / "ds" / "tokenized_data.jsonl").write_bytes(b"\n".join(TOKENIZED_LINES * 3))
    (data / "empty").mkdir()
    (data / "empty" / "prompts.jsonl").write_bytes(b"{}\n")
    runs = {}
    for mode, chunk in (("pandera", 10**9), ("rows", 7)):
        monkeypatch.setattr(scan, "CHUNK_ROWS", chunk)
        where = tmp_path / mode
        config = Config(
            data_root=data,
            stats_path=where / "s.json",
            state_dir=where / "st",
            switches=Switches(rules=mode),
        )
        runs[mode] = comparable(refresh(config).stats)
    assert runs["rows"] == runs["pandera"]
    assert runs["rows"]["totals"]["quality"]["status"] == "error"
