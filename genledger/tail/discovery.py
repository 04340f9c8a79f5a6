"""Find the datasets of a data root, and every file that is in none of them (docs/architecture.md).

Each immediate subfolder holding a recognised file, at any depth, is a dataset; its files are
named by their path relative to the dataset folder. Every other regular file that is not
ignored is unrecognised: listed with its dataset, or at the root when it lies outside every
dataset folder (loose at the root, or in a folder holding no recognised file). Nothing under
the root is skipped in silence.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
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
    """One file of a dataset: its path in the dataset folder, role and where to read it; or,
    with `error`, something there that cannot be read (an unlistable folder, a FIFO, a folder
    named like a data file), reported with the OS's reason and never opened."""

    dataset: str
    name: str  # path relative to the dataset folder, '/'-separated
    role: str
    path: Source
    error: str | None = None
    # the other names of this very file (same device and inode), relative to the data root
    aliases: tuple[str, ...] = ()
    listed: FileInfo | None = None  # what the walk saw of it: size, mtime, (device, inode)

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
    # batch status objects beside the output: (path in the dataset folder, source)
    statuses: tuple[tuple[str, Source], ...] = ()
    # folders reached again through a symbolic link (the dataset's own folder, or one in
    # it), relative to the data root: walked once, under their real name
    aliases: tuple[str, ...] = ()

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
    # what cannot be read outside every dataset: (path relative to the root, the reason)
    problems: tuple[tuple[str, str], ...] = ()


def role_of(name: str, patterns: FilePatterns) -> str | None:
    """The role a file name matches, or None."""
    for role in ROLES:
        if any(fnmatch.fnmatchcase(name, p) for p in getattr(patterns, role)):
            return role
    return None


def is_status(name: str, patterns: FilePatterns) -> bool:
    """A file name of a batch status object (`[files] batch_status`)."""
    return any(fnmatch.fnmatchcase(name, p) for p in patterns.batch_status)


def ignored(path: str, patterns: FilePatterns) -> bool:
    """A file that is never data: hidden, an editor's or writer's leftover, or configured."""
    path = path.rstrip("/")  # an unlistable folder is named with a trailing `/`
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
    """Datasets (sorted by name), unrecognised files and unreadable entries of `root` (a path,
    URL or root). Raises `DataRootError` when the root cannot be listed."""
    tree = root if hasattr(root, "walk") else open_root(root)
    walked = [f for f in tree.walk() if not ignored(f.path, config.patterns)]
    files, file_aliases = one_name_each([f for f in walked if f.kind != "alias"], config)
    folder_aliases = [f for f in walked if f.kind == "alias"]
    folders: dict[str, list[FileInfo]] = {}
    loose: list[FileInfo] = []
    for info in files:
        top, sep, _ = info.path.partition("/")
        if sep:
            folders.setdefault(top, []).append(info)
        elif info.kind != "folder":  # a folder at the root is a dataset folder, whatever its name
            loose.append(info)
    datasets: list[Dataset] = []
    outside = loose
    for name in sorted(folders):
        dataset = _dataset(tree, name, folders[name], config, file_aliases)
        if dataset is not None:
            dataset = _with_folder_aliases(dataset, folder_aliases)
        if dataset is None:
            outside += [f for f in folders[name] if f.kind != "folder"]
        else:
            datasets.append(dataset)
    unrecognised = tuple(sorted(f.path for f in outside if f.readable))
    problems = tuple(sorted((f.path, str(f.error)) for f in outside if not f.readable))
    return Survey(datasets, unrecognised, tuple(files), problems)


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
        walked = [f for f in tree.walk(name) if not ignored(f.path, config.patterns)]
        infos, aliases = one_name_each([f for f in walked if f.kind != "alias"], config)
        dataset = _dataset(tree, name, infos, config, aliases)
        return None if dataset is None else _with_folder_aliases(dataset, walked)
    return next((ds for ds in discover(tree, config) if ds.name == name), None)


DATASET_FOLDER = "./"  # how a dataset's entries name its own folder (when it cannot be listed)


def one_name_each(
    infos: list[FileInfo], config: Config
) -> tuple[list[FileInfo], dict[str, tuple[str, ...]]]:
    """`infos` with each file (device, inode) under one name, and the other names of each
    (paths relative to the root). The name kept: one not reached through a symbolic link,
    then one a pattern recognises, then the first in path order; a file system without
    inodes (a remote root) keeps every name."""
    by_node: dict[tuple[int, int], list[FileInfo]] = {}
    for info in infos:
        if info.node is not None and info.readable:
            by_node.setdefault(info.node, []).append(info)
    dropped: set[str] = set()
    aliases: dict[str, tuple[str, ...]] = {}
    for names in by_node.values():
        if len(names) < 2:
            continue
        kept = min(names, key=lambda f: (f.linked, _unmatched(f.path, config), f.path))
        others = tuple(sorted(f.path for f in names if f is not kept))
        aliases[kept.path] = others
        dropped.update(others)
    return [f for f in infos if f.path not in dropped], aliases


def _unmatched(path: str, config: Config) -> bool:
    return role_of(path.rsplit("/", 1)[-1], config.patterns) is None


def _with_folder_aliases(dataset: Dataset, walked: list[FileInfo]) -> Dataset:
    """`dataset` with the folders that are its own folder, or one in it, under another name."""
    mine = tuple(
        sorted(
            f.path
            for f in walked
            if f.kind == "alias" and (f.alias_of or "").split("/", 1)[0] == dataset.name
        )
    )
    return replace(dataset, aliases=mine) if mine else dataset


def _dataset(
    tree: Any,
    name: str,
    infos: list[FileInfo],
    config: Config,
    aliases: dict[str, tuple[str, ...]] | None = None,
) -> Dataset | None:
    files: list[DataFile] = []
    unrecognised: list[str] = []
    statuses: list[tuple[str, Source]] = []
    problems: list[tuple[str, FileInfo, str | None]] = []
    for info in infos:
        inner = info.path[len(name) + 1 :] or DATASET_FOLDER
        base = inner.rstrip("/").rsplit("/", 1)[-1]
        role = role_of(base, config.patterns)
        if info.readable:
            if role is None and is_status(base, config.patterns):
                statuses.append((inner, tree.source(info.path, info)))
            elif role is None:
                unrecognised.append(inner)
            else:
                also = (aliases or {}).get(info.path, ())
                source = tree.source(info.path, info)
                files.append(DataFile(name, inner, role, source, None, also, info))
        elif info.kind != "folder" or role is not None:  # a folder matching no pattern is one
            problems.append((inner, info, role))
    unlistable = any(inner == DATASET_FOLDER for inner, _, _ in problems)
    if not files and not unlistable and all(role is None for _, _, role in problems):
        return None
    main = _main_role(files)  # what cannot be read and matches no pattern is checked so
    for inner, info, role in problems:
        source = tree.source(info.path, info)
        files.append(DataFile(name, inner, role or main, source, error=info.error))
    folder = tree.source(name, _top(infos))
    files.sort(key=lambda f: f.name)
    return Dataset(
        name,
        folder,
        tuple(files),
        config.n_prompts.get(name),
        tuple(unrecognised),
        tuple(sorted(statuses, key=lambda s: s[0])),
    )


def _main_role(files: list[DataFile]) -> str:
    """`tokenized` for a dataset of tokenized files only, else `responses`."""
    roles = {f.role for f in files}
    return "tokenized" if "tokenized" in roles and "responses" not in roles else "responses"


def _top(infos: list[FileInfo]) -> FileInfo | None:
    """A listing of the dataset folder itself, as the file system spells its name."""
    for info in infos:
        if info.raw:
            top = info.raw.split("/", 1)[0]
            return FileInfo(info.path.split("/", 1)[0], 0, 0, "folder", raw=top)
    return None
