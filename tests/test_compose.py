"""docker-compose.yml (and its CPU override): valid against the Compose Specification schema,
one data volume at /data (SNOWFIRE_HOME) shared by the api and the three workers, a GPU
reserved for extractor and finetuner only, healthchecks, and commands the CLI accepts."""

from __future__ import annotations

import json

import pytest

from tests.helpers import REPO
from tests.helpers.compose import SCHEMA, SERVICES, command, load_compose, merge

GPU = {"extractor", "finetuner", "comparer"}


@pytest.fixture(scope="module")
def compose() -> dict:
    return load_compose()


@pytest.fixture(scope="module")
def cpu_compose(compose) -> dict:
    return merge(compose, load_compose("docker-compose.cpu.yml"))


def _volumes(service: dict) -> dict[str, str]:
    """target -> named volume, for the short (`name:/target`) and long syntax."""
    out = {}
    for v in service.get("volumes", []):
        if isinstance(v, str):
            source, target = v.split(":")[:2]
        else:
            source, target = v.get("source"), v["target"]
        out[target] = source
    return out


@pytest.mark.parametrize("which", ["compose", "cpu_compose"])
def test_valid_against_the_compose_spec(which, request):
    if not SCHEMA.is_file():
        pytest.skip(f"{SCHEMA} not found: ../shared/schemas sits beside the checkout")
    from jsonschema import Draft7Validator

    # the schema's "$schema" lacks draft-07's trailing '#', so name the draft explicitly
    validator = Draft7Validator(json.loads(SCHEMA.read_text()))
    data = request.getfixturevalue(which)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors)


def test_every_service_shares_one_named_volume_at_data(compose):
    services = compose["services"]
    assert set(services) == set(SERVICES)
    volumes = {_volumes(services[name])["/data"] for name in SERVICES}
    assert len(volumes) == 1 and volumes <= set(compose["volumes"])  # named, not a bind mount
    for name in SERVICES:
        assert services[name]["environment"]["SNOWFIRE_HOME"] == "/data"


def test_gpu_reserved_for_extractor_and_finetuner_only(compose, cpu_compose):
    for name, service in compose["services"].items():
        if name in GPU:
            devices = service["deploy"]["resources"]["reservations"]["devices"]
            assert any(d.get("driver") == "nvidia" and "gpu" in d["capabilities"] for d in devices)
            assert service["build"]["args"]["TORCH_VARIANT"] == "cuda"
        else:
            assert "deploy" not in service, f"{name} needs no GPU"
    for name in GPU:  # the CPU override: no reservation, the CPU wheel, same command
        service = cpu_compose["services"][name]
        assert "deploy" not in service
        assert service["build"]["args"]["TORCH_VARIANT"] == "cpu"
        assert service["image"] == "snowfire:cpu"
        assert command(service) == command(compose["services"][name])


def test_api_port_and_every_healthcheck(compose):
    services = compose["services"]
    assert "8000:8000" in services["api"]["ports"]
    assert "http://127.0.0.1:8000/healthz" in " ".join(services["api"]["healthcheck"]["test"])
    from cli.main import build_parser

    for name, kind in SERVICES.items():
        if kind is None:
            continue
        test = services[name]["healthcheck"]["test"]
        assert test[0] == "CMD" and test[1] == "snowfire"
        args = build_parser().parse_args(test[2:])
        assert (args.command, args.kind, args.home, args.check) == ("worker", kind, "/data", True)


def test_commands_parse_with_the_cli(compose):
    from cli.flags import config_from_args
    from cli.main import build_parser
    from jobs.worker import WorkerConfig

    parser = build_parser()
    cmds = {name: command(compose["services"][name]) for name in SERVICES}
    assert {c[0] for c in cmds.values()} == {"snowfire"}
    serve = parser.parse_args(cmds["api"][1:])
    assert (serve.command, serve.home, serve.host) == ("serve", "/data", "0.0.0.0")
    assert serve.port == 8000
    for name, kind in SERVICES.items():
        if kind is not None:
            args = parser.parse_args(cmds[name][1:])
            assert args.command == "worker"
            config = config_from_args(WorkerConfig, args)
            assert (config.kind, config.home, config.once) == (kind, "/data", False)


def test_dockerfile_builds_each_torch_wheel_compose_asks_for(compose):
    text = (REPO / "Dockerfile").read_text()
    assert "FROM python:3.11-slim" in text
    assert "ARG TORCH_VARIANT=cpu" in text
    assert "SNOWFIRE_HOME=/data" in text
    variants = {s["build"]["args"]["TORCH_VARIANT"] for s in compose["services"].values()}
    assert variants == {"cpu", "cuda"}
    for variant in variants:
        assert f"      {variant})" in text, f"the Dockerfile has no case for {variant}"
