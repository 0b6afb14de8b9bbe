"""Stores for tests: random texts, extraction with the tiny BERT, a bucket's objects, a task
folder, and a head trained by the command line.

    texts, extract_texts    random single and pair texts; them extracted into a store
    bucket_objects          every object of a store on object storage (name -> bytes)
    tiny_sst2               a learnable sst2 folder (the label is a word of the text)
    extract_tiny_sst2       that folder extracted with the tiny BERT (`snowfire extract`)
    train_cli               `snowfire train` on a store: the run's metrics
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import WORDS


def texts(n=40, seed=0):
    """`n` random texts of the tiny vocabulary, every third a pair."""
    from snowfire.extractor import TextInput

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        a = tuple(rng.choice(WORDS, size=int(rng.integers(2, 14))))
        b = tuple(rng.choice(WORDS, size=int(rng.integers(2, 6)))) if i % 3 == 0 else None
        out.append(TextInput(a, b))
    return out


def extract_texts(tiny_bert_dir, store, dtype="float16", inputs=None, tiles="token"):
    """`inputs` (default: `texts()`) extracted into `store` in segments of 120 tokens."""
    from snowfire.extractor import ExtractConfig, extract
    from snowfire.extractor.hf import HFEncoder

    enc = HFEncoder(tiny_bert_dir, name="tiny", spec=f"hf:{tiny_bert_dir}")
    cfg = ExtractConfig(
        encoder=f"hf:{tiny_bert_dir}",
        store=str(store.path),
        progress=False,
        dtype=dtype,
        segment_tokens=120,
        tiles=tiles,
    )
    return extract(enc, inputs or texts(), store, task=None, split=None, config=cfg)


def bucket_objects(store) -> dict[str, bytes]:
    """Every object of a store on object storage (name -> bytes), as obstore itself lists
    and reads them (not through the store's backend, which is under test)."""
    import obstore

    client = store.backend.client
    names = [o["path"] for page in obstore.list(client) for o in page]
    return {name: bytes(obstore.get(client, name).bytes()) for name in names}


def tiny_sst2(root: Path, train: int = 60) -> Path:
    """An sst2 folder (`train` train examples, 20 dev) whose label is a word of each
    sentence."""
    rng = np.random.default_rng(0)
    (root / "sst2").mkdir(parents=True)
    for split, n in (("train", train), ("dev", 20)):
        rows = []
        for _ in range(n):
            label = int(rng.integers(0, 2))
            words = list(rng.choice(WORDS[:40], size=int(rng.integers(3, 8))))
            words.append("good" if label else "bad")
            rows.append(f"{' '.join(words)}\t{label}")
        (root / "sst2" / f"{split}.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    return root


def extract_tiny_sst2(root: Path, tiny_bert_dir, train: int = 60) -> tuple[Path, Path]:
    """`tiny_sst2(root / "data", train)` extracted with the tiny BERT into root / "store":
    (data folder, store folder)."""
    from snowfire.cli.main import main as snowfire

    data = tiny_sst2(root / "data", train)
    argv = ["extract", "--encoder", f"hf:{tiny_bert_dir}", "--task", "sst2"]
    argv += ["--data", str(data), "--store", str(root / "store"), "--quiet"]
    assert snowfire(argv) == 0
    return data, root / "store"


def train_cli(tiny_bert_dir, data_dir, store_dir, out, task, head, *extra) -> dict:
    """`snowfire train` (3 epochs, quiet; `extra` flags last, so they win): the metrics."""
    from snowfire.cli.main import main as snowfire

    args = [
        "train",
        "--store",
        str(store_dir),
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--task",
        task,
        "--head",
        head,
        "--data",
        str(data_dir),
        "--out",
        str(out),
        "--quiet",
        "--epochs",
        "3",
    ]
    assert snowfire(args + list(extra)) == 0  # later --epochs/--lr override the defaults
    return json.loads((Path(out) / "metrics.json").read_text())
