"""The UI a user meets: the live `dagster dev` opened in Debian's Chromium through Playwright.

Screenshots go to test-artifacts/; with GENLEDGER_UPDATE_DOCS=1 they are also copied to docs/
(the README shows docs/lineage.png and docs/failed-check.png).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psutil
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from .dagster_api import CheckResult, DagsterApi, Materialized
from .harness import ARTIFACTS, DATASET_TAG, ODD_ERROR_DATASET, PROJECT, ds_key

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.browser,
    pytest.mark.timeout(600),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:gql"),
]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
UI_TIMEOUT_MS = 60_000
DOCS = PROJECT / "docs"
DOC_SHOTS = {"lineage.png", "failed-check.png"}  # the ones the README shows


def _chromium_children() -> list[psutil.Process]:
    me = psutil.Process()
    return [p for p in me.children(recursive=True) if "chrom" in p.name().lower()]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Headless Debian Chromium; missing it skips locally but fails in CI."""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} not found: install Debian's chromium (./dev setup does)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()
    time.sleep(1.0)
    assert not [p for p in _chromium_children() if p.is_running()], "chromium left running"


@pytest.fixture
def page(browser: Browser, dagster_api: DagsterApi, materialized: Materialized) -> Iterator[Page]:
    """A fresh tab on a materialised instance, the welcome dialog already dismissed."""
    # `browser` comes first: without Chromium the test is skipped before dagster dev starts.
    dagster_api.dismiss_welcome()
    context = browser.new_context(viewport={"width": 1440, "height": 1250})
    yield context.new_page()
    context.close()


def save_screenshot(page: Page, name: str) -> Path:
    """Save a screenshot as a test artifact (and into docs/ when asked to)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path))
    if name in DOC_SHOTS and os.environ.get("GENLEDGER_UPDATE_DOCS") == "1":
        shutil.copy(path, DOCS / name)
    return path


def asset_path(key: tuple[str, ...]) -> str:
    """The UI path of an asset."""
    return "/assets/" + "/".join(quote(part, safe="") for part in key)


def _failing_check(api: DagsterApi, key: tuple[str, ...]) -> CheckResult | None:
    """The failed check the UI shows for the latest materialization with the most failures."""
    shown = {
        name: ex["runId"]
        for name, ex in api.latest_check_executions(key).items()
        if ex and ex["status"] == "FAILED"
    }
    results = [
        r
        for run_id in set(shown.values())
        for r in api.check_results(run_id)
        if r.asset == key and shown.get(r.check) == run_id
    ]
    return max(results, key=lambda r: (r.metadata["failure_count"], r.check), default=None)


def test_a_failing_checks_page_shows_it_failed_with_its_count(
    page: Page, dagster_api: DagsterApi
) -> None:
    key = (ds_key(ODD_ERROR_DATASET), "raw_responses")
    result = _failing_check(dagster_api, key)
    if result is None:
        # Overlapping runs can leave "not evaluated" for the latest materialization (the
        # e2e module asserts that separately); a run of this dataset alone settles it.
        dagster_api.wait_until_idle()
        run_id = dagster_api.launch([key, ("stats_json",)], {DATASET_TAG: key[0]})
        assert dagster_api.wait_for_run(run_id) == "SUCCESS"
        result = _failing_check(dagster_api, key)
    assert result is not None, f"no failed check on {key}"
    check = result.check
    page.goto(f"{dagster_api.dev.url}{asset_path(key)}?view=checks&checkDetail={check}")
    heading = page.get_by_text(check, exact=True).filter(visible=True)
    expect(heading.first).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(page.get_by_text("Failed", exact=True).filter(visible=True).first).to_be_visible(
        timeout=UI_TIMEOUT_MS
    )
    metadata = page.locator("table", has_text="failure_count")
    expect(metadata).to_contain_text(str(result.metadata["failure_count"]))
    expect(metadata).to_contain_text(ODD_ERROR_DATASET)
    page.wait_for_timeout(2000)  # plots render after the data
    save_screenshot(page, "failed-check.png")


def test_the_global_lineage_lists_every_dataset_group(page: Page, dagster_api: DagsterApi) -> None:
    groups = set(dagster_api.asset_groups().values())
    page.goto(f"{dagster_api.dev.url}/asset-groups")
    for group in sorted(groups):
        label = page.get_by_text(group, exact=True).filter(visible=True)
        expect(label.first).to_be_visible(timeout=UI_TIMEOUT_MS)
    save_screenshot(page, "global-lineage.png")


def test_the_lineage_of_stats_json_shows_every_file_asset_upstream(
    page: Page, dagster_api: DagsterApi
) -> None:
    keys = [k for k in dagster_api.asset_groups() if k != ("stats_json",)]
    dagster_api.wait_until_idle()  # node colours then show settled check results
    page.goto(f"{dagster_api.dev.url}/assets/stats_json?view=lineage&lineageScope=upstream")
    expect(page.get_by_text("stats_json", exact=True).last).to_be_visible(timeout=UI_TIMEOUT_MS)
    for leaf in {k[-1] for k in keys}:
        want = sum(1 for k in keys if k[-1] == leaf)
        nodes = page.get_by_text(leaf, exact=True)
        expect(nodes).to_have_count(want, timeout=UI_TIMEOUT_MS)
    page.wait_for_timeout(3000)  # let the status colours of the nodes load
    save_screenshot(page, "lineage.png")
