"""Plain helpers shared by the test modules; fixtures are in tests/conftest.py. A test module
imports from here, never from another test module (nor the demo's private helpers).

    __init__    paths (the checkout, ../shared), the tiny vocabulary, skipping without
                ../shared, a directory's bytes (a free port, waiting for a service and
                stopping processes: the library's, snowfire.jobs)
    tasks.py    task data in the real file formats; a 🔥 config and run check
    heads.py    hand-built store batches and tiny heads for the head contract
    service.py  a feature set written through the store; the service in a thread
    proxy.py    an HTTP proxy that adds latency, refuses, resets, cuts bodies, answers 503
    compose.py  docker-compose.yml read as Compose does; its commands run locally
    store.py    texts, extraction into a store, a bucket's objects, a head run by the CLI
    serving.py  a run of every kind under one HOME, fresh inputs in each task's form
    tiny_bert.py  the tiny random BERT (the `tiny_bert_dir` fixture, the format-1 fixture)
    fuzz.py     the property tests' budget (hypothesis profiles) and the hazards they plant
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: The shared data and fixtures: beside the checkout, or where $SNOWFIRE_SHARED says
#: (a worktree's parent is not the checkout's).
SHARED = Path(os.environ.get("SNOWFIRE_SHARED") or REPO.parent / "shared")
DATA = SHARED / "data"
FIXTURES = SHARED / "fixtures"

WORDS = (
    "the a an of and to in is was it for on with as by at from this that be are were man "
    "woman dog cat plays playing guitar piano runs running quick brown fox jumps over lazy "
    "good bad movie film great terrible not very funny boring story some one someone people "
    "eats food park street car rides bike . , ! ? ' s n't"
).split()


def need_shared(path: Path) -> Path:
    """Skip (with the reason) when ../shared is not beside the checkout."""
    if not path.exists():
        pytest.skip(f"{path} not found: the shared data/fixtures sit beside the checkout in CI")
    return path


def snowfire_cli(*args: str) -> list[str]:
    """argv of `snowfire ARGS...` with this interpreter (the venv's, whatever PATH says)."""
    return [sys.executable, "-m", "snowfire.cli", *args]


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under `root` (path relative to it -> bytes) but the writer's lock file."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }
