"""A record's sidecar (ledger.quietfile): it gives back the record it was made of, and only
for the very record file it was made for; no damaged byte is ever trusted."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.ledger import jsonio, quietfile
from genledger.ledger.records import DatasetRecord

QUIET = orjson.dumps({"version": 1, "listing": "ab" * 16, "sections": {"n_done": 30}})


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[DatasetRecord, int, bytes, Path]:
    """A record with a quiet block, written to a file, and its sidecar."""
    record = DatasetRecord("ds", "/data", signature="sig", history=[[1.0, 2.0, 3.0]])
    record.fleet_first, record.quiet = 5.5, QUIET
    raw, crc = record.encoded()
    assert crc is not None
    path = tmp_path_factory.mktemp("state") / "ds.json"
    path.write_bytes(raw)
    sidecar = quietfile.encode(record, crc, path.stat())
    assert sidecar is not None
    return record, crc, sidecar, path


def test_a_sidecar_gives_back_what_a_quiet_refresh_reads(
    written: tuple[DatasetRecord, int, bytes, Path],
) -> None:
    _, crc, sidecar, path = written
    back = quietfile.decode(sidecar, "ds", "/data", "sig", path.stat())
    assert back is not None
    assert (back.name, back.data_root, back.signature) == ("ds", "/data", "sig")
    assert (back.history, back.fleet_first, back.quiet) == ([[1.0, 2.0, 3.0]], 5.5, QUIET)
    assert back.kept_crc == crc and back.files == {} and back.kept_files is None
    with pytest.raises(ValueError, match="without its files"):
        back.to_bytes()  # it holds no files: writing it whole would lose them


def test_a_sidecar_is_of_one_dataset_root_and_signature(
    written: tuple[DatasetRecord, int, bytes, Path],
) -> None:
    _, _, sidecar, path = written
    for name, root, signature in (("other", "/data", "sig"), ("ds", "/x", "sig"),
                                  ("ds", "/data", "counted otherwise")):  # fmt: skip
        assert quietfile.decode(sidecar, name, root, signature, path.stat()) is None


def test_a_sidecar_is_of_one_record_file(
    written: tuple[DatasetRecord, int, bytes, Path], tmp_path: Path
) -> None:
    _, _, sidecar, path = written
    copy = tmp_path / "ds.json"
    copy.write_bytes(path.read_bytes())  # the same bytes, another file
    assert quietfile.decode(sidecar, "ds", "/data", "sig", copy.stat()) is None
    stat = path.stat()
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same mtime
    assert quietfile.decode(sidecar, "ds", "/data", "sig", copy.stat()) is None


@settings(max_examples=300, deadline=None)
@given(at=st.integers(0, 1 << 16), by=st.integers(1, 255), cut=st.booleans())
def test_no_damaged_or_truncated_sidecar_is_trusted(
    written: tuple[DatasetRecord, int, bytes, Path], at: int, by: int, cut: bool
) -> None:
    _, _, sidecar, path = written
    i = at % len(sidecar)
    damaged = sidecar[:i] if cut else sidecar[:i] + bytes([sidecar[i] ^ by]) + sidecar[i + 1 :]
    assert quietfile.decode(damaged, "ds", "/data", "sig", path.stat()) is None


def test_a_block_holding_big_integers_gets_no_sidecar(
    written: tuple[DatasetRecord, int, bytes, Path],
) -> None:
    _, crc, _, path = written
    big = DatasetRecord("ds", "/data", signature="sig")
    big.quiet = jsonio.dumps({"n": 2**70})  # the standard library's: read from the record
    assert quietfile.encode(big, crc, path.stat()) is None
    assert quietfile.encode(DatasetRecord("ds", "/data"), crc, path.stat()) is None
