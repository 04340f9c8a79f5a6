"""Time a dataset record's load and save: arrays in the JSON (base64) against segment files.

    python benchmarks/state.py [--records 20000 175000 1000000] [--grow 0.01] [--repeats 5]

For each size, one dataset file's record holding that many record ids (like the providers'
own: `chatcmpl-` and 29 random characters) and answer keys, with their lines. Two state dirs
hold it: one with the arrays as base64 in the JSON (how records were kept before
`genledger.ledger.segments`), one with segment files. Each round loads the record, adds
`--grow` more records to its arrays (a 1 % append) and saves it, as a refresh does; the
milliseconds of the load and of the save (fsync included) are printed, best of `--repeats`,
after checking that both dirs load back equal.
"""

from __future__ import annotations

import argparse
import random
import string
import tempfile
import time
from pathlib import Path

from genledger.ledger.hashlist import HashList
from genledger.ledger.idlist import IdList
from genledger.ledger.records import DatasetRecord, FileState
from genledger.ledger.tally import FileTally
from genledger.refresh.atomic import atomic_write_many
from genledger.refresh.state import StateStore

ALPHABET = string.ascii_letters + string.digits
FILE = "raw_responses.jsonl"


def grown(tally: FileTally, start: int, n: int, rng: random.Random) -> FileTally:
    """`tally` with `n` more records' ids and answer keys, from line `start`."""
    ids, keys = IdList(), HashList()
    for line in range(start, start + n):
        ids.append(line, "chatcmpl-" + "".join(rng.choices(ALPHABET, k=29)))
        keys.append(line, rng.getrandbits(64) - 2**63)
    more = FileTally.of(records=n)
    more.ids, more.hashes = ids, {"answers": keys}
    return tally + more


class JsonStore(StateStore):
    """The state store as it was: a record's arrays as base64 inside its JSON."""

    def save(self, record: DatasetRecord) -> None:
        atomic_write_many([(self.path(record.name), record.to_bytes())])


def one_round(store: StateStore, n: int, rng: random.Random) -> tuple[float, float]:
    """Load, grow by `n` records, save: the seconds of the load and of the save."""
    t0 = time.perf_counter()
    record = store.load("ds")
    t1 = time.perf_counter()
    state = record.files[FILE]
    state.tally = grown(state.tally, state.tally["records"] + 1, n, rng)
    t2 = time.perf_counter()
    store.save(record)
    return t1 - t0, time.perf_counter() - t2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, nargs="+", default=[20_000, 175_000, 1_000_000])
    parser.add_argument("--grow", type=float, default=0.01)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{'records':>9} {'load JSON':>10} {'load seg':>9} {'save JSON':>10} {'save seg':>9}")
    for records in args.records:
        rng = random.Random(records)
        tally = grown(FileTally(), 1, records, rng)
        best: dict[str, list[float]] = {}
        with tempfile.TemporaryDirectory() as tmp:
            stores = {
                "JSON": JsonStore(Path(tmp) / "json", "/data", "s"),
                "seg": StateStore(Path(tmp) / "seg", "/data", "s"),
            }
            for store in stores.values():
                state = FileState("ds", FILE, "responses", tally=tally)
                store.save(DatasetRecord("ds", "/data", {FILE: state}, signature="s"))
            for _ in range(args.repeats):
                n, seed = max(1, int(records * args.grow)), rng.getrandbits(32)
                for label, store in stores.items():
                    load, save = one_round(store, n, random.Random(seed))
                    best.setdefault(f"load {label}", []).append(load)
                    best.setdefault(f"save {label}", []).append(save)
            assert stores["JSON"].load("ds") == stores["seg"].load("ds"), "the stores differ"
        ms = {key: 1000 * min(values) for key, values in best.items()}
        print(
            f"{records:>9,} {ms['load JSON']:>8.1f}ms {ms['load seg']:>7.1f}ms "
            f"{ms['save JSON']:>8.1f}ms {ms['save seg']:>7.1f}ms"
        )


if __name__ == "__main__":
    main()
