"""A record's stored quiet checksum, read in the record's own decode, decides its rates as a
second parse of the whole record did."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.ledger.records import UNREAD, DatasetRecord, Rates

NAME, ROOT, SIGNATURE = "ds", "/data", "sig"
# what a stored record's `kept_crc` may hold: a checksum, damage of every JSON kind, or none
CRCS = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.none(),
    st.text(max_size=5),
    st.booleans(),
    st.floats(allow_nan=False),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=2),
)
ABSENT = object()


def stored(crc: object, quiet: bool, signature: str) -> bytes:
    """A record as a refresh writes it, its `kept_crc` replaced by `crc` (or removed)."""
    record = DatasetRecord(NAME, ROOT, signature=signature, quiet=b"{}" if quiet else None)
    data = orjson.loads(record.to_bytes())
    data.pop("kept_crc", None)
    if crc is not ABSENT:
        data["kept_crc"] = crc
    return orjson.dumps(data)


@settings(max_examples=200, deadline=None)
@given(
    crc=st.one_of(CRCS, st.just(ABSENT)),
    rates_crc=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    same=st.booleans(),
    quiet=st.booleans(),
    signature=st.sampled_from([SIGNATURE, "other"]),
    history_only=st.booleans(),
)
def test_checksum_read_with_the_record_decides_as_a_second_parse(
    crc: object, rates_crc: int, same: bool, quiet: bool, signature: str, history_only: bool
) -> None:
    if same and type(crc) is int and -(2**63) <= crc < 2**63:
        rates_crc = crc
    raw = stored(crc, quiet, signature)
    rates = Rates(rates_crc, [[1.0, 2.0]])
    record = DatasetRecord.from_bytes(raw, NAME, ROOT, SIGNATURE, history_only)
    assert record.stored_crc is not UNREAD
    # the definition: the checksum parsed again from the bytes, as for a record not read
    unread = DatasetRecord(NAME, ROOT, signature=SIGNATURE)
    assert unread.stored_crc is UNREAD
    assert rates.of_record(record, raw) == rates.of_record(unread, raw)
    assert rates.of_record(record, raw) == (crc is not ABSENT and crc == rates_crc)


def test_a_record_of_another_root_is_read_again_for_its_checksum() -> None:
    raw = stored(7, True, SIGNATURE)
    fresh = DatasetRecord.from_bytes(raw, NAME, "/elsewhere", SIGNATURE)
    assert fresh.stored_crc is UNREAD and fresh.files == {}
    assert Rates(7, []).of_record(fresh, raw)  # as before: the bytes' checksum decides
