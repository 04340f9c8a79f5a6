"""Compressed and Parquet shards: the same numbers as plain JSONL, read whole when changed,
their previous contribution replaced, never added twice; bad ones named, others unaffected."""

from __future__ import annotations

import gzip
import io
import os
import random
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from genledger.config import Config, FilePatterns
from genledger.ledger import jsonio
from genledger.refresh.collect import refresh
from genledger.tail import parquet as parquet_module
from genledger.tail.parquet import BATCH_BYTES

from ..conftest import windowless
from ..shards import FORMS, encode, gzip_being_written, jsonl, parquet, write

FLAT = [{"id": f"r{i}", "text": f"answer {i}", "completion_tokens": i % 7} for i in range(40)]
CHAT = [
    {
        "id": f"c{i}",
        "object": "chat.completion",
        "choices": [
            {"message": {"content": "</think> x" if i == 3 else "ok"}, "finish_reason": "stop"}
        ],
        "usage": {"completion_tokens": i, "prompt_tokens": 5},
    }
    for i in range(12)
]
TOKENIZED = [
    {"input_ids": list(range(i % 5)), "loss_mask": [1] * (i % 5) if i % 4 else [0] * (i % 5)}
    for i in range(30)
] + [{"input_ids": [1, 2, 3], "loss_mask": [1, 1]}]
NESTED = [{"input_ids": [list(range(i + 1))], "loss_mask": [[0] + [1] * i]} for i in range(9)]
PROMPTS = [{"prompt": f"p{i}"} for i in range(50)]


def collect(root: Path, tmp: Path, now: float | None = None, **config: Any) -> dict[str, Any]:
    settings = Config(
        data_root=root, stats_path=tmp / "out" / "s.json", state_dir=tmp / "state", **config
    )
    return refresh(settings, now=now).stats


def numbers(block: dict[str, Any]) -> dict[str, Any]:
    """A dataset block without what names files (their names, byte offsets vs row numbers)."""
    out = jsonio.loads(jsonio.dumps(block))
    out.pop("files")
    out.pop("rate", None)
    windowless(out)  # the windows follow the order records were counted in
    for failure in out["quality"]["failures"]:
        failure["examples"] = [(e["line"], e["reason"].split(" (byte offset")[0]) for e in
                               failure["examples"]]  # fmt: skip
    return dict(out)


def dataset(tmp: Path, files: dict[str, bytes], name: str = "ds") -> Path:
    root = tmp / "data"
    for path, data in files.items():
        write(root / name / path, data)
    return root


@pytest.mark.parametrize("form", FORMS[1:])
@pytest.mark.parametrize(
    "stem, records",
    [("raw_responses", FLAT), ("raw_responses", CHAT), ("tokenized_data", TOKENIZED)],
    ids=["flat", "chat", "tokenized"],
)
def test_every_form_counts_what_the_plain_jsonl_counts(
    tmp_path: Path, form: str, stem: str, records: list[Any]
) -> None:
    prompts = {"prompts.jsonl": jsonl(PROMPTS)}
    plain = dataset(tmp_path / "a", {f"{stem}.jsonl": jsonl(records), **prompts})
    sealed = dataset(tmp_path / "b", {f"{stem}.{form}": encode(records, form), **prompts})
    expected = numbers(collect(plain, tmp_path / "a")["datasets"]["ds"])
    got = collect(sealed, tmp_path / "b")["datasets"]["ds"]
    assert numbers(got) == expected
    assert expected["quality"]["failures"], "the records hold defects: the rules ran"
    [entry] = [e for name, e in got["files"].items() if name.startswith(stem)]
    assert entry["lines"] == len(records) and entry["pending_bytes"] == 0


@pytest.mark.parametrize("form", FORMS[1:])
def test_prompts_in_every_form_are_the_expected_total(tmp_path: Path, form: str) -> None:
    root = dataset(
        tmp_path, {f"prompts.{form}": encode(PROMPTS, form), "raw_responses.jsonl": jsonl(FLAT)}
    )
    assert collect(root, tmp_path)["datasets"]["ds"]["n_prompts"] == 50


def test_tokenized_list_of_lists_in_parquet_is_unwrapped_like_json(tmp_path: Path) -> None:
    plain = dataset(tmp_path / "a", {"tokenized_data.jsonl": jsonl(NESTED)})
    sealed = dataset(tmp_path / "b", {"tokenized_data.parquet": parquet(NESTED)})
    expected = numbers(collect(plain, tmp_path / "a")["datasets"]["ds"])
    assert numbers(collect(sealed, tmp_path / "b")["datasets"]["ds"]) == expected
    assert expected["total_tokens"] == sum(range(1, 10))


@pytest.mark.parametrize("batch_bytes", [BATCH_BYTES, 1], ids=["default", "a-row-a-batch"])
def test_many_row_groups_give_the_numbers_of_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_bytes: int
) -> None:
    monkeypatch.setattr(parquet_module, "BATCH_BYTES", batch_bytes)
    one = dataset(tmp_path / "a", {"tokenized_data.parquet": parquet(TOKENIZED)})
    many = dataset(tmp_path / "b", {"tokenized_data.parquet": parquet(TOKENIZED, 4)})
    assert numbers(collect(many, tmp_path / "b")["datasets"]["ds"]) == numbers(
        collect(one, tmp_path / "a")["datasets"]["ds"]
    )


def _with_unused_columns(i: int) -> dict[str, Any]:
    """A record with columns no declaration reads: a big text and a struct (null in some)."""
    record: dict[str, Any] = dict(FLAT[i % len(FLAT)], id=f"u{i}")
    if i % 9 == 4:
        record["completion_tokens"] = None  # no count: its reason names every key it has
    record["blob"] = f"{i:06d}" * 500
    record["extra"] = None if i % 2 else {"source": "web", "score": i}
    return record


UNUSED = [_with_unused_columns(i) for i in range(300)]


def _corrupt_column(data: bytes, name: str) -> bytes:
    """`data` (a Parquet file) with the first page of column `name` in every row group
    overwritten: its footer intact, that column no longer decodes."""
    out = bytearray(data)
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    [column] = [i for i in range(meta.num_columns) if meta.schema.column(i).path == name]
    for group in range(meta.num_row_groups):
        at = meta.row_group(group).column(column).data_page_offset
        out[at : at + 64] = b"\xff" * 64
    return bytes(out)


@pytest.mark.parametrize("batch_bytes", [BATCH_BYTES, 20_000], ids=["default", "small-batches"])
def test_responses_parquet_reads_only_the_columns_the_declarations_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_bytes: int
) -> None:
    monkeypatch.setattr(parquet_module, "BATCH_BYTES", batch_bytes)
    clean = [r for r in UNUSED if r["completion_tokens"] is not None]
    table = pa.Table.from_pylist(clean)
    out = io.BytesIO()
    pq.write_table(table, out, row_group_size=100, use_dictionary=False)
    data = _corrupt_column(out.getvalue(), "blob")
    with pytest.raises(OSError):  # the corruption is real: reading `blob` fails
        pq.read_table(io.BytesIO(data), columns=["blob"])
    plain = dataset(tmp_path / "a", {"raw_responses.jsonl": jsonl(clean)})
    sealed = dataset(tmp_path / "b", {"raw_responses.parquet": data})
    got = collect(sealed, tmp_path / "b")["datasets"]["ds"]
    assert numbers(got) == numbers(collect(plain, tmp_path / "a")["datasets"]["ds"])
    assert got["n_done"] == len(clean) and got["quality"]["malformed_lines"] == 0


@pytest.mark.parametrize("batch_bytes", [BATCH_BYTES, 20_000], ids=["default", "small-batches"])
def test_a_row_without_a_count_names_every_key_as_the_jsonl_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_bytes: int
) -> None:
    monkeypatch.setattr(parquet_module, "BATCH_BYTES", batch_bytes)
    plain = dataset(tmp_path / "a", {"raw_responses.jsonl": jsonl(UNUSED)})
    sealed = dataset(tmp_path / "b", {"raw_responses.parquet": parquet(UNUSED, 70)})
    expected = numbers(collect(plain, tmp_path / "a")["datasets"]["ds"])
    assert numbers(collect(sealed, tmp_path / "b")["datasets"]["ds"]) == expected
    [missing] = [f for f in expected["quality"]["failures"] if f["check"] == "missing_tokens"]
    reasons = [reason for _, reason in missing["examples"]]
    assert any("blob, extra{source, score}" in r for r in reasons), reasons
    assert any(r.endswith("blob, extra") for r in reasons), reasons


def test_a_corrupt_unread_column_of_a_row_read_whole_is_malformed(tmp_path: Path) -> None:
    table = pa.Table.from_pylist(UNUSED[:60])
    out = io.BytesIO()
    pq.write_table(table, out, row_group_size=30, use_dictionary=False)
    data = _corrupt_column(out.getvalue(), "blob")
    root = dataset(tmp_path, {"raw_responses.parquet": data})
    block = collect(root, tmp_path)["datasets"]["ds"]
    [failure] = [f for f in block["quality"]["failures"] if f["check"] == "malformed_lines"]
    assert failure["examples"][0]["reason"].startswith("corrupt Parquet data after row 0")
    assert block["quality"]["status"] == "error"


def test_unusual_parquet_column_types_go_through_the_general_path(tmp_path: Path) -> None:
    records = [{"input_ids": ["a", "b"], "loss_mask": [True, False]}, {"input_ids": None}]
    plain = dataset(tmp_path / "a", {"tokenized_data.jsonl": jsonl(records)})
    sealed = dataset(tmp_path / "b", {"tokenized_data.parquet": parquet(records)})
    assert numbers(collect(sealed, tmp_path / "b")["datasets"]["ds"]) == numbers(
        collect(plain, tmp_path / "a")["datasets"]["ds"]
    )


@pytest.mark.parametrize("form", FORMS[1:])
def test_a_rewritten_sealed_shard_replaces_its_counts_and_ids(tmp_path: Path, form: str) -> None:
    shard = f"part-00001/raw_responses.{form}"
    root = dataset(tmp_path, {shard: encode(FLAT[:10], form)})
    first = collect(root, tmp_path)["datasets"]["ds"]
    assert first["n_done"] == 10
    write(root / "ds" / shard, encode(FLAT[:25], form))  # the writer redid it with more
    second = collect(root, tmp_path)["datasets"]["ds"]
    assert second["n_done"] == 25
    assert second["quality"]["duplicate_ids"] == 0  # its old ids were replaced, not added
    assert second["total_comp"] == sum(r["completion_tokens"] for r in FLAT[:25])


def test_an_unchanged_sealed_shard_is_not_read_again(tmp_path: Path) -> None:
    root = dataset(tmp_path, {"raw_responses.parquet": parquet(FLAT)})
    first = collect(root, tmp_path)
    state = next((tmp_path / "state" / "datasets").glob("*.json")).read_bytes()
    kept = orjson.loads(state)["files"]["raw_responses.parquet"]
    assert kept["last_read"] == "new"
    second = collect(root, tmp_path)
    state = next((tmp_path / "state" / "datasets").glob("*.json")).read_bytes()
    # nothing moved: the dataset's kept block is reused (refresh.quiet) and the file's state
    # stays as the read that made it left it, "new" included (a read would say otherwise)
    assert orjson.loads(state)["files"]["raw_responses.parquet"] == kept
    assert second["datasets"] == first["datasets"] | {"ds": second["datasets"]["ds"]}
    assert second["datasets"]["ds"]["n_done"] == first["datasets"]["ds"]["n_done"] == 40


def test_a_gzip_still_being_written_counts_its_complete_lines_until_it_settles(
    tmp_path: Path,
) -> None:
    data = jsonl(FLAT[:6]) + b'{"id": "r6", "text": "half'
    root = dataset(tmp_path, {"raw_responses.jsonl.gz": gzip_being_written(data)})
    writing = collect(root, tmp_path)["datasets"]["ds"]
    assert writing["n_done"] == 6
    assert writing["quality"]["malformed_lines"] == 0
    assert writing["files"]["raw_responses.jsonl.gz"]["pending_bytes"] == len(
        b'{"id": "r6", "text": "half'
    )
    later = time.time() + 3600  # the file has not changed for an hour: the writer is gone
    settled = collect(root, tmp_path, now=later)["datasets"]["ds"]
    assert settled["n_done"] == 6
    [failure] = [f for f in settled["quality"]["failures"] if f["check"] == "malformed_lines"]
    assert failure["examples"][0]["reason"].startswith("truncated gzip stream")
    assert failure["examples"][0]["line"] == 7
    assert settled["quality"]["status"] == "error"
    write(root / "ds" / "raw_responses.jsonl.gz", encode(FLAT[:8], "jsonl.gz"))  # finished
    done = collect(root, tmp_path, now=later)["datasets"]["ds"]
    assert (done["n_done"], done["quality"]["malformed_lines"]) == (8, 0)


def test_the_settle_time_is_configurable(tmp_path: Path) -> None:
    data = jsonl(FLAT[:3]) + b'{"id": "x'
    root = dataset(tmp_path, {"raw_responses.jsonl.gz": gzip_being_written(data)})
    stats = collect(root, tmp_path, patterns=FilePatterns(settle_seconds=0))
    assert stats["datasets"]["ds"]["quality"]["malformed_lines"] == 1


BAD = {
    "raw_responses.jsonl.gz": (b"this is not gzip\n", "not a gzip file"),
    "raw_responses.jsonl.zst": (b"\x28\xb5\x2f\xfd garbage", "corrupt zstd stream"),
    "tokenized_data.parquet": (b"PAR1 but nothing else", "not a Parquet file"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_corrupt_shard_is_named_with_its_reason_and_the_rest_still_counts(
    tmp_path: Path, name: str
) -> None:
    data, reason = BAD[name]
    root = dataset(tmp_path, {name: data, "raw_responses-ok.jsonl": jsonl(FLAT)})
    os.utime(root / "ds" / name, (1, 1))  # long unchanged: whatever it holds is final
    dataset(tmp_path, {"raw_responses.jsonl": jsonl(FLAT)}, name="other")
    stats = collect(root, tmp_path)
    block = stats["datasets"]["ds"]
    assert block["n_done"] == 40 and stats["datasets"]["other"]["n_done"] == 40
    other = stats["datasets"]["other"]["quality"]
    assert (other["unreadable_files"], other["malformed_lines"]) == (0, 0)
    reasons = [e["reason"] for f in block["quality"]["failures"] for e in f["examples"]]
    assert any(r.startswith(reason) for r in reasons), reasons
    assert block["quality"]["status"] == "error"


def test_the_cli_exits_1_on_a_corrupt_parquet_without_a_traceback(tmp_path: Path) -> None:
    root = dataset(
        tmp_path, {"raw_responses.parquet": b"garbage", "raw_responses.jsonl": jsonl(FLAT)}
    )
    done = _cli(root, tmp_path)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    stats = orjson.loads((tmp_path / "s.json").read_bytes())
    assert (
        stats["datasets"]["ds"]["files"]["raw_responses.parquet"]["error"] == "not a Parquet file"
    )


def test_the_cli_names_unrecognised_files_and_exits_0_on_warnings_only(tmp_path: Path) -> None:
    root = dataset(tmp_path, {"raw_responses.jsonl": jsonl(FLAT[1:6]), "outputs.jsonl": b"{}\n"})
    (root / "stray.txt").write_text("x")
    write(root / "empty" / "readme.md", b"x")
    done = _cli(root, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ds: 1 unrecognised file (matching no pattern): outputs.jsonl" in done.stderr
    assert "outside every dataset: 2 unrecognised files" in done.stderr
    assert "empty/readme.md, stray.txt" in done.stderr
    stats = orjson.loads((tmp_path / "s.json").read_bytes())
    assert stats["unrecognised"] == {"count": 2, "paths": ["empty/readme.md", "stray.txt"]}
    assert stats["datasets"]["ds"]["unrecognised"] == {"count": 1, "paths": ["outputs.jsonl"]}
    assert stats["datasets"]["ds"]["quality"]["unrecognised_files"] == 1
    assert stats["totals"]["quality"]["unrecognised_files"] == 3
    assert stats["totals"]["quality"]["status"] == "warn"


def _cli(root: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "genledger.cli",
        "collect",
        str(root),
        "-o",
        str(tmp / "s.json"),
    ]
    command += ["--state", str(tmp / "cli-state")]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_a_parquet_corrupt_inside_counts_the_rows_before_and_names_where(tmp_path: Path) -> None:
    import io

    import pyarrow.parquet as pq

    data = bytearray(parquet(TOKENIZED * 40, row_group_size=1100))
    second = pq.ParquetFile(io.BytesIO(bytes(data))).metadata.row_group(1).column(0)
    at = second.data_page_offset  # the second row group's first page; the footer stays intact
    data[at : at + 64] = b"\xff" * 64
    root = dataset(tmp_path, {"tokenized_data.parquet": bytes(data)})
    block = collect(root, tmp_path)["datasets"]["ds"]
    [failure] = [f for f in block["quality"]["failures"] if f["check"] == "malformed_lines"]
    assert failure["examples"][0]["reason"].startswith("corrupt Parquet data after row")
    assert 0 < block["n_tokenized"] < len(TOKENIZED) * 40


def test_a_mixed_root_stays_exact_through_rewrites_appends_and_new_shards(tmp_path: Path) -> None:
    clean = [{"id": f"m{i}", "text": "ok", "completion_tokens": 3} for i in range(60)]
    tokens = [{"input_ids": [1, 2, 3], "loss_mask": [0, 1, 1]}] * 8
    root = tmp_path / "data"
    write(root / "a" / "part-00000" / "raw_responses.jsonl.gz", encode(clean[:10], "jsonl.gz"))
    write(root / "a" / "part-00001" / "raw_responses.jsonl.zst", encode(clean[10:20], "jsonl.zst"))
    write(root / "a" / "prompts.parquet", parquet(PROMPTS))
    write(root / "a" / "notes.txt", b"unrecognised")
    write(root / "a" / ".raw_responses.jsonl.swp", b"ignored")
    write(root / "b" / "tokenized_data.parquet", parquet(tokens))
    write(root / "b" / "prompts.jsonl.zst", encode(PROMPTS[:8], "jsonl.zst"))
    write(root / "c" / "raw_responses.jsonl", jsonl(clean[20:25]))
    write(
        root / "c" / "raw_responses-live.jsonl.gz", gzip_being_written(jsonl(clean[25:30]) + b'{"i')
    )
    write(root / "empty" / "readme.md", b"no data here")
    write(root / "stray.csv", b"a,b")
    first = _cli(root, tmp_path)
    assert first.returncode == 0, first.stderr
    stats = orjson.loads((tmp_path / "s.json").read_bytes())
    assert [stats["datasets"][d]["n_done"] for d in "abc"] == [20, 0, 10]
    assert stats["datasets"]["b"]["total_tokens"] == 24
    assert stats["datasets"]["a"]["n_prompts"] == 50
    assert stats["datasets"]["a"]["unrecognised"]["paths"] == ["notes.txt"]
    assert stats["unrecognised"]["paths"] == ["empty/readme.md", "stray.csv"]
    write(
        root / "a" / "part-00000" / "raw_responses.jsonl.gz",
        encode(clean[:10] + clean[30:40], "jsonl.gz"),
    )
    with (root / "c" / "raw_responses.jsonl").open("ab") as handle:
        handle.write(jsonl(clean[40:45]))
    write(root / "a" / "part-00002" / "raw_responses.parquet", parquet(clean[45:60]))
    second = _cli(root, tmp_path)
    assert second.returncode == 0, second.stderr
    stats = orjson.loads((tmp_path / "s.json").read_bytes())
    assert [stats["datasets"][d]["n_done"] for d in "abc"] == [45, 0, 15]
    assert stats["totals"]["n_done"] == 60 and stats["totals"]["total_comp"] == 180
    assert stats["totals"]["quality"]["duplicate_ids"] == 0
    full = collect(root, tmp_path / "full")
    assert numbers(full["datasets"]["a"]) == numbers(stats["datasets"]["a"])


def test_a_users_format_reads_its_own_columns_from_parquet(tmp_path: Path) -> None:
    records = [
        {"rid": f"x{i}", "stats": {"generated": i, "prompt": 2}, "out": "ok", "blob": "z" * 99}
        for i in range(20)
    ]
    mine = {"name": "mine", "completion_tokens": "stats.generated", "id": "rid", "text": "out"}
    formats = ({**mine, "prompt_tokens": "stats.prompt"},)
    table, out = pa.Table.from_pylist(records), io.BytesIO()
    pq.write_table(table, out, use_dictionary=False)
    # `blob` is unreadable: a row read whole (its count not found in the columns read) fails
    data = _corrupt_column(out.getvalue(), "blob")
    plain = dataset(tmp_path / "a", {"raw_responses.jsonl": jsonl(records)})
    sealed = dataset(tmp_path / "b", {"raw_responses.parquet": data})
    expected = collect(plain, tmp_path / "a", formats=formats)["datasets"]["ds"]
    got = collect(sealed, tmp_path / "b", formats=formats)["datasets"]["ds"]
    assert numbers(got) == numbers(expected)
    assert got["total_comp"] == sum(range(20)) and got["quality"]["missing_tokens"] == 0


# --- streams a shared cluster writes: appended members, damage, one huge line ---------------


def _in_subprocess(code: str, timeout: float = 120) -> dict[str, Any]:
    """Run `code` (which prints one JSON line) in a fresh interpreter: its answer and its peak
    memory (`max_rss_mb`); a read that never ends fails the test at `timeout`."""
    runner = code + (  # VmHWM, not ru_maxrss: Linux carries that over an exec from the parent
        "\nimport re, sys\n"
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1]\n"
        "print('RSS', int(hwm) // 1024, file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", runner], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    rss = int(done.stderr.rsplit("RSS ", 1)[1].split()[0])
    return dict(orjson.loads(done.stdout)) | {"max_rss_mb": rss}


COLLECT_ONE = """
import orjson
from pathlib import Path
from genledger.config import Config
from genledger.refresh.collect import refresh
tmp = Path({tmp!r})
config = Config(data_root=tmp / "data", stats_path=tmp / "s.json", state_dir=tmp / "st")
block = refresh(config).stats["datasets"]["ds"]
print(orjson.dumps(block).decode())
"""


def test_gzip_appended_member_by_member_with_a_first_member_past_4_mb_is_read_whole(
    tmp_path: Path,
) -> None:
    # A writer appending with gzip.open(p, "at") writes one member per open; past a member
    # of more than one decompressed piece, zlib keeps its unconsumed tail (the next member's
    # bytes): the inflate loop spun on it, its memory growing.
    path = tmp_path / "data" / "ds" / "raw_responses.jsonl.gz"
    path.parent.mkdir(parents=True)
    # distinct answers: the same one 60,000 times would be duplicate_outputs (run health)
    records = [
        {"id": f"a{i}", "text": f"{i} " + "x" * 100, "completion_tokens": 3} for i in range(60_000)
    ]
    with gzip.open(path, "at") as handle:
        handle.write(jsonl(records).decode())
    with gzip.open(path, "at") as handle:
        handle.write(jsonl([{"id": "b", "completion_tokens": 4}]).decode())
    block = _in_subprocess(COLLECT_ONE.format(tmp=str(tmp_path)), timeout=60)
    assert (block["n_done"], block["total_comp"]) == (60_001, 3 * 60_000 + 4)
    assert block["quality"]["status"] == "ok"


def _corrupted(data: bytes, form: str, where: float, seed: int) -> tuple[bytes, int]:
    """`data` compressed, 16 random bytes written over it at `where` of its length; and how
    many of its lines decode whole from the intact bytes before the damage (an upper bound of
    what may be counted)."""
    blob = bytearray(encode_stream(data, form))
    at = int(len(blob) * where)
    blob[at : at + 16] = random.Random(seed).randbytes(16)
    return bytes(blob), _lines_before(encode_stream(data, form)[:at], form)


def encode_stream(data: bytes, form: str) -> bytes:
    return (
        gzip.compress(data, mtime=0) if form == "gz" else zstandard.ZstdCompressor().compress(data)
    )


def _lines_before(prefix: bytes, form: str) -> int:
    if form == "gz":
        out = zlib.decompressobj(wbits=31).decompress(prefix)
    else:
        out = zstandard.ZstdDecompressor().decompressobj().decompress(prefix)
    return out.count(b"\n")


@pytest.mark.parametrize("form", ["gz", "zst"])
@pytest.mark.parametrize("n", [2000, 20_000])
@pytest.mark.parametrize("where", [0.3, 0.5, 0.8])
def test_a_damaged_stream_counts_the_records_before_the_damage_and_nothing_after(
    tmp_path: Path, form: str, n: int, where: float
) -> None:
    records = [
        {"id": f"r{i}", "text": f"answer {i} " * 3, "completion_tokens": 5} for i in range(n)
    ]
    blob, bound = _corrupted(jsonl(records), form, where, seed=n)
    root = dataset(tmp_path, {f"raw_responses.jsonl.{form}": blob})
    block = collect(root, tmp_path)
    quality = block["datasets"]["ds"]["quality"]
    counted = block["datasets"]["ds"]["n_done"]
    assert counted <= bound  # nothing decoded past the damage, no garbage copies
    assert quality["duplicate_ids"] == 0
    assert quality["malformed_lines"] == 1 and quality["status"] == "error"
    (failure,) = [f for f in quality["failures"] if f["check"] == "malformed_lines"]
    assert failure["examples"][0]["reason"].startswith(f"corrupt {FORM_NAMES[form]} stream")
    assert failure["examples"][0]["line"] == counted + 1
    if form == "gz":  # deflate has no blocks to lose: everything before the damage counts
        assert counted >= bound * 0.9


FORM_NAMES = {"gz": "gzip", "zst": "zstd"}


def test_a_damaged_later_member_keeps_every_record_of_the_members_before_it(
    tmp_path: Path,
) -> None:
    first = jsonl([{"id": f"a{i}", "completion_tokens": 2} for i in range(3000)])
    second = bytearray(
        gzip.compress(jsonl([{"id": f"b{i}", "completion_tokens": 2} for i in range(3000)]))
    )
    second[len(second) // 2 : len(second) // 2 + 16] = bytes(16)
    root = dataset(tmp_path, {"raw_responses.jsonl.gz": gzip.compress(first) + bytes(second)})
    block = collect(root, tmp_path)["datasets"]["ds"]
    assert 3000 <= block["n_done"] < 6000
    assert block["quality"]["duplicate_ids"] == 0 and block["quality"]["malformed_lines"] == 1


def test_a_400_mb_line_in_a_gzip_is_one_malformed_line_in_bounded_memory(tmp_path: Path) -> None:
    # tail + chunk rebuilt for every 4 MB piece made this take 19 s and 870 MB (quadratic).
    path = tmp_path / "data" / "ds" / "raw_responses.jsonl.gz"
    path.parent.mkdir(parents=True)
    good = jsonl([{"id": "a", "completion_tokens": 3}])
    deflate = zlib.compressobj(wbits=31)
    with path.open("wb") as out:
        out.write(deflate.compress(good))
        for _ in range(400):
            out.write(deflate.compress(b"x" * (1 << 20)))
        out.write(deflate.compress(b"\n" + jsonl([{"id": "b", "completion_tokens": 4}])))
        out.write(deflate.flush())
    block = _in_subprocess(COLLECT_ONE.format(tmp=str(tmp_path)))
    assert (block["n_done"], block["total_comp"]) == (2, 7)
    (failure,) = block["quality"]["failures"]
    assert failure["check"] == "malformed_lines" and failure["count"] == 1
    assert failure["examples"][0]["reason"].startswith("line longer than 67108864 bytes")
    assert failure["examples"][0]["line"] == 2
    assert block["max_rss_mb"] < 300, block["max_rss_mb"]
