"""A small GraphQL client for the live instance: launch runs, read runs, checks, instigators."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import requests
from dagster_graphql import DagsterGraphQLClient

from .harness import ASSET_JOB, RUN_TIMEOUT_S, STARTUP_TIMEOUT_S, DagsterDev

WORKSPACE_QUERY = """
{ workspaceOrError { __typename
    ... on Workspace { locationEntries { name loadStatus
        locationOrLoadError { __typename
          ... on RepositoryLocation { name repositories { name } }
          ... on PythonError { message } } } }
    ... on PythonError { message } } }
"""

ASSET_NODES_QUERY = """
{ assetNodes { assetKey { path } groupName } }
"""

RUNS_QUERY = """
query Runs($filter: RunsFilter) {
  runsOrError(filter: $filter, limit: 200) { __typename
    ... on Runs { results { runId jobName status creationTime startTime endTime
        tags { key value } assetSelection { path } } }
    ... on PythonError { message } } }
"""

RUN_EVENTS_QUERY = """
query Events($runId: ID!, $cursor: String) {
  logsForRun(runId: $runId, afterCursor: $cursor, limit: 1000) { __typename
    ... on EventConnection { cursor hasMore events { __typename
        ... on AssetCheckEvaluationEvent { evaluation {
            checkName success severity assetKey { path }
            metadataEntries { __typename label
              ... on IntMetadataEntry { intValue }
              ... on TextMetadataEntry { text }
              ... on MarkdownMetadataEntry { mdStr }
              ... on JsonMetadataEntry { jsonString } } } }
        ... on MaterializationEvent { assetKey { path } } } }
    ... on PythonError { message } } }
"""

CHECK_STATES_QUERY = """
query Checks($keys: [AssetKeyInput!]) {
  assetNodes(assetKeys: $keys) { assetKey { path }
    assetChecksOrError { __typename
      ... on AssetChecks { checks { name
          executionForLatestMaterialization { runId status } } } } } }
"""

LATEST_MATERIALIZATIONS_QUERY = """
query Latest($keys: [AssetKeyInput!]) {
  assetNodes(assetKeys: $keys) { assetKey { path }
    assetMaterializations(limit: 1) { runId timestamp } } }
"""

INSTIGATORS_QUERY = """
{ repositoriesOrError { __typename
    ... on RepositoryConnection { nodes { name location { name }
        schedules { name cronSchedule scheduleState { status } }
        sensors { name minIntervalSeconds sensorState { status
            ticks(limit: 5) { status timestamp skipReason } } } } }
    ... on PythonError { message } } }
"""


@dataclass(frozen=True)
class CheckResult:
    """One asset check evaluation read back from a run."""

    asset: tuple[str, ...]
    check: str
    passed: bool
    severity: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class Materialized:
    """The run that materialised everything, and what it recorded."""

    run_id: str
    status: str
    keys: list[tuple[str, ...]]
    checks: list[CheckResult]
    started_at: float


def _metadata_value(entry: dict[str, Any]) -> Any:
    for key in ("intValue", "text", "mdStr"):
        if key in entry:
            return entry[key]
    if "jsonString" in entry:
        return json.loads(entry["jsonString"])
    return None


class DagsterApi:
    """The few GraphQL calls the suite needs, against one webserver."""

    def __init__(self, dev: DagsterDev) -> None:
        self.dev = dev
        self.endpoint = f"{dev.url}/graphql"
        self.client = DagsterGraphQLClient("127.0.0.1", port_number=dev.port, timeout=60)

    def query(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run one GraphQL query; raise on transport or GraphQL errors."""
        response = requests.post(
            self.endpoint, json={"query": query, "variables": variables or {}}, timeout=60
        )
        response.raise_for_status()
        payload = response.json()
        if payload.get("errors"):
            raise AssertionError(f"GraphQL errors: {payload['errors']}")
        return dict(payload["data"])

    def wait_until_loaded(self, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Block until the webserver answers and the code location has loaded (or failed)."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            if self.dev.proc.poll() is not None:
                raise AssertionError(f"dagster dev exited early:\n{self.dev.log_text()[-3000:]}")
            try:
                requests.get(f"{self.dev.url}/server_info", timeout=5).raise_for_status()
                entries = self.query(WORKSPACE_QUERY)["workspaceOrError"]["locationEntries"]
                last = json.dumps(entries)[:500]
                loaded = [e for e in entries if e["loadStatus"] == "LOADED"]
                if entries and len(loaded) == len(entries):
                    errors = [
                        e
                        for e in entries
                        if e["locationOrLoadError"]["__typename"] != "RepositoryLocation"
                    ]
                    if errors:
                        raise AssertionError(f"code location failed to load: {json.dumps(errors)}")
                    return
            except (requests.RequestException, KeyError, TypeError) as exc:
                last = repr(exc)
            time.sleep(1.0)
        raise AssertionError(f"dagster dev not ready after {timeout:.0f}s ({last})")

    def asset_groups(self) -> dict[tuple[str, ...], str]:
        """Every asset key and its group name."""
        nodes = self.query(ASSET_NODES_QUERY)["assetNodes"]
        return {tuple(n["assetKey"]["path"]): n["groupName"] for n in nodes}

    def launch(self, keys: list[tuple[str, ...]], tags: dict[str, str] | None = None) -> str:
        """Launch a run of the implicit asset job materialising `keys`; return its run id."""
        selection = [list(key) for key in keys]
        return self.client.submit_job_execution(ASSET_JOB, asset_selection=selection, tags=tags)

    def wait_for_run(self, run_id: str, timeout: float = RUN_TIMEOUT_S) -> str:
        """Wait for a run to reach a final status and return it."""
        deadline = time.monotonic() + timeout
        status = "unknown"
        while time.monotonic() < deadline:
            status = self.client.get_run_status(run_id).value
            if status in ("SUCCESS", "FAILURE", "CANCELED"):
                return status
            time.sleep(2.0)
        raise AssertionError(f"run {run_id} still {status} after {timeout:.0f}s")

    def runs(self, tags: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """Runs (newest first), optionally only those carrying all `tags`."""
        run_filter = {"tags": [{"key": k, "value": v} for k, v in (tags or {}).items()]}
        result = self.query(RUNS_QUERY, {"filter": run_filter})["runsOrError"]
        if result["__typename"] != "Runs":
            raise AssertionError(f"runsOrError: {result}")
        for run in result["results"]:
            run["tagmap"] = {t["key"]: t["value"] for t in run["tags"]}
            run["keys"] = {tuple(k["path"]) for k in run["assetSelection"] or []}
        return list(result["results"])

    def _events(self, run_id: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        cursor = None
        while True:
            conn = self.query(RUN_EVENTS_QUERY, {"runId": run_id, "cursor": cursor})["logsForRun"]
            if conn["__typename"] != "EventConnection":
                raise AssertionError(f"logsForRun: {conn}")
            events.extend(conn["events"])
            cursor = conn["cursor"]
            if not conn["hasMore"]:
                return events

    def check_results(self, run_id: str) -> list[CheckResult]:
        """The asset check evaluations a run recorded."""
        results = []
        for event in self._events(run_id):
            if event["__typename"] != "AssetCheckEvaluationEvent":
                continue
            ev = event["evaluation"]
            results.append(
                CheckResult(
                    asset=tuple(ev["assetKey"]["path"]),
                    check=ev["checkName"],
                    passed=ev["success"],
                    severity=ev["severity"],
                    metadata={m["label"]: _metadata_value(m) for m in ev["metadataEntries"]},
                )
            )
        return results

    def materialized(self, run_id: str) -> set[tuple[str, ...]]:
        """The asset keys a run materialised."""
        return {
            tuple(e["assetKey"]["path"])
            for e in self._events(run_id)
            if e["__typename"] == "MaterializationEvent"
        }

    def latest_check_executions(self, key: tuple[str, ...]) -> dict[str, dict[str, Any] | None]:
        """Each check of an asset -> its execution for the latest materialization (runId, status).

        None is what the UI shows as "Not evaluated": no result for the latest materialization.
        """
        nodes = self.query(CHECK_STATES_QUERY, {"keys": [{"path": list(key)}]})["assetNodes"]
        checks = nodes[0]["assetChecksOrError"]["checks"]
        return {c["name"]: c["executionForLatestMaterialization"] for c in checks}

    def latest_materialization_runs(
        self, keys: list[tuple[str, ...]]
    ) -> dict[tuple[str, ...], str]:
        """Each asset's latest materialization's run id (absent: never materialized)."""
        variables = {"keys": [{"path": list(key)} for key in keys]}
        nodes = self.query(LATEST_MATERIALIZATIONS_QUERY, variables)["assetNodes"]
        return {
            tuple(n["assetKey"]["path"]): n["assetMaterializations"][0]["runId"]
            for n in nodes
            if n["assetMaterializations"]
        }

    def latest_check_states(self, key: tuple[str, ...]) -> dict[str, str | None]:
        """Each check of an asset -> the status the UI shows for it (None: not evaluated)."""
        return {
            name: (ex or {}).get("status") for name, ex in self.latest_check_executions(key).items()
        }

    def wait_until_idle(self, timeout: float = RUN_TIMEOUT_S) -> None:
        """Wait until no run is queued, starting or running."""
        busy = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING"}

        def idle() -> bool:
            return not [r for r in self.runs() if r["status"] in busy]

        deadline = time.monotonic() + timeout
        while not idle():
            if time.monotonic() > deadline:
                raise AssertionError(f"runs still in progress after {timeout:.0f}s")
            time.sleep(2.0)

    def dismiss_welcome(self) -> None:
        """Mark the UI's first-visit "join the community" dialog as seen (it covers the page)."""
        self.query("mutation { setNuxSeen }")

    def instigators(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Schedules and sensors of the workspace by name."""
        repos = self.query(INSTIGATORS_QUERY)["repositoriesOrError"]
        if repos["__typename"] != "RepositoryConnection":
            raise AssertionError(f"repositoriesOrError: {repos}")
        schedules = {s["name"]: s for r in repos["nodes"] for s in r["schedules"]}
        sensors = {s["name"]: s for r in repos["nodes"] for s in r["sensors"]}
        return schedules, sensors
