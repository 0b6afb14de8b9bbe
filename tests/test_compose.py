"""docker-compose.yml: valid against the Compose Specification schema, one data volume shared
by api and extractor, a GPU reserved for the extractor, and commands the CLI accepts."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCHEMA = Path(__file__).resolve().parents[1].parent / "shared" / "schemas" / "compose-spec.json"


@pytest.fixture(scope="module")
def compose() -> dict:
    import yaml

    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def _command(service: dict) -> list[str]:
    command = service["command"]
    return shlex.split(command) if isinstance(command, str) else list(command)


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


def test_valid_against_the_compose_spec(compose):
    if not SCHEMA.is_file():
        pytest.skip(f"{SCHEMA} not found: ../shared/schemas sits beside the checkout")
    from jsonschema import Draft7Validator

    # the schema's "$schema" lacks draft-07's trailing '#', so name the draft explicitly
    validator = Draft7Validator(json.loads(SCHEMA.read_text()))
    errors = sorted(validator.iter_errors(compose), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors)


def test_api_and_extractor_share_one_named_volume(compose):
    services = compose["services"]
    api, extractor = _volumes(services["api"]), _volumes(services["extractor"])
    assert api["/data"] == extractor["/data"]
    assert api["/data"] in compose["volumes"]  # named, not a bind mount


def test_extractor_reserves_a_gpu(compose):
    devices = compose["services"]["extractor"]["deploy"]["resources"]["reservations"]["devices"]
    assert any(d.get("driver") == "nvidia" and "gpu" in d["capabilities"] for d in devices)
    assert "deploy" not in compose["services"]["api"]  # serving needs no GPU


def test_api_port_and_healthcheck(compose):
    api = compose["services"]["api"]
    assert "8000:8000" in api["ports"]
    assert "http://127.0.0.1:8000/healthz" in " ".join(api["healthcheck"]["test"])


def test_commands_parse_with_the_cli(compose):
    from cli.main import build_parser

    parser = build_parser()
    api_cmd, ext_cmd = (_command(compose["services"][s]) for s in ("api", "extractor"))
    assert api_cmd[0] == ext_cmd[0] == "snowfire"
    serve = parser.parse_args(api_cmd[1:])
    assert serve.command == "serve"
    assert (serve.store, serve.host, serve.port) == ("/data/store", "0.0.0.0", 8000)
    extract = parser.parse_args(ext_cmd[1:])
    assert extract.command == "extract"
    assert extract.store == "/data/store" and extract.data.startswith("/data/")
    assert extract.device == "cuda"


def test_dockerfile_builds_each_torch_wheel_compose_asks_for(compose):
    text = (REPO / "Dockerfile").read_text()
    assert "FROM python:3.11-slim" in text
    assert "ARG TORCH_VARIANT=cpu" in text
    variants = {s["build"]["args"]["TORCH_VARIANT"] for s in compose["services"].values()}
    assert variants == {"cpu", "cuda"}
    for variant in variants:
        assert f"      {variant})" in text, f"the Dockerfile has no case for {variant}"
