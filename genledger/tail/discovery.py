"""Find the datasets of a data root, and every file that is in none of them (docs/architecture.md).

Each immediate subfolder holding a recognised file, at any depth, is a dataset; its files are
named by their path relative to the dataset folder. Every other regular file that is not
ignored is unrecognised: listed with its dataset, or at the root when it lies outside every
dataset folder (loose at the root, or in a folder holding no recognised file). Nothing under
the root is skipped in silence.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genledger.config import Config, FilePatterns, is_url
from genledger.tail.roots import DataRootError, FileInfo, LocalRoot, Source

__all__ = ["DataFile", "DataRootError", "Dataset", "Survey", "discover", "survey"]

ROLES = ("responses", "tokenized", "prompts")
# Editors', writers' and lock files: never data, never worth a warning.
IGNORED_SUFFIXES = ("~", ".tmp", ".swp", ".lock")
FORM_SUFFIXES = ((".gz", "gzip"), (".zst", "zstd"), (".zstd", "zstd"), (".parquet", "parquet"))


def form_of(name: str) -> str:
    """How a file is stored, from its name: `jsonl` (tailed), or sealed `gzip`, `zstd`,
    `parquet` (read whole when new or changed)."""
    for suffix, form in FORM_SUFFIXES:
        if name.endswith(suffix):
            return form
    return "jsonl"


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset: its path in the dataset folder, role and where to read it."""

    dataset: str
    name: str  # path relative to the dataset folder, '/'-separated
    role: str
    path: Source

    @property
    def key(self) -> str:
        """Stable identity in the state file: dataset and file path."""
        return f"{self.dataset}/{self.name}"

    @property
    def form(self) -> str:
        """`jsonl`, `gzip`, `zstd` or `parquet`."""
        return form_of(self.name)

    @property
    def sealed(self) -> bool:
        """Read whole when new or changed, rather than tailed."""
        return self.form != "jsonl"


@dataclass(frozen=True)
class Dataset:
    """A dataset folder: its files by role, its configured expected total, and the files in
    it that match no pattern."""

    name: str
    path: Source
    files: tuple[DataFile, ...]
    n_prompts_config: int | None
    unrecognised: tuple[str, ...] = ()  # paths relative to the dataset folder

    def of_role(self, role: str) -> tuple[DataFile, ...]:
        """This dataset's files of one role, sorted by path."""
        return tuple(f for f in self.files if f.role == role)

    @property
    def kind(self) -> str:
        """`pretokenized` when only tokenized files exist, else `inference` (maybe not started)."""
        if self.of_role("tokenized") and not self.of_role("responses"):
            return "pretokenized"
        return "inference"


@dataclass(frozen=True)
class Survey:
    """Everything under a data root: its datasets, and the unrecognised files outside them."""

    datasets: list[Dataset]
    unrecognised: tuple[str, ...] = ()  # paths relative to the data root
    files: tuple[FileInfo, ...] = field(default=(), repr=False)  # every file seen, not ignored


def role_of(name: str, patterns: FilePatterns) -> str | None:
    """The role a file name matches, or None."""
    for role in ROLES:
        if any(fnmatch.fnmatchcase(name, p) for p in getattr(patterns, role)):
            return role
    return None


def ignored(path: str, patterns: FilePatterns) -> bool:
    """A file that is never data: hidden, an editor's or writer's leftover, or configured."""
    name = path.rsplit("/", 1)[-1]
    if name.startswith(".") or name.endswith(IGNORED_SUFFIXES):
        return True
    return any(
        fnmatch.fnmatchcase(name, glob) or fnmatch.fnmatchcase(path, glob)
        for glob in patterns.ignore
    )


def open_root(root: Path | str) -> LocalRoot | Any:
    """The root a configured data root names: a local folder, or a remote URL."""
    if is_url(root):
        from genledger.tail.remote import RemoteRoot  # remote imports roots, never the reverse

        return RemoteRoot.from_url(str(root))
    return LocalRoot(Path(root))


def survey(root: Path | str | Any, config: Config) -> Survey:
    """Datasets (sorted by name) and unrecognised files of `root` (a path, URL or root).
    Raises `DataRootError` when the root cannot be listed."""
    tree = root if hasattr(root, "walk") else open_root(root)
    files = [f for f in tree.walk() if not ignored(f.path, config.patterns)]
    folders: dict[str, list[FileInfo]] = {}
    loose: list[str] = []
    for info in files:
        top, sep, _ = info.path.partition("/")
        if sep:
            folders.setdefault(top, []).append(info)
        else:
            loose.append(info.path)
    datasets: list[Dataset] = []
    outside = loose
    for name in sorted(folders):
        dataset = _dataset(tree, name, folders[name], config)
        if dataset is None:
            outside += [f.path for f in folders[name]]
        else:
            datasets.append(dataset)
    return Survey(datasets, tuple(sorted(outside)), tuple(files))


def discover(root: Path | str | Any, config: Config) -> list[Dataset]:
    """All datasets under `root`, sorted by name. Raises `DataRootError` if unlistable."""
    return survey(root, config).datasets


def discover_one(root: Path | str | Any, name: str, config: Config) -> Dataset | None:
    """Dataset `name` under `root` as it is now (None if gone or without a recognised file).

    On a local root only that folder is listed, not the whole root: a run refreshing one
    dataset of hundreds pays for that dataset only. Raises `DataRootError` if unlistable.
    """
    tree = root if hasattr(root, "walk") else open_root(root)
    if isinstance(tree, LocalRoot):
        infos = [f for f in tree.walk(name) if not ignored(f.path, config.patterns)]
        return _dataset(tree, name, infos, config)
    return next((ds for ds in discover(tree, config) if ds.name == name), None)


def _dataset(tree: Any, name: str, infos: list[FileInfo], config: Config) -> Dataset | None:
    files: list[DataFile] = []
    unrecognised: list[str] = []
    for info in infos:
        inner = info.path[len(name) + 1 :]
        role = role_of(inner.rsplit("/", 1)[-1], config.patterns)
        if role is None:
            unrecognised.append(inner)
        else:
            files.append(DataFile(name, inner, role, tree.source(info.path, info)))
    if not files:
        return None
    folder = tree.source(name)
    return Dataset(name, folder, tuple(files), config.n_prompts.get(name), tuple(unrecognised))
