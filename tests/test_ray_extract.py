"""Extraction on a local Ray (started once for the module, 2 CPUs): the store a pool of actors
writes equals a single-process extraction's byte for byte, locally and on S3; an actor whose
process dies mid-segment is restarted and its segment rerun; a rerun encodes only what is
missing."""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from snowfire.cache import Store, open_store
from snowfire.cli.main import main as snowfire
from snowfire.extractor import ExtractConfig, TextInput, extract
from snowfire.extractor.encoders import load_encoder
from snowfire.extractor.ray_run import RayRunner
from tests.helpers import REPO, WORDS, tree_bytes
from tests.helpers.store import bucket_objects, tiny_sst2

pytestmark = pytest.mark.subprocess  # Ray's processes


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray", reason="make test installs the 'ray' extra")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}},  # actors import tests.*
    )
    yield
    ray.shutdown()


def _texts(n=48):
    rng = np.random.default_rng(3)
    return [
        TextInput(
            tuple(rng.choice(WORDS, size=int(rng.integers(2, 15)))),
            tuple(rng.choice(WORDS, size=4)) if i % 4 == 0 else None,
        )
        for i in range(n)
    ]


def _config(tiny_bert_dir, store) -> ExtractConfig:
    return ExtractConfig(
        encoder=f"hf:{tiny_bert_dir}", store=str(store), progress=False, segment_tokens=100
    )


def _single(tiny_bert_dir, root: Path):
    enc = load_encoder(f"hf:{tiny_bert_dir}")
    return extract(
        enc, _texts(), Store(root), task=None, split=None, config=_config(tiny_bert_dir, root)
    )


def _on_ray(tiny_bert_dir, store: str, factory=None):
    spec = f"hf:{tiny_bert_dir}"
    runner = RayRunner(factory or functools.partial(load_encoder, spec), store, actors=2)
    try:
        return extract(
            load_encoder(spec),
            _texts(),
            open_store(store),
            task=None,
            split=None,
            config=_config(tiny_bert_dir, store),
            runner=runner,
        )
    finally:
        runner.close()


def test_ray_extraction_equals_one_process(ray_local, tiny_bert_dir, tmp_path):
    want = _single(tiny_bert_dir, tmp_path / "one")
    got = _on_ray(tiny_bert_dir, str(tmp_path / "ray"))
    assert got == want
    files = tree_bytes(tmp_path / "ray")
    assert files == tree_bytes(tmp_path / "one")  # same keys, segments, manifest: every byte
    assert sum(n.endswith("checksums.json") for n in files) >= 4  # several segments


def test_the_cli_extracts_a_task_on_ray_into_s3(ray_local, tiny_bert_dir, local_s3, tmp_path):
    data, url = tiny_sst2(tmp_path / "data"), local_s3()
    base = ["extract", "--encoder", f"hf:{tiny_bert_dir}", "--task", "sst2", "--data", str(data)]
    base += ["--quiet", "--segment-tokens", "200"]
    assert snowfire(base + ["--store", str(tmp_path / "one")]) == 0
    assert snowfire(base + ["--store", url, "--ray", "local", "--actors", "2"]) == 0
    from snowfire.cache import open_store

    assert bucket_objects(open_store(url)) == tree_bytes(tmp_path / "one")


class DiesOnce:
    """An encoder factory whose first encode anywhere kills its process (as kill -9 or a lost
    node would), once: a marker file says it happened."""

    def __init__(self, spec: str, marker: str):
        self.spec, self.marker = spec, marker

    def __call__(self):
        encoder = load_encoder(self.spec)
        encode, marker = encoder.encode, self.marker

        def encode_or_die(batch):
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return encode(batch)
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            os._exit(1)  # no clean-up, mid-segment

        encoder.encode = encode_or_die
        return encoder


def test_a_dead_actors_segment_is_rerun_and_the_store_is_the_same(
    ray_local, tiny_bert_dir, tmp_path
):
    want = _single(tiny_bert_dir, tmp_path / "one")
    marker = tmp_path / "died"
    factory = DiesOnce(f"hf:{tiny_bert_dir}", str(marker))
    got = _on_ray(tiny_bert_dir, str(tmp_path / "ray"), factory)
    assert marker.exists()  # an actor did die mid-segment
    assert got == want
    assert tree_bytes(tmp_path / "ray") == tree_bytes(tmp_path / "one")


def test_a_rerun_encodes_only_the_missing_segment(ray_local, tiny_bert_dir, tmp_path):
    root = tmp_path / "ray"
    _on_ray(tiny_bert_dir, str(root))
    segments = sorted((root / "pools").glob("*/segments/[!.]*"))
    before = {p.name: p.stat().st_ino for p in segments}
    shutil.rmtree(segments[1])  # as if the run had died before committing it
    _on_ray(tiny_bert_dir, str(root))
    after = {p.name: p.stat().st_ino for p in sorted((root / "pools").glob("*/segments/[!.]*"))}
    assert after.keys() == before.keys()
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {segments[1].name}  # only that one was written again
    _single(tiny_bert_dir, tmp_path / "one")
    assert tree_bytes(root) == tree_bytes(tmp_path / "one")
