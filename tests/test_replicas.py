"""docker-compose.replicas.yml: valid Compose; N `snowfire serve` replicas, run as local
processes with the file's command and environment over one S3 store (moto), each answer the
same features, page and metrics; nginx's upstream (docker/nginx.conf, mounted into the lb)
names the api service on its port."""

from __future__ import annotations

import os
import re
import subprocess

import httpx
import numpy as np
import pytest

from snowfire.cache import RemoteStore, Store, open_store
from snowfire.jobs import free_port, stop_processes, wait_healthy
from tests.helpers import REPO
from tests.helpers.compose import LOCAL_ENV, SCHEMA, command, load_compose, local_command
from tests.helpers.store import extract_texts

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def replicas_file() -> dict:
    return load_compose("docker-compose.replicas.yml", {"SNOWFIRE_STORE": "s3://bucket/prefix"})


def test_valid_against_the_compose_spec(replicas_file):
    import jsonschema

    if not SCHEMA.exists():
        pytest.skip(f"{SCHEMA} not found")
    import json

    jsonschema.validate(replicas_file, json.loads(SCHEMA.read_text()))
    api = replicas_file["services"]["api"]
    assert api["deploy"]["replicas"] >= 2 and "ports" not in api  # the lb publishes the port
    assert "--home" not in command(api)  # read-only replicas: no job table, nothing written


def test_nginx_balances_over_the_api_service(replicas_file):
    mount = "./docker/nginx.conf:/etc/nginx/conf.d/default.conf:ro"
    assert mount in replicas_file["services"]["lb"]["volumes"]
    conf = (REPO / "docker" / "nginx.conf").read_text()
    assert re.search(r"upstream (\w+) \{\s*server api:8000;", conf)
    assert "proxy_pass http://snowfire_api;" in conf
    assert replicas_file["services"]["lb"]["ports"] == ["8000:8000"]


def _env(api: dict, store: str) -> dict[str, str]:
    env = {}
    for item in api["environment"]:
        name, sep, value = item.partition("=")
        if not sep:  # passed through from the shell when set
            if name in os.environ:
                env[name] = os.environ[name]
        elif name == "SNOWFIRE_STORE":
            env[name] = store
        else:
            env[name] = value
    return env


def test_replicas_over_one_bucket_answer_alike(replicas_file, tiny_bert_dir, local_s3, tmp_path):
    url = local_s3()
    info = extract_texts(tiny_bert_dir, Store(tmp_path / "local"))
    extract_texts(tiny_bert_dir, open_store(url))
    api = replicas_file["services"]["api"]
    procs, ports = [], []
    try:
        for i in range(3):
            port = free_port()
            log = tmp_path / f"replica-{i}.log"
            with open(log, "w") as out:
                procs.append(
                    subprocess.Popen(
                        local_command(command(api), tmp_path, port),
                        env={**os.environ, **_env(api, url), **LOCAL_ENV},
                        cwd=REPO,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )
            ports.append(port)
        for proc, port, i in zip(procs, ports, range(3), strict=True):
            wait_healthy(f"http://127.0.0.1:{port}", proc, tmp_path / f"replica-{i}.log")
        want = Store(tmp_path / "local").read(info.id, indices=list(range(info.num_examples)))
        for port in ports:
            base = f"http://127.0.0.1:{port}"
            with RemoteStore(base) as remote:
                got = remote.read(info.id, indices=list(range(info.num_examples)))
            np.testing.assert_array_equal(got.features, want.features)
            page = httpx.get(base + "/", timeout=10)
            assert page.status_code == 200 and info.id in page.text
            metrics = httpx.get(base + "/metrics", timeout=10).text
            assert (
                "snowfire_requests_total" in metrics
                and "/v1/featuresets/{fs_id}/features" in metrics
            )
    finally:
        stop_processes(procs, grace=30)
