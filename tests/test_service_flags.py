"""serve, up and worker flags are derived from what they fill: the service's settings
(api/settings.py) and jobs.worker.WorkerConfig; a flag given wins over SNOWFIRE_*, which wins
over the default, and a bad value is refused with the field named."""

from __future__ import annotations

import dataclasses

import pytest

from snowfire import jobs
from snowfire.api.settings import ENV_ONLY, Settings
from snowfire.cli.main import build_parser, main
from snowfire.jobs.worker import WorkerConfig


def _flags(command: str) -> dict:
    """The command's flags but --threads, the process's own (options/threads.py), not a
    setting of the service."""
    sub = build_parser()._subparsers._group_actions[0].choices[command]
    flags = {a.dest: a for a in sub.with_flags()._actions if a.dest != "help"}
    assert flags.pop("threads").option_strings == ["--threads"]
    return flags


def test_every_setting_but_the_secret_ones_is_a_serve_flag_with_its_default_and_env():
    flags = _flags("serve")
    assert ENV_ONLY == ("api_keys",) and "api_keys" in Settings.model_fields
    assert set(flags) == set(Settings.model_fields) - set(ENV_ONLY)
    for name, action in flags.items():
        field = Settings.model_fields[name]
        assert action.option_strings == ["--" + name.replace("_", "-")]
        assert action.help.startswith(field.description.replace("%", "%%"))
        assert f"env SNOWFIRE_{name.upper()})" in action.help
        if field.default is not None:
            assert f"(default: {field.default}; env" in action.help
    assert flags["port"].type is int and flags["embed_max_wait_ms"].type is float
    assert flags["log_level"].choices == ("critical", "error", "warning", "info", "debug", "trace")
    assert set(_flags("up")) == {"home", "host", "port"}
    assert _flags("up")["port"].help == flags["port"].help


def test_a_flag_wins_over_the_environment_which_wins_over_the_default(monkeypatch, tmp_path):
    served = []
    monkeypatch.setattr("snowfire.api.serve", served.append)
    monkeypatch.setenv("SNOWFIRE_HOST", "0.0.0.0")
    monkeypatch.setenv("SNOWFIRE_PORT", "9001")
    assert main(["serve", "--port", "9002", "--home", str(tmp_path), "--ray-slots", "2"]) == 0
    (settings,) = served
    assert (settings.host, settings.port, settings.ray_slots) == ("0.0.0.0", 9002, 2)
    assert settings.store == str(tmp_path / "store")  # HOME/store, as without flags
    assert settings.max_json_values == Settings.model_fields["max_json_values"].default


def test_up_runs_the_service_where_its_settings_say(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(jobs, "run_up", lambda home, **kw: calls.append((home, kw)) or 0)
    monkeypatch.setenv("SNOWFIRE_PORT", "9003")
    assert main(["up", "--home", str(tmp_path)]) == 0
    assert main(["up", "--home", str(tmp_path), "--host", "0.0.0.0", "--port", "0"]) == 0
    default_host = Settings.model_fields["host"].default
    assert calls == [
        (tmp_path, {"host": default_host, "port": 9003}),
        (tmp_path, {"host": "0.0.0.0", "port": 0}),
    ]


def test_bad_service_and_worker_values_are_refused_with_the_field(capsys):
    assert main(["serve", "--port", "70000"]) == 2
    assert (
        "snowfire serve: error: settings: port: Input should be less than or equal to 65535 "
        "(got 70000)" in capsys.readouterr().err
    )
    assert main(["worker", "--kind", "train", "--lease", "0"]) == 2
    assert "snowfire worker: error: WorkerConfig.lease: expected > 0, got 0" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit) as refused:
        main(["serve", "--log-level", "loud"])
    assert refused.value.code == 2
    assert "invalid choice: 'loud'" in capsys.readouterr().err


def test_the_worker_runs_with_its_config(monkeypatch, tmp_path):
    runs = []
    monkeypatch.setattr(jobs, "run_worker", lambda c: runs.append(("run", c)) or 0)
    monkeypatch.setattr(jobs, "check_worker", lambda c: runs.append(("check", c)) or 0)
    assert main(["worker", "--kind", "extract", "--home", str(tmp_path), "--once"]) == 0
    assert main(["worker", "--kind", "train", "--poll", "0.5", "--check"]) == 0
    defaults = {f.name: f.default for f in dataclasses.fields(WorkerConfig)}
    assert runs == [
        ("run", WorkerConfig(kind="extract", home=str(tmp_path), once=True)),
        ("check", WorkerConfig(kind="train", poll=0.5)),
    ]
    assert (
        runs[1][1].lease == defaults["lease"] == jobs.worker.Worker.__init__.__kwdefaults__["lease"]
    )
