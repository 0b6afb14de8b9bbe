"""The demo sample shipped in tasks/demo: readable by the same readers, small, reproducible."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from snowfire.tasks import DEMO_DATA_DIR, available_splits, read_split

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SAMPLE_FILES = [
    "sst2/train.tsv",
    "sst2/dev.tsv",
    "stsb/sts-train.csv",
    "stsb/sts-dev.csv",
    "stsb/LICENSE.txt",
]


def test_demo_reads_like_a_data_dir():
    assert DEMO_DATA_DIR == Path(__file__).resolve().parents[1] / "tasks" / "demo"
    assert available_splits("sst2", DEMO_DATA_DIR) == ["train", "dev"]
    assert available_splits("stsb", DEMO_DATA_DIR) == ["train", "dev"]
    train = read_split("sst2", DEMO_DATA_DIR, "train")
    assert len(train) == 3_000
    assert all(len(e.words_a) >= 4 for e in train)
    assert {e.label for e in train} == {"0", "1"}
    assert len(read_split("sst2", DEMO_DATA_DIR, "dev")) == 872
    assert len(read_split("stsb", DEMO_DATA_DIR, "train")) == 1_500
    assert len(read_split("stsb", DEMO_DATA_DIR, "dev")) == 500


def test_demo_is_small_and_holds_only_redistributable_data():
    files = sorted(
        p for p in DEMO_DATA_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    names = {p.relative_to(DEMO_DATA_DIR).as_posix() for p in files}
    assert names == set(SAMPLE_FILES) | {"README.md", "make_sample.py"}
    assert sum(p.stat().st_size for p in files) < 700_000
    for name in ("sts-train.csv", "sts-dev.csv"):
        sources = {
            line.split("\t")[1]
            for line in (DEMO_DATA_DIR / "stsb" / name).read_text(encoding="utf-8").splitlines()
        }
        assert "MSRpar" not in sources  # MRPC sentences are not redistributed


def test_make_sample_regenerates_the_same_bytes(tmp_path, monkeypatch):
    if not DATA_DIR.is_dir():
        pytest.skip(
            f"real task data not found: expected the shared data folder at {DATA_DIR} "
            "(next to the repository), needed to regenerate the sample"
        )
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # no __pycache__ in tasks/demo
    spec = importlib.util.spec_from_file_location("make_sample", DEMO_DATA_DIR / "make_sample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = module.make_sample(DATA_DIR, tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == SAMPLE_FILES
    for name in SAMPLE_FILES:
        assert (tmp_path / name).read_bytes() == (DEMO_DATA_DIR / name).read_bytes(), name
    assert (DEMO_DATA_DIR / "sst2" / "dev.tsv").read_bytes() == (
        DATA_DIR / "sst2" / "dev.tsv"
    ).read_bytes()
