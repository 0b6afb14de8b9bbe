"""docs/python.md runs as written: its Python blocks, in order, in one namespace, against a tiny
sst2 store served over REST; only the three names of its first block point elsewhere (the
tiny store's service, the tiny task data, the tiny random BERT)."""

from __future__ import annotations

import re

import pytest

import snowfire
from tests.helpers import REPO

DOC = REPO / "docs" / "python.md"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


@pytest.fixture
def served(tiny_bert_dir, data_dir, tmp_path):
    """sst2 extracted with the tiny BERT and served: the service's URL."""
    from snowfire.api import Settings
    from tests.helpers.service import Server

    store = tmp_path / "store"
    snowfire.extract(
        snowfire.ExtractConfig(
            encoder=f"hf:{tiny_bert_dir}",
            task="sst2",
            data=str(data_dir),
            store=str(store),
            progress=False,
        )
    )
    with Server(Settings(store=store)) as server:
        yield server.url


def test_the_walk_through_runs_as_written(served, tiny_bert_dir, data_dir, tmp_path, monkeypatch):
    blocks = _python_blocks(DOC.read_text())
    assert len(blocks) == 5, (
        "the page's Python blocks: store, dataset, own head, built-in head, layers"
    )
    first = blocks[0]
    for name, value in (
        ("store", served),
        ("data", str(data_dir)),
        ("encoder", f"hf:{tiny_bert_dir}"),
    ):
        line = re.compile(rf'^{name} = "[^"]*"', re.M)
        assert len(line.findall(first)) == 1, f"docs/python.md: no `{name} = ...` line"
        first = line.sub(f"{name} = {value!r}", first)
    monkeypatch.chdir(tmp_path)  # the page writes runs/ where it runs
    namespace: dict = {"__name__": "__doc__"}
    for i, block in enumerate([first, *blocks[1:]]):
        exec(compile(block, f"docs/python.md block {i + 1}", "exec"), namespace)  # noqa: S102
    # what the page claims it did
    assert 0.0 <= namespace["my_accuracy"] <= 1.0
    run = namespace["run"]
    assert isinstance(run, snowfire.TrainResult) and (tmp_path / "runs/sst2-linear").is_dir()
    assert run.metrics["dev"]["accuracy"] == run.score("dev")
    assert namespace["batch"].mask.dtype.is_floating_point is False
    sweep = namespace["sweep"]  # over the service's REST reader, as the page's store is
    assert isinstance(sweep, snowfire.LayersResult) and len(sweep.layers) == 3
    assert (tmp_path / "layers-sst2" / "layers.json").is_file() and sweep.recommendation
