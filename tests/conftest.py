"""Shared fixtures: a tiny random BERT built on the fly (no downloads), tiny task folders,
moto's S3 server. Plain helpers (paths, data writers, ...) are in tests/helpers/."""

from __future__ import annotations

import importlib.abc
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:  # `make test` runs workers side by side: each
    # takes its share of the cores (set before torch is imported, whatever the caller's
    # OMP_NUM_THREADS said), as do the processes it starts: two torch processes with the default
    # threads each on 2 cores run many times slower than one
    # of the cores the thread budget counts (affinity and cgroup quota: options/threads.py)
    from snowfire.options import thread_budget

    _share = thread_budget().cores // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(max(1, _share))


from tests.helpers.fuzz import register_profiles
from tests.helpers.tasks import write_task_data

# the property tests' budget: "snowfire" under make test, SNOWFIRE_HYPOTHESIS=nightly for more
hypothesis_settings.load_profile(register_profiles())


class _BareNames(importlib.abc.MetaPathFinder):
    """The checkout's folders are importable only as snowfire.X: pytest puts the repository on
    sys.path (for tests.helpers), where `import cache` would load a second, unpatched copy of
    snowfire.cache (a monkeypatch.setattr("cache.x", ...) that patches nothing)."""

    BARE = frozenset(
        {
            "options",
            "tasks",
            "cache",
            "rundir",
            "extractor",
            "heads",
            "finetune",
            "serving",
            "compare",
            "jobs",
            "api",
            "cli",
            "nn",
        }
    )

    def find_spec(self, name, path=None, target=None):
        if path is None and name in self.BARE:
            raise ImportError(f"import snowfire.{name}, not the bare folder name {name!r}")
        return None


sys.meta_path.insert(0, _BareNames())


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A 2-layer, 32-wide random BERT with a WordPiece vocabulary, saved as a HF folder."""
    from tests.helpers.tiny_bert import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """Tiny sst2, stsb, sick and conll2003 folders in the real file formats."""
    return write_task_data(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
def local_s3():
    """moto's S3 server on loopback, and the environment that points obstore (and any child
    process) at it; yields a function making a new empty bucket's s3:// URL."""
    import itertools
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        "AWS_ACCESS_KEY_ID": "snowfire-test",
        "AWS_SECRET_ACCESS_KEY": "snowfire-test",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ALLOW_HTTP": "true",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])
    counter = itertools.count()

    def new_bucket(prefix: str = "store") -> str:
        name = f"snowfire-{next(counter)}"
        client.create_bucket(Bucket=name)
        return f"s3://{name}/{prefix}"

    yield new_bucket
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    server.stop()
