"""The state dir: checkpoints and counts of every file, committed after the stats are written."""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import math
import mmap
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import msgspec

from genledger.ledger import jsonio, quietfile
from genledger.ledger.records import DamagedRecord, DatasetRecord, Rates
from genledger.ledger.segments import Bytes, Segments, SegmentsHead, writing
from genledger.refresh.atomic import atomic_write_bytes, atomic_write_in_turn, atomic_write_many
from genledger.refresh.ratesfile import RatesFile

LONGEST_PAUSE_S = 0.5  # between tries of a held lock
RATES_FILE = "rates.json"  # every quiet dataset's rates (`refresh.ratesfile`), in the state dir


class StateBusy(ValueError):
    """Another refresh has held a dataset's lock for longer than this one may wait."""


class StateStore:
    """The state dir: per dataset a record file, a lock file and, for a record with a quiet
    block, its sidecar (`ledger.quietfile`); the quiet datasets' rates (`refresh.ratesfile`).

    Records are replaced atomically; a per-dataset `flock` keeps two refreshes of the same
    dataset (a Dagster run and a CLI collect, say) from interleaving. A refresh waits for
    another one's lock at most `lock_wait_s`: one that never returns (a read hung on a dead
    share) must not block every later refresh in silence.
    """

    def __init__(
        self, state_dir: Path, data_root: str, signature: str = "", lock_wait_s: float = math.inf
    ) -> None:
        self.state_dir = state_dir
        self.data_root = data_root
        self.signature = signature  # the counting signature of this refresh
        self.lock_wait_s = lock_wait_s
        self.rates = RatesFile(state_dir / RATES_FILE)
        self._legacy: set[str] = set()  # datasets whose rates an older genledger kept apart

    def _stem(self, dataset: str) -> str:
        return _stem_of(dataset)

    def path(self, dataset: str) -> Path:
        """Where the record of `dataset` lives."""
        return self.state_dir / "datasets" / f"{self._stem(dataset)}.json"

    def locked(self, dataset: str) -> contextlib.AbstractContextManager[None]:
        """Hold the dataset's lock for the duration of a refresh."""
        lock = self.state_dir / "locks" / f"{self._stem(dataset)}.lock"
        return self._holding(lock, f"dataset {dataset!r}")

    @contextmanager
    def _holding(self, lock: Path, what: str) -> Iterator[None]:
        """Hold the lock file `lock` (of `what`, for people) while the block runs."""
        fd = _open_lock(lock)
        try:
            self._acquire(fd, what, lock)
            try:
                _say_who_holds(fd)
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _acquire(self, fd: int, what: str, lock: Path) -> None:
        """Take the lock, trying until `lock_wait_s` is spent; then raise `StateBusy`."""
        deadline, pause = time.monotonic() + self.lock_wait_s, 0.01
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StateBusy(_busy(what, lock, self.lock_wait_s)) from None
                time.sleep(min(pause, left))
                pause = min(2 * pause, LONGEST_PAUSE_S)

    def load(self, dataset: str, history_only: bool = False) -> DatasetRecord:
        """The committed record, or a fresh one if absent or damaged; `history_only`: a fresh
        one with the committed rate history (`DatasetRecord.from_bytes`)."""
        path = self.path(dataset)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return DatasetRecord(dataset, self.data_root, signature=self.signature)
        except OSError as exc:
            return self._discard(dataset, path, f"unreadable: {exc.strerror or exc}")
        try:
            read = self._segment_reader(dataset)
            record = DatasetRecord.from_bytes(
                raw, dataset, self.data_root, self.signature, history_only, read
            )
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            # A damaged record only costs a full re-read; it never costs correctness.
            return self._discard(dataset, path, str(exc) or type(exc).__name__)
        return self._with_rates(record, raw)

    def load_kept(self, dataset: str, listing: str) -> DatasetRecord | None:
        """The committed record with its files left as stored (`DatasetRecord.kept`), when
        it holds a quiet block (`refresh.quiet`) that may have been made under `listing` (a
        hex digest); None when absent, damaged or without one (`load` then says which)."""
        try:
            raw = self.path(dataset).read_bytes()
            # a block made under `listing` holds it: a record in which it appears nowhere
            # has none to reuse, and is not decoded twice (a C search, ~30 µs a record)
            if listing.encode() not in raw:
                return None
            record = DatasetRecord.kept(raw, dataset, self.data_root, self.signature)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None
        return None if record is None else self._with_rates(record, raw)

    def segments_path(self, dataset: str, gen: int) -> Path:
        """Where generation `gen` of the dataset's segment file lives (`ledger.segments`)."""
        return self.state_dir / "datasets" / f"{self._stem(dataset)}-g{gen}.seg"

    def _segment_reader(self, name: str) -> Callable[[SegmentsHead], Bytes]:
        """Maps the committed bytes of `name`'s segment file (read-only: each array is then
        copied once, straight from the page cache); `DamagedRecord` if it is missing or
        shorter than its record says."""

        def read(head: SegmentsHead) -> Bytes:
            path = self.segments_path(name, head.gen)
            if head.gen < 1 or head.length < 0:
                raise DamagedRecord(f"segments: generation {head.gen}, length {head.length}")
            try:
                with path.open("rb") as handle:
                    size = os.fstat(handle.fileno()).st_size
                    if size < head.length:
                        why = f"segment file {path} holds {size} of {head.length} bytes"
                        raise DamagedRecord(why)
                    return mmap.mmap(handle.fileno(), head.length, access=mmap.ACCESS_READ)
            except OSError as exc:
                raise DamagedRecord(f"segment file {path}: {exc.strerror or exc}") from None

        return read

    def load_quiet(self, dataset: str, listing: str) -> DatasetRecord | None:
        """`load_kept`, from the record's sidecar (`ledger.quietfile`) while it is of the
        record as it stands: the record itself is then not read at all."""
        try:
            stat = self.path(dataset).stat()
            raw = self.quiet_path(dataset).read_bytes()
        except OSError:
            return self.load_kept(dataset, listing)
        record = quietfile.decode(raw, dataset, self.data_root, self.signature, stat)
        if record is None:  # absent, damaged, or of another record: the record decides
            return self.load_kept(dataset, listing)
        assert record.quiet is not None
        if listing.encode() not in record.quiet:
            return None  # the record's block is this very one: made under another listing
        return self._with_rates(record, b"")

    def quiet_path(self, dataset: str) -> Path:
        """Where the sidecar of a record with a quiet block lives (`ledger.quietfile`)."""
        return self.state_dir / "datasets" / f"{self._stem(dataset)}.quiet"

    def rates_path(self, dataset: str) -> Path:
        """Where an older genledger kept a quiet dataset's rates, beside its record (read
        while the rates file has none of it; removed once it has)."""
        return self.state_dir / "datasets" / f"{self._stem(dataset)}.rates"

    def _with_rates(self, record: DatasetRecord, raw: bytes) -> DatasetRecord:
        """`record` with the rates quiet refreshes kept since it was written (`raw`: it as
        read, for its checksum; b"" when read from its sidecar, which names it)."""
        rates = self.rates.book().get(self._stem(record.name))
        if rates is None:
            rates = self._legacy_rates(record, raw)
        if rates is not None and rates.of_record(record, raw):
            record.history, record.fleet_first = rates.history, rates.fleet_first
        return record

    def _legacy_rates(self, record: DatasetRecord, raw: bytes) -> Rates | None:
        """The rates an older genledger kept beside the record, if any."""
        try:
            kept = self.rates_path(record.name).read_bytes()
        except OSError:
            return None
        self._legacy.add(record.name)
        return Rates.read(kept, record, raw)

    def _discard(self, dataset: str, path: Path, why: str) -> DatasetRecord:
        """A fresh record whose notice says which record was damaged, how, and what it costs."""
        why = " ".join(why.split())[:200]  # one line
        notice = (
            f"state record {path} of dataset {dataset!r} is damaged ({why}); "
            "discarded: the dataset is read again from the start"
        )
        return DatasetRecord(dataset, self.data_root, signature=self.signature, notice=notice)

    def other_datasets(self, besides: Iterable[str]) -> list[str]:
        """The datasets of this data root with a record here, besides `besides` (those the
        root holds now): the ones it held before and no longer does."""
        skip = {f"{self._stem(name)}.json" for name in besides}
        found: list[str] = []
        try:
            entries = list(os.scandir(self.state_dir / "datasets"))
        except OSError:
            return found
        for entry in entries:
            if entry.name in skip or entry.name.startswith(".") or not entry.name.endswith(".json"):
                continue
            name = self._name_in(Path(entry.path))
            if name is not None and f"{self._stem(name)}.json" == entry.name:
                found.append(name)
        return sorted(found)

    def _name_in(self, path: Path) -> str | None:
        """The dataset a record of this data root is about (None: another root's, or none)."""
        try:
            data = jsonio.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or data.get("data_root") != self.data_root:
            return None
        name = data.get("name")
        return name if isinstance(name, str) else None

    def forget(self, datasets: Iterable[str]) -> None:
        """Delete the records of `datasets` (gone from the root, and meant to be)."""
        datasets = list(datasets)
        for name in datasets:
            with contextlib.suppress(FileNotFoundError):
                self.path(name).unlink()
            self._drop_segments(name, keep=0)
        self._keep_rates({}, datasets)
        self._drop_beside(datasets)

    def save(self, record: DatasetRecord) -> None:
        """Commit one dataset's record atomically."""
        written = self._commit_whole([record], ())
        self._keep_rates({}, [record.name])
        self._drop_beside([record.name])
        self._write_sidecars(written)

    def _encoded(self, record: DatasetRecord) -> tuple[bytes, int | None, Segments]:
        """The record's bytes and quiet checksum (`DatasetRecord.encoded`), its arrays put
        in its segment file's next write."""
        head = record.segments
        if record.kept_files is not None:  # its files written back as they are: same file
            added = Segments(head or SegmentsHead())
        else:
            unused = 1 if head is not None else 1 + max(self._generations(record.name), default=0)
            added = Segments.after(head, unused)
        with writing(added):
            raw, crc = record.encoded()
        return raw, crc, added

    def _generations(self, dataset: str) -> list[int]:
        """The generations of the dataset's segment files on disk."""
        stem = self._stem(dataset)
        found = (self.state_dir / "datasets").glob(f"{glob.escape(stem)}-g*.seg")
        return [int(g) for p in found if (g := p.name[len(stem) + 2 : -4]).isdigit()]

    def _write_segments(self, written: list[tuple[str, Segments]], fds: list[int]) -> None:
        """Append each record's new array bytes to its segment file (a new generation: a
        new file), each file left open in `fds` for the caller to sync before any record
        naming them is committed (and to close)."""
        for name, added in written:
            if not added.added:
                continue
            path = self.segments_path(name, added.head.gen)
            path.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_TRUNC if added.fresh else 0)
            fds.append(os.open(path, flags, 0o666))
            # bytes past the committed length were left by a write never committed
            _write_at(fds[-1], added.pieces, added.start)
            os.ftruncate(fds[-1], added.start + added.added)

    def _undo_segments(
        self, writes: list[tuple[Path, bytes]], added: list[tuple[str, Segments]]
    ) -> None:
        """After a failed commit, remove the new generations no renamed-in record names (the
        stats failed, or a record did), and the records' folder if that left it empty."""
        for (path, raw), (name, arrays) in zip(writes, added, strict=True):
            if not (arrays.fresh and arrays.added):
                continue
            with contextlib.suppress(OSError):
                if path.read_bytes() == raw:  # this record is committed: its file stays
                    continue
            with contextlib.suppress(OSError):
                self.segments_path(name, arrays.head.gen).unlink()
        with contextlib.suppress(OSError):
            (self.state_dir / "datasets").rmdir()  # only when empty: a first refresh's

    def _drop_segments(self, dataset: str, keep: int) -> None:
        """Remove the dataset's segment files other than generation `keep`."""
        for gen in self._generations(dataset):
            if gen != keep:
                self.segments_path(dataset, gen).unlink(missing_ok=True)

    def _keep_rates(self, rates: Mapping[str, Rates], whole: Iterable[str]) -> None:
        """Keep the `rates` of quiet datasets (by name) in the rates file, and drop those of
        datasets just written `whole` (theirs are in their records now). Only a change is
        written, under the file's own lock (refreshes of other datasets keep theirs)."""
        book = self.rates.book()
        kept = {self._stem(name): one for name, one in rates.items()}
        drop = [stem for stem in map(self._stem, whole) if stem in book]
        if not drop and all(book.get(stem) == one for stem, one in kept.items()):
            return
        with self._holding(self.state_dir / "locks" / "rates.lock", "the rates file"):
            self.rates.update(kept, drop)

    def _drop_beside(self, datasets: Iterable[str], sidecars: bool = True) -> None:
        """Remove the files kept beside records now written whole or gone: an older
        genledger's rates and the sidecars (neither matches the new record; removed anyway,
        so none ever can again); without `sidecars`, the rates only."""
        for name in datasets:
            beside = (self.rates_path(name), self.quiet_path(name))
            for path in beside if sidecars else beside[:1]:
                with contextlib.suppress(OSError):  # left behind, it is never trusted
                    path.unlink()

    def _write_sidecars(self, written: Iterable[tuple[DatasetRecord, int | None]]) -> None:
        """The sidecars of records just written whole with a quiet block (and checksum
        `crc`), each made for the record file as it now stands. Not fsynced, and a failure
        only costs reading the record: a sidecar lost, torn or stale is never trusted."""
        sidecars = []
        for record, crc in written:
            if crc is None:
                continue
            # a sidecar is only a saving: none at all when it cannot be made
            with contextlib.suppress(OSError, ValueError, msgspec.EncodeError):
                raw = quietfile.encode(record, crc, self.path(record.name).stat())
                if raw is not None:
                    sidecars.append((self.quiet_path(record.name), raw))
        with contextlib.suppress(OSError):
            atomic_write_many(sidecars, durable=False)

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

    def save_all(
        self, records: Iterable[DatasetRecord], first: Sequence[tuple[Path, bytes]] = ()
    ) -> None:
        """Commit several datasets' records, each atomically, with their syncs done together;
        of a quiet one only its rates (its files and quiet block stand as written). `first`:
        files (the stats JSON) written atomically in the same sync, durable before any record
        is renamed in (a checkpoint moves only once the stats that count it are)."""
        whole_records, rated, unsided = [], {}, []
        for record in records:
            rates = Rates.of(record)
            if rates is None:
                whole_records.append(record)
            else:
                rated[record.name] = rates
                if record.kept_files is not None:  # its record read, checked: no sidecar
                    unsided.append((record, record.kept_crc))
        whole = self._commit_whole(whole_records, first)
        # rates lost to a power cut cost a sample of the rate history, never a count: one
        # file for all, not fsynced (`refresh.ratesfile`)
        self._keep_rates(rated, [record.name for record, _ in whole])
        self._drop_beside([record.name for record, _ in whole])
        self._drop_beside(self._legacy & set(rated), sidecars=False)
        # a quiet record read whole (written by an older genledger, or its sidecar lost or
        # stale) gets one now, made for the record file as it stands and was checked
        self._write_sidecars([*whole, *unsided])

    def _commit_whole(
        self, records: list[DatasetRecord], first: Sequence[tuple[Path, bytes]]
    ) -> list[tuple[DatasetRecord, int | None]]:
        """Write `first`, then records whole, in one round of syncs: the records' new array
        bytes, `first`'s temp files and the records' are all fsynced at once; then `first` is
        renamed in, then the records naming those bytes; then segment files no record names
        are dropped. Each record with its quiet checksum."""
        writes, added, written = [], [], []
        for record in records:
            raw, crc, arrays = self._encoded(record)
            writes.append((self.path(record.name), raw))
            added.append((record.name, arrays))
            written.append((record, crc))
        fds: list[int] = []
        try:
            self._write_segments(added, fds)
            atomic_write_in_turn([first, writes], synced=fds)
        except BaseException:
            self._undo_segments(writes, added)
            raise
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        for name, arrays in added:
            if arrays.fresh:  # a new generation is committed: the old files are dead
                self._drop_segments(name, keep=arrays.head.gen)
        return written


def _write_at(fd: int, pieces: list[bytes | memoryview], offset: int) -> None:
    """Write `pieces` one after another from `offset`, short writes retried."""
    for piece in pieces:
        view = memoryview(piece)
        while view:
            done = os.pwrite(fd, view, offset)
            offset += done
            view = view[done:]


@lru_cache(maxsize=65536)  # a refresh names each dataset's files ~7 times
def _stem_of(dataset: str) -> str:
    """A dataset's files' stem: its name made safe for a file name, and a digest of it."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in dataset)[:60]
    digest = hashlib.blake2b(dataset.encode(), digest_size=6).hexdigest()
    return f"{safe}-{digest}"


def _busy(what: str, lock: Path, waited_s: float) -> str:
    """Why a refresh gave up: the dataset (or file), the lock's holder, and the setting."""
    try:
        holder = " ".join(lock.read_text(errors="replace").split())[:100]
    except OSError:
        holder = ""
    return (
        f"{what}: another refresh ({holder or 'a process that has not said who'}) "
        f"still holds its lock ({lock}) after {waited_s:g} s of waiting; wait for it to end, or "
        "stop it if it is stuck ([files] lock_wait_seconds sets the wait)"
    )


def _open_lock(lock: Path) -> int:
    """A new descriptor of the lock file (each its own `flock`), its folder made if need be."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC
    try:
        return os.open(lock, flags, 0o666)
    except FileNotFoundError:
        lock.parent.mkdir(parents=True, exist_ok=True)
        return os.open(lock, flags, 0o666)


HOLDER_WIDTH = 64  # the holder's line, padded: written over the last one, never truncated


def _say_who_holds(fd: int) -> None:
    """Write this process into its lock file, for a refresh that gives up waiting (best
    effort: a full disk must not fail the refresh here). Written in place over the previous
    holder's line of the same width: truncating the file cost ~0.1 ms a dataset."""
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = f"pid {os.getpid()} since {since}".ljust(HOLDER_WIDTH).encode()
    with contextlib.suppress(OSError):
        os.pwrite(fd, line, 0)
        if os.fstat(fd).st_size > len(line):  # a longer line of an older genledger
            os.ftruncate(fd, len(line))
