"""The Dagster workspace the demo serves: found where the user points, never beside this module.

The Dagster layer (`definitions.py`, `assets/`, `checks/`, `automation/`) is not installed; a
checkout's `workspace.yaml` loads it, and the `dagster.yaml` beside that file holds the
instance settings the demo copies into its DAGSTER_HOME.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

WORKSPACE, INSTANCE = "workspace.yaml", "dagster.yaml"


class WorkspaceError(Exception):
    """No workspace where the demo looked (said in one line; the demo exits 2)."""


@dataclass(frozen=True)
class Workspace:
    """A Dagster workspace file and the folder `dagster dev` runs from."""

    path: Path

    @property
    def folder(self) -> Path:
        """Its folder: relative paths in the workspace resolve from here."""
        return self.path.parent

    @property
    def instance(self) -> Path | None:
        """The instance settings beside it (`dagster.yaml`), if there are any."""
        settings = self.folder / INSTANCE
        return settings if settings.is_file() else None


def find_workspace(given: Path | None = None, cwd: Path | None = None) -> Workspace:
    """`given` (a workspace file, or a folder holding `workspace.yaml`), else the current
    directory's `workspace.yaml`; `WorkspaceError` if there is none."""
    path = (cwd or Path.cwd()) / (given.expanduser() if given is not None else WORKSPACE)
    if path.is_dir():
        path = path / WORKSPACE
    if not path.is_file():
        raise WorkspaceError(
            f"no Dagster workspace at {path}: run it from the project root (./dev demo) "
            "or pass --workspace PATH/workspace.yaml"
        )
    return Workspace(path.resolve())
