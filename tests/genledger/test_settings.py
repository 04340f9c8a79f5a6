"""The schema of genledger.toml: unknown keys and tables, wrong types and values out of range
stop with one line naming the file, the key and what was expected; good files load."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.config import ConfigError, NotifySettings, load_config
from genledger.settings import SCHEMA, Table, Value


def load(tmp_path: Path, text: str | bytes) -> Any:
    file = tmp_path / "genledger.toml"
    file.write_bytes(text.encode() if isinstance(text, str) else text)
    return load_config(file, env={})


TYPOS = [
    ("[tokenised]\nmax_seq_len = 4096\n", "unknown table [tokenised]"),
    ('stats_pth = "/srv/stats.json"\n', "unknown key `stats_pth`; did you mean `stats_path`?"),
    ('[files]\nrespones = "r*.jsonl"\n', "unknown key `files.respones`; did you mean `responses`?"),
    (
        "[datasets.X]\nn_prompt = 5\n",
        'unknown key `datasets."X".n_prompt`; did you mean `n_prompts`?',
    ),
    ("[notify]\nretries = -5\n", "`notify.retries` = -5: expected a whole number >= 0"),
    ("[files]\nsettle_seconds = nan\n", "`files.settle_seconds` = nan: expected a number >= 0"),
    ("[files]\nsettle_seconds = inf\n", "`files.settle_seconds` = inf: expected a number >= 0"),
    ("[notify]\nstall_minutes = 0\n", "`notify.stall_minutes` = 0: expected a number > 0"),
    ('[notify]\nmin_severity = "info"\n', "expected 'warn' or 'error'"),
    ("[dagster]\nsensor_interval_s = 2.5\n", "`dagster.sensor_interval_s` = 2.5"),
    ('[dagster]\nowners = "me"\n', "`dagster.owners` = 'me': expected a list of strings"),
    ('[dagster]\nexecutor = "threads"\n', "expected 'in_process' or 'multiprocess'"),
    ("[files]\nmax_line_bytes = 0\n", "`files.max_line_bytes` = 0: expected a whole number >= 1"),
    ("[health]\nwindows = 50\n", "unknown key `health.windows`; did you mean `window`?"),
    ("[health]\ntruncated_share = 1.5\n", "expected a number >= 0 and <= 1"),
    ("[tokenized]\nmax_len = 8\n", "unknown key `tokenized.max_len`"),
    ("[files]\nignore = [1]\n", "`files.ignore` = [1]: expected a string or a list of strings"),
    ("data_root = 5\n", "`data_root` = 5: expected a string"),
    ("files = 3\n", "[files] must be a table, got 3"),
    ('[datasets]\nx = "y"\n', '[datasets."x"] must be a table'),
    (
        '[[formats]]\nname = "m"\ncompletion_tokens = "a"\n[[formats]]\nname = "m"\n'
        'completion_tokens = "b"\n',
        "`formats[1].name` = 'm' is declared twice",
    ),
    ('[[formats]]\nname = "mine"\n', "formats[0] (mine): `completion_tokens` (a path) is required"),
    (
        '[[formats]]\nname = "m"\ncompletion_tokens = "a"\nprompt = "b"\n',
        "unknown key `formats[0].prompt`",
    ),
    ('[[formats]]\nname = "m"\ncompletion_tokens = "a"\nfloat_counts = "yes"\n', "true or false"),
]


@pytest.mark.parametrize(("text", "message"), TYPOS, ids=[t[1][:40] for t in TYPOS])
def test_a_typo_or_a_value_out_of_range_is_one_line_naming_the_file_and_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    line = str(raised.value)
    assert message in line and str(tmp_path / "genledger.toml") in line
    assert "\n" not in line


def test_a_user_format_named_like_a_built_in_one_is_refused_before_anything_is_read(
    tmp_path: Path,
) -> None:
    root = tmp_path / "data" / "ds"
    root.mkdir(parents=True)
    (root / "raw_responses.jsonl").write_text('{"usage": {"n": 3}}\n')
    (tmp_path / "genledger.toml").write_text(
        '[[formats]]\nname = "openai_chat"\ncompletion_tokens = "usage.n"\n'
    )
    out = ["-o", str(tmp_path / "s.json"), "--state", str(tmp_path / "st")]
    done = subprocess.run(
        [sys.executable, "-m", "genledger.cli", "collect", str(tmp_path / "data"), *out],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "formats[0]: `name` = 'openai_chat' is a built-in format's name" in done.stderr
    assert not (tmp_path / "s.json").exists()


def test_retries_below_zero_would_send_no_alert_so_it_is_refused(tmp_path: Path) -> None:
    assert NotifySettings(retries=-5).retries == -5  # the dataclass itself would take it
    with pytest.raises(ConfigError, match=r"notify\.retries"):
        load(tmp_path, "[notify]\nretries = -5\n")


def test_the_documented_example_file_loads(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        """
data_root = "/data/run-2026-12"
stats_path = "/data/stats/stats.json"
state_dir = "/var/lib/genledger"
[files]
responses = ["raw_responses*.jsonl", "raw_responses*.jsonl.gz"]
tokenized = ["tokenized_data*.jsonl"]
prompts = "prompts*.jsonl"
ignore = ["*.log", "logs/*"]
settle_seconds = 300
max_line_bytes = 1048576
[datasets."B2_opencodeinstruct"]
n_prompts = 8808
[datasets.other]
[dagster]
schedule_cron = "*/5 * * * *"
sensor_interval_s = 30
owners = ["team:data-gen"]
executor = "multiprocess"
[notify]
stall_minutes = 30
worse_factor = 2
reminder_minutes = 0
min_severity = "warn"
retries = 3
backoff_s = 0.5
lookback_minutes = 60
email_to = ["ml-ops@example.com"]
email_from = "genledger@example.com"
log_path = "/var/log/gl-alerts.jsonl"
[[formats]]
name = "my_pipeline"
completion_tokens = "result.gen.n_tokens"
detect = ["has(result.gen)"]
float_counts = true
""",
    )
    assert config.patterns.prompts == ("prompts*.jsonl",)
    assert config.patterns.max_line_bytes == 1 << 20
    assert config.patterns.settle_seconds == 300.0
    assert config.n_prompts == {"B2_opencodeinstruct": 8808}
    assert config.notify.email_to == ("ml-ops@example.com",)
    assert config.notify.worse_factor == 2.0
    assert config.dagster.owners == ("team:data-gen",)
    assert config.formats[0].name == "my_pipeline"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xef\xbb\xbfdata_root = '/x'\n", "byte-order mark (BOM)"),
        ("data_root = '/x'\n".encode("utf-16"), "is not UTF-8 (it looks like UTF-16)"),
        (b"data_root = '/caf\xe9'\n", "is not UTF-8 (byte 0xe9 at offset 17)"),
    ],
    ids=["bom", "utf-16", "latin-1"],
)
def test_a_file_in_another_encoding_is_named_with_the_fix(
    tmp_path: Path, data: bytes, message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load(tmp_path, data)


def _leaves(table: Table, at: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Value]]:
    """Every key of the schema (a user-named table once, as `some_name`) and its value's kind."""
    out: list[tuple[tuple[str, ...], Value]] = []
    for key, schema in table.keys.items():
        if isinstance(schema, Value):
            out.append(((*at, key), schema))
        elif isinstance(schema, Table):
            out += _leaves(schema, (*at, key))
        elif not schema.array:
            out += _leaves(schema.each, (*at, key, "some_name"))
    return out


LEAVES = _leaves(SCHEMA)
ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.lists(st.one_of(st.integers(), st.text(max_size=4)), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


def _nest(keys: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    node = out
    *tables, last = keys
    for name in tables:
        node = node.setdefault(name, {})
    if tables[:1] == ["prices"] and last != "input":
        node["input"] = 1.0  # a price needs an input or an output: the key alone is judged
    node[last] = value
    return out


def _spelled(keys: tuple[str, ...]) -> str:
    """The key as messages spell it: a user-named table quoted (`datasets."X".n_prompts`)."""
    return ".".join(f'"{k}"' if k == "some_name" else k for k in keys)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(LEAVES), ANY_VALUE)
def test_any_value_of_any_key_loads_or_is_refused_naming_that_key(
    leaf: tuple[tuple[str, ...], Value], value: Any
) -> None:
    from genledger.config import _from_dict

    keys, schema = leaf
    raw = _nest(keys, value)
    if isinstance(value, dict):
        with pytest.raises(ConfigError):  # a table where a value belongs: refused, and named
            _from_dict(raw, Path("genledger.toml"))
        return
    try:
        _from_dict(raw, Path("genledger.toml"))
    except ConfigError as exc:
        assert f"`{_spelled(keys)}` = " in str(exc) and not schema.accepts(value)
        return
    assert schema.accepts(value)
    if isinstance(value, float):
        assert math.isfinite(value)


def test_every_key_of_a_settings_table_is_in_the_schema_with_its_default_accepted() -> None:
    # One source of truth: the schema's keys are the dataclasses' fields, and every default
    # a dataclass gives is a value the file could set (None: the key is optional).
    import dataclasses

    from genledger.settings import (
        BudgetSettings,
        DagsterSettings,
        FilePatterns,
        FleetSettings,
        NotifySettings,
    )

    for section, kind in (
        ("files", FilePatterns),
        ("dagster", DagsterSettings),
        ("notify", NotifySettings),
        ("fleet", FleetSettings),
        ("budget", BudgetSettings),
    ):
        table = SCHEMA.keys[section]
        assert isinstance(table, Table)
        assert set(table.keys) == {f.name for f in dataclasses.fields(kind)}
        for f in dataclasses.fields(kind):
            value = table.keys[f.name]
            assert isinstance(value, Value)
            default = getattr(kind(), f.name)
            shown = list(default) if isinstance(default, tuple) else default
            assert default is None or value.accepts(shown), (section, f.name)


def test_the_cli_exits_2_with_one_line_and_no_traceback_on_a_typo(tmp_path: Path) -> None:
    (tmp_path / "genledger.toml").write_text("[notify]\nretries = -5\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "genledger.cli",
            "collect",
            str(tmp_path),
            "-o",
            str(tmp_path / "s.json"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "notify.retries" in done.stderr
    assert not (tmp_path / "s.json").exists()
