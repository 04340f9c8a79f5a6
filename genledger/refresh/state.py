"""The state dir: checkpoints and counts of every file, committed after the stats are written."""

from __future__ import annotations

import fcntl
import hashlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from genledger.ledger.records import DatasetRecord
from genledger.refresh.atomic import atomic_write_bytes, atomic_write_many


class StateStore:
    """The state dir: one record file and one lock file per dataset.

    Records are replaced atomically; a per-dataset `flock` keeps two refreshes of the same
    dataset (a Dagster run and a CLI collect, say) from interleaving.
    """

    def __init__(self, state_dir: Path, data_root: str, signature: str = "") -> None:
        self.state_dir = state_dir
        self.data_root = data_root
        self.signature = signature  # the counting signature of this refresh

    def _stem(self, dataset: str) -> str:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in dataset)[:60]
        digest = hashlib.blake2b(dataset.encode(), digest_size=6).hexdigest()
        return f"{safe}-{digest}"

    def path(self, dataset: str) -> Path:
        """Where the record of `dataset` lives."""
        return self.state_dir / "datasets" / f"{self._stem(dataset)}.json"

    @contextmanager
    def locked(self, dataset: str) -> Iterator[None]:
        """Hold the dataset's lock for the duration of a refresh."""
        lock = self.state_dir / "locks" / f"{self._stem(dataset)}.lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        with lock.open("a") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def load(self, dataset: str, history_only: bool = False) -> DatasetRecord:
        """The committed record, or a fresh one if absent or damaged; `history_only`: a fresh
        one with the committed rate history (`DatasetRecord.from_bytes`)."""
        fresh = DatasetRecord(dataset, self.data_root, signature=self.signature)
        try:
            raw = self.path(dataset).read_bytes()
        except FileNotFoundError:
            return fresh
        except OSError as exc:
            fresh.notice = f"state record unreadable ({exc.strerror or exc}): read again"
            return fresh
        try:
            return DatasetRecord.from_bytes(
                raw, dataset, self.data_root, self.signature, history_only
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            # A damaged state only costs a full re-read; it never costs correctness.
            fresh.notice = "state record damaged: read again"
            return fresh

    def save(self, record: DatasetRecord) -> None:
        """Commit one dataset's record atomically."""
        atomic_write_bytes(self.path(record.name), record.to_bytes())

    def read_extra(self, name: str) -> bytes | None:
        """A small file the refresh keeps beside the records (the prices found, a dataset's
        fleet summary); None when absent or unreadable (it is only a saving)."""
        try:
            return (self.state_dir / name).read_bytes()
        except OSError:
            return None

    def write_extra(self, name: str, data: bytes) -> None:
        """Replace such a file atomically; a failure costs only finding it again."""
        try:
            atomic_write_bytes(self.state_dir / name, data)
        except OSError:
            return

    def fleet_name(self, dataset: str) -> str:
        """Where a dataset's fleet summary lives, under the state dir."""
        return f"fleet/{self._stem(dataset)}.json"

    def drop_fleet_summaries(self, keep: Iterable[str]) -> None:
        """Remove the fleet summaries of datasets other than `keep` (gone from the root)."""
        kept = {self.state_dir / self.fleet_name(name) for name in keep}
        for path in (self.state_dir / "fleet").glob("*.json"):
            if path not in kept:
                path.unlink(missing_ok=True)

    def fleet_summaries(self) -> list[bytes]:
        """Every dataset's fleet summary."""
        found = []
        for path in sorted((self.state_dir / "fleet").glob("*.json")):
            try:
                found.append(path.read_bytes())
            except OSError:
                continue
        return found

    def save_all(self, records: Iterable[DatasetRecord]) -> None:
        """Commit several datasets' records, each atomically, with their syncs done together."""
        atomic_write_many([(self.path(r.name), r.to_bytes()) for r in records])
