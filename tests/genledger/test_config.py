"""Configuration: TOML file, environment overrides, and the state dir outside the data root."""

from __future__ import annotations

from pathlib import Path

import pytest

from genledger.config import Config, ConfigError, load_config


def test_the_environment_overrides_the_config_file(tmp_path: Path) -> None:
    file = tmp_path / "genledger.toml"
    file.write_text('data_root = "/from/file"\nstate_dir = "/s"\n[datasets.x]\nn_prompts = 5\n')
    config = load_config(file, env={"GENLEDGER_DATA_ROOT": "/from/env"})
    assert (config.data_root, config.state_dir) == (Path("/from/env"), Path("/s"))
    assert config.n_prompts == {"x": 5}


def test_a_bad_expected_total_names_the_setting(tmp_path: Path) -> None:
    file = tmp_path / "genledger.toml"
    file.write_text('[datasets.x]\nn_prompts = "many"\n')
    with pytest.raises(ConfigError, match=r'`datasets\."x"\.n_prompts`'):
        load_config(file, env={})


def test_invalid_toml_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    file = tmp_path / "genledger.toml"
    file.write_text("data_root = \n")
    with pytest.raises(ConfigError, match=str(file)):
        load_config(file, env={})


def test_the_default_state_dir_is_under_the_cache_and_not_the_data_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    a = Config(data_root=tmp_path / "data", stats_path=tmp_path / "a.json")
    b = Config(data_root=tmp_path / "data", stats_path=tmp_path / "b.json")
    assert a.resolved_state_dir().is_relative_to(tmp_path / "cache" / "genledger" / "state")
    assert not a.resolved_state_dir().is_relative_to(tmp_path / "data")
    assert a.resolved_state_dir() != b.resolved_state_dir()
    assert Config(state_dir=tmp_path / "s").resolved_state_dir() == tmp_path / "s"


def test_files_section_sets_patterns_ignore_globs_and_the_settle_time(tmp_path) -> None:
    from genledger.config import ConfigError, load_config

    toml = tmp_path / "genledger.toml"
    toml.write_text(
        '[files]\nresponses = "out-*.jsonl.gz"\nignore = ["*.log", "logs/*"]\nsettle_seconds = 5\n'
    )
    config = load_config(toml, env={})
    assert config.patterns.responses == ("out-*.jsonl.gz",)
    assert config.patterns.tokenized[-1] == "tokenized_data*.parquet"
    assert config.patterns.ignore == ("*.log", "logs/*")
    assert config.patterns.settle_seconds == 5.0
    toml.write_text("[files]\nsettle_seconds = -1\n")
    with pytest.raises(ConfigError, match="settle_seconds"):
        load_config(toml, env={})


def test_a_url_data_root_stays_a_url(tmp_path) -> None:
    from genledger.config import load_config

    config = load_config(None, env={"GENLEDGER_DATA_ROOT": "sftp://gpu-box:2222/data/run"})
    assert config.data_root == "sftp://gpu-box:2222/data/run"


def test_the_recording_time_and_the_run_retention_come_from_the_dagster_section(
    tmp_path: Path,
) -> None:
    file = tmp_path / "genledger.toml"
    file.write_text("[dagster]\nrecord_seconds = 0.5\nkeep_runs_days = 7\n")
    settings = load_config(file, env={}).dagster
    assert (settings.record_seconds, settings.keep_runs_days) == (0.5, 7)


@pytest.mark.parametrize("line", ["record_seconds = -1", 'keep_runs_days = "week"'])
def test_a_negative_or_non_numeric_dagster_duration_is_named(tmp_path: Path, line: str) -> None:
    file = tmp_path / "genledger.toml"
    file.write_text(f"[dagster]\n{line}\n")
    with pytest.raises(ConfigError, match=line.split(" ")[0]):
        load_config(file, env={})


def test_prices_fleet_and_budgets_are_read_from_their_tables(tmp_path: Path) -> None:
    file = tmp_path / "genledger.toml"
    file.write_text(
        '[prices."org/model-7b"]\ninput = 0.2\noutput = 1\ncache_read = 0.05\n'
        "[fleet]\ngpu_hour_usd = 2.4\ngpus = 16\n[budget]\nrun_usd = 5000\n"
        '[datasets."A B"]\nbudget_usd = 12.5\nmodel = "kimi"\nprovider = "moonshotai"\n'
    )
    config = load_config(file, env={})
    price = config.prices["org/model-7b"]
    assert (price.input, price.output, price.cache_read, price.cache_write) == (0.2, 1, 0.05, None)
    assert (config.fleet.gpu_hour_usd, config.fleet.gpus) == (2.4, 16)
    assert config.budget.run_usd == 5000
    assert (config.budgets, config.models) == ({"A B": 12.5}, {"A B": "kimi"})
    assert config.providers == {"A B": "moonshotai"}


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        ('[prices."m"]\ninput = -1\n', r'prices\."m"\.input'),
        ('[prices."m"]\ninput = "cheap"\n', r'prices\."m"\.input'),
        ('[prices."m"]\ninptu = 1\n', r"unknown key `prices\.\"m\"\.inptu`; did you mean"),
        ('[prices."m"]\ncache_read = 1\n', r'prices\."m": give `input` or `output`'),
        ("[prices]\nm = 3\n", r'\[prices\."m"\] must be a table'),
        ("[fleet]\ngpus = 0\n", r"fleet\.gpus"),
        ("[fleet]\ngpu_hour_usd = nan\n", r"fleet\.gpu_hour_usd"),
        ("[budget]\nrun_usd = 0\n", r"`budget\.run_usd` = 0: expected a number > 0"),
        ("[datasets.x]\nbudget_usd = -3\n", r'`datasets\."x"\.budget_usd` = -3'),
    ],
)
def test_a_bad_price_fleet_or_budget_is_refused_naming_the_file_and_key(
    tmp_path: Path, toml: str, named: str
) -> None:
    file = tmp_path / "genledger.toml"
    file.write_text(toml)
    with pytest.raises(ConfigError, match=named) as refused:
        load_config(file, env={})
    assert str(file) in str(refused.value) and "\n" not in str(refused.value)


def test_health_tokenized_and_join_keys_are_read_and_count_in_the_signature(
    tmp_path: Path,
) -> None:
    file = tmp_path / "genledger.toml"
    file.write_text(
        "[health]\ntruncated_share = 0.1\nduplicate_share = 0\nwindow = 50\n"
        "[tokenized]\nmax_seq_len = 4096\n"
        '[datasets."a b"]\nprompt_key = "meta.uid"\nresponse_key = "custom_id"\n'
    )
    config = load_config(file, env={})
    assert (config.health.truncated_share, config.health.duplicate_share) == (0.1, 0.0)
    assert (config.health.window, config.max_seq_len) == (50, 4096)
    keys = config.dataset_keys("a b")
    assert (keys.prompt_key, keys.response_key) == ("meta.uid", "custom_id")
    assert config.dataset_keys("other").prompt_key is None
    assert config.counting_settings() != Config().counting_settings()


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[health]\ntruncated_share = 1.5\n", r"health\.truncated_share"),
        ("[health]\nduplicate_share = true\n", r"health\.duplicate_share"),
        ("[health]\nwindow = 5\n", r"health\.window"),
        ("[health]\nwindows = 50\n", r"unknown key `health\.windows`"),
        ("[tokenized]\nmax_seq_len = 0\n", r"tokenized\.max_seq_len"),
        ("[tokenized]\nmax_len = 8\n", r"unknown key `tokenized\.max_len`"),
        ('[datasets.x]\nprompt_key = ""\n', r'datasets\."x"\.prompt_key'),
        ('[datasets.x]\nresponse_key = "a[].b"\n', r'datasets\."x"\.response_key'),
    ],
)
def test_a_bad_health_or_key_setting_names_the_file_and_the_key(
    tmp_path: Path, text: str, named: str
) -> None:
    file = tmp_path / "genledger.toml"
    file.write_text(text)
    with pytest.raises(ConfigError, match=named) as found:
        load_config(file, env={})
    assert str(file) in str(found.value)


def test_the_ray_engine_comes_from_its_table_and_the_environment_overrides_it(
    tmp_path: Path,
) -> None:
    file = tmp_path / "genledger.toml"
    file.write_text('[engine]\nray = "auto"\n')
    assert load_config(file, env={}).engine.ray == "auto"
    env = {"GENLEDGER_RAY_ADDRESS": " 10.0.0.5:6379 "}
    assert load_config(file, env=env).engine.ray == "10.0.0.5:6379"
    assert load_config(None, env={}).engine.ray is None  # the local pool by default
    file.write_text('[engine]\nray = ""\n')
    with pytest.raises(ConfigError, match=r"`engine.ray` = '': expected a non-empty string"):
        load_config(file, env={})
    file.write_text('[engine]\nrays = "auto"\n')
    with pytest.raises(ConfigError, match=r"unknown key `engine.rays`; did you mean `ray`\?"):
        load_config(file, env={})
