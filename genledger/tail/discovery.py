"""Find the datasets of a data root: each immediate subfolder holding a recognised file."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from genledger.config import Config, FilePatterns

ROLES = ("responses", "tokenized", "prompts")


class DataRootError(OSError):
    """The data root is missing or cannot be listed; the message names the path."""


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset and the role its name gives it."""

    dataset: str
    name: str
    role: str
    path: Path

    @property
    def key(self) -> str:
        """Stable identity in the state file: dataset and file name."""
        return f"{self.dataset}/{self.name}"


@dataclass(frozen=True)
class Dataset:
    """A dataset folder: its files by role and its configured expected total."""

    name: str
    path: Path
    files: tuple[DataFile, ...]
    n_prompts_config: int | None

    def of_role(self, role: str) -> tuple[DataFile, ...]:
        """This dataset's files of one role, sorted by name."""
        return tuple(f for f in self.files if f.role == role)

    @property
    def kind(self) -> str:
        """`pretokenized` when only tokenized files exist, else `inference` (maybe not started)."""
        if self.of_role("tokenized") and not self.of_role("responses"):
            return "pretokenized"
        return "inference"


def role_of(name: str, patterns: FilePatterns) -> str | None:
    """The role a file name matches, or None."""
    for role in ROLES:
        if any(fnmatch.fnmatchcase(name, p) for p in getattr(patterns, role)):
            return role
    return None


def discover(root: Path, config: Config) -> list[Dataset]:
    """All datasets under `root`, sorted by name. Raises `DataRootError` if unlistable."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except FileNotFoundError as exc:
        raise DataRootError(f"data root {root} does not exist") from exc
    except NotADirectoryError as exc:
        raise DataRootError(f"data root {root} is not a directory") from exc
    except OSError as exc:
        raise DataRootError(f"data root {root} cannot be read: {exc.strerror or exc}") from exc
    datasets = []
    for entry in entries:
        if _is_dir(entry):
            dataset = _dataset(Path(entry.path), entry.name, config)
            if dataset is not None:
                datasets.append(dataset)
    return datasets


def discover_one(root: Path, name: str, config: Config) -> Dataset | None:
    """Dataset `name` under `root` as it is now (None if gone or without a recognised file).

    One folder listed, not the whole root: a run refreshing one dataset of hundreds pays for
    that dataset only.
    """
    return _dataset(root / name, name, config)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _dataset(folder: Path, name: str, config: Config) -> Dataset | None:
    try:
        names = sorted(e.name for e in os.scandir(folder) if not _is_dir(e))
    except OSError:
        return None
    files = []
    for file_name in names:
        role = role_of(file_name, config.patterns)
        if role is not None:
            files.append(DataFile(name, file_name, role, folder / file_name))
    if not files:
        return None
    return Dataset(name, folder, tuple(files), config.n_prompts.get(name))
