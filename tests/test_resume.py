"""kill -9 during extraction, then the same command: the store equals an uninterrupted run's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from snowfire.cache import Store
from tests.helpers import tree_bytes

pytestmark = pytest.mark.subprocess  # starts and kills real processes

SENTENCES = [
    " ".join(
        ("the man plays guitar in the park and a dog runs over the street " * 3).split()[
            : 3 + i % 30
        ]
        + [str(i)]
    )
    for i in range(240)
]


def _command(model: Path, inp: Path, store: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "snowfire.cli",
        "extract",
        "--encoder",
        f"hf:{model}",
        "--input",
        str(inp),
        "--store",
        str(store),
        "--segment-tokens",
        "96",
        "--token-budget",
        "256",
        "--quiet",
    ]


def _segments(store: Path) -> int:
    return sum(1 for p in store.glob("pools/*/segments/*") if not p.name.startswith("."))


@pytest.mark.parametrize("kill_after", [1, 6])
def test_kill_and_resume_gives_the_identical_store(tiny_bert_dir, tmp_path, kill_after):
    inp = tmp_path / "in.txt"
    inp.write_text("\n".join(SENTENCES) + "\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    reference = tmp_path / "reference"
    subprocess.run(_command(tiny_bert_dir, inp, reference), check=True, env=env)

    killed = tmp_path / "killed"
    proc = subprocess.Popen(_command(tiny_bert_dir, inp, killed), env=env)
    deadline = time.monotonic() + 120
    while _segments(killed) < kill_after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the extractor finished before it could be killed"
    assert not list(killed.glob("featuresets/*.json")), "killed run must not list a feature set"
    partial = _segments(killed)
    assert 0 < partial < _segments(reference)

    subprocess.run(_command(tiny_bert_dir, inp, killed), check=True, env=env)
    assert tree_bytes(killed) == tree_bytes(reference)
    info = Store(killed).list_featuresets()[0]
    keys = Store(killed).featureset_keys(info.id)
    assert len(keys) == len(SENTENCES)
    stored = [
        k
        for seg in Store(killed).path.glob("pools/*/segments/*")
        for k in __import__("zarr").open_group(str(seg), mode="r").attrs["keys"]
    ]
    assert sorted(stored) == sorted(set(keys)), "every example stored exactly once"


def test_leftover_temporary_segment_is_ignored_and_cleaned(tiny_bert_dir, tmp_path):
    from snowfire.extractor import ExtractConfig, TextInput, extract
    from snowfire.extractor.hf import HFEncoder

    enc = HFEncoder(tiny_bert_dir, name="tiny", spec="tiny")
    store = Store(tmp_path / "s")
    cfg = ExtractConfig(encoder=f"hf:{tiny_bert_dir}", store=str(store.path), progress=False)
    info = extract(enc, [TextInput(("the", "dog"))], store, task=None, split=None, config=cfg)
    seg_dir = store.path / "pools" / info.encoder_id / "segments"
    junk = seg_dir / ".tmp-deadbeef-1"
    (junk / "features").mkdir(parents=True)
    (junk / "features" / "zarr.json").write_text("{half written")
    assert Store(store.path).read(info.id, indices=[0]).offsets.tolist() == [0, 4]
    extract(enc, [TextInput(("a", "cat"))], store, task=None, split=None, config=cfg)
    assert not junk.exists()
