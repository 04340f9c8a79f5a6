"""Every quiet dataset's rates in one file (refresh.ratesfile): refreshes of other datasets
keep each other's entries, a damaged file costs only its samples, a change is seen."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from genledger.ledger.records import Rates
from genledger.refresh.ratesfile import RatesFile
from genledger.refresh.state import StateStore


def test_refreshes_of_other_datasets_keep_each_others_rates(tmp_path: Path) -> None:
    # Each thread is the one refresh of its dataset (it holds its lock) and writes its rates
    # again and again; no write of the other may ever take back one of its own.
    def keep(name: str, lost: list[str]) -> None:
        store = StateStore(tmp_path, "/data")
        stem = store.path(name).stem
        with store.locked(name):
            for i in range(150):
                store._keep_rates({name: Rates(7, [[float(i), 0.0, 0.0]])}, [])
                kept = store.rates.book().get(stem)
                if kept is None or kept.history[0][0] < i:
                    lost.append(f"{name} {i}")

    lost: list[str] = []
    threads = [threading.Thread(target=keep, args=(name, lost)) for name in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lost == []
    book = StateStore(tmp_path, "/data").rates.book()
    assert sorted(one.history[0][0] for one in book.values()) == [149.0] * 3


def test_a_damaged_rates_file_costs_only_its_samples(tmp_path: Path) -> None:
    store = StateStore(tmp_path, "/data")
    store._keep_rates({"a": Rates(7, [[1.0, 2.0, 3.0]])}, [])
    (tmp_path / "rates.json").write_bytes(b'{"a-": [1, 2')  # torn
    assert store.rates.book() == {}
    store._keep_rates({"b": Rates(8, [[1.0, 2.0, 3.0]])}, [])
    assert list(StateStore(tmp_path, "/data").rates.book()) == [store.path("b").stem]


def test_the_file_is_read_again_once_another_refresh_changed_it(tmp_path: Path) -> None:
    mine, other = RatesFile(tmp_path / "rates.json"), RatesFile(tmp_path / "rates.json")
    assert mine.book() == {}
    other.update({"a": Rates(1, [[1.0, 2.0, 3.0]])}, [])
    assert list(mine.book()) == ["a"]
    other.update({"b": Rates(2, [])}, ["a"])
    assert list(mine.book()) == ["b"]
    os.unlink(tmp_path / "rates.json")
    assert mine.book() == {}
