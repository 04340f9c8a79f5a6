"""What is news: new, worse, unchanged, resolved, reminders, and the severity floor."""

from __future__ import annotations

from dataclasses import replace

from genledger.config import NotifySettings
from genledger.notify.decide import decide_run
from genledger.notify.model import CheckOutcome, Kind

SETTINGS = NotifySettings()


def outcome(
    passed: bool = False, count: int = 3, severity: str = "error", check: str = "c"
) -> CheckOutcome:
    return CheckOutcome(
        dataset="ds one",
        asset_key="ds_one/raw_responses",
        check=check,
        passed=passed,
        severity=severity,
        failure_count=0 if passed else count,
        rows_checked=40,
        examples=("raw_responses.jsonl:3 no completion-token field",),
        run_id="r1",
    )


def test_a_check_that_starts_failing_is_news_once() -> None:
    alerts, open_ = decide_run([outcome()], {}, SETTINGS, now=0)
    assert [a.kind for a in alerts] == [Kind.FAILING]
    assert alerts[0].examples == outcome().examples
    again, still = decide_run([outcome()], open_, SETTINGS, now=60)
    assert again == []
    assert still.keys() == open_.keys()


def test_a_failure_growing_past_the_factor_is_worse_but_slower_growth_is_not() -> None:
    _, open_ = decide_run([outcome(count=10)], {}, SETTINGS, now=0)
    below = int(10 * SETTINGS.worse_factor) - 1
    assert decide_run([outcome(count=below)], open_, SETTINGS, now=1)[0] == []
    alerts, _ = decide_run([outcome(count=below + 1)], open_, SETTINGS, now=1)
    assert [(a.kind, a.previous_count) for a in alerts] == [(Kind.WORSE, 10)]


def test_a_warning_that_becomes_an_error_is_worse() -> None:
    _, open_ = decide_run([outcome(severity="warn")], {}, SETTINGS, now=0)
    alerts, _ = decide_run([outcome(severity="error")], open_, SETTINGS, now=1)
    assert [(a.kind, a.severity) for a in alerts] == [(Kind.WORSE, "error")]


def test_a_failing_check_that_passes_again_is_resolved_and_closed() -> None:
    _, open_ = decide_run([outcome()], {}, SETTINGS, now=0)
    alerts, after = decide_run([outcome(passed=True)], open_, SETTINGS, now=1)
    assert [(a.kind, a.previous_count) for a in alerts] == [(Kind.RESOLVED, 3)]
    assert after == {}
    assert decide_run([outcome(passed=True)], after, SETTINGS, now=2)[0] == []


def test_reminders_come_only_when_configured_and_due() -> None:
    _, open_ = decide_run([outcome()], {}, SETTINGS, now=0)
    assert decide_run([outcome()], open_, SETTINGS, now=10**6)[0] == []
    hourly = replace(SETTINGS, reminder_minutes=60)
    assert decide_run([outcome()], open_, hourly, now=3599)[0] == []
    alerts, _ = decide_run([outcome()], open_, hourly, now=3600)
    assert [a.kind for a in alerts] == [Kind.REMINDER]


def test_warnings_are_not_news_when_the_floor_is_error() -> None:
    errors_only = replace(SETTINGS, min_severity="error")
    assert decide_run([outcome(severity="warn")], {}, errors_only, now=0)[0] == []
    alerts, _ = decide_run([outcome(severity="error")], {}, errors_only, now=0)
    assert [a.kind for a in alerts] == [Kind.FAILING]


def test_only_the_last_evaluation_of_a_check_in_a_run_counts() -> None:
    alerts, open_ = decide_run([outcome(), outcome(passed=True)], {}, SETTINGS, now=0)
    assert alerts == [] and open_ == {}


def unrecognised(*paths: str) -> CheckOutcome:
    base = outcome(count=len(paths), severity="warn", check="files_recognised")
    return replace(base, items=paths)


def test_each_new_unrecognised_file_is_news_once() -> None:
    alerts, open_ = decide_run([unrecognised("a.txt")], {}, SETTINGS, now=0)
    assert [a.kind for a in alerts] == [Kind.FAILING]
    alerts, open_ = decide_run([unrecognised("a.txt", "b.txt")], open_, SETTINGS, now=1)
    assert [(a.kind, a.examples) for a in alerts] == [(Kind.WORSE, ("b.txt (new)",))]
    alerts, open_ = decide_run([unrecognised("a.txt", "b.txt", "c.txt")], open_, SETTINGS, now=2)
    assert [(a.kind, a.examples) for a in alerts] == [(Kind.WORSE, ("c.txt (new)",))]
    assert decide_run([unrecognised("a.txt", "b.txt", "c.txt")], open_, SETTINGS, now=3)[0] == []
