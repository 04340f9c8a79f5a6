"""The demo's Dagster workspace comes from where the user points, never from the package."""

from __future__ import annotations

from pathlib import Path

import pytest

from genledger.demo.workspace import WorkspaceError, find_workspace

PROJECT = Path(__file__).resolve().parents[3]


def checkout(folder: Path, instance: bool = True) -> Path:
    """A folder holding a workspace.yaml (and a dagster.yaml when `instance`)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workspace.yaml").write_text("load_from: []\n")
    if instance:
        (folder / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return folder


def test_the_current_directorys_workspace_and_its_instance_settings_are_found(
    tmp_path: Path,
) -> None:
    folder = checkout(tmp_path / "run")
    found = find_workspace(cwd=folder)
    assert found.path == folder / "workspace.yaml" and found.folder == folder
    assert found.instance == folder / "dagster.yaml"


def test_a_given_file_folder_or_relative_path_wins_over_the_current_directory(
    tmp_path: Path,
) -> None:
    here, there = checkout(tmp_path / "here"), checkout(tmp_path / "there")
    for given in (
        there / "workspace.yaml",
        there,
        Path("../there"),
        Path("../there/workspace.yaml"),
    ):
        assert find_workspace(given, cwd=here).path == there / "workspace.yaml", given


def test_a_workspace_without_instance_settings_has_none_not_the_packages(tmp_path: Path) -> None:
    # the checkout this package was installed from has a dagster.yaml: it must not be used
    assert (PROJECT / "dagster.yaml").is_file()
    assert find_workspace(cwd=checkout(tmp_path / "bare", instance=False)).instance is None


@pytest.mark.parametrize("given", [None, Path("missing.yaml"), Path("empty-folder")])
def test_no_workspace_is_one_line_naming_where_it_looked_and_the_option(
    tmp_path: Path, given: Path | None
) -> None:
    (tmp_path / "empty-folder").mkdir()
    with pytest.raises(WorkspaceError) as raised:
        find_workspace(given, cwd=tmp_path)
    message = str(raised.value)
    assert "\n" not in message and str(tmp_path) in message and "--workspace" in message


def test_the_project_root_serves_the_checkouts_code_location() -> None:
    found = find_workspace(cwd=PROJECT)
    assert found.path == PROJECT / "workspace.yaml" and found.instance == PROJECT / "dagster.yaml"
