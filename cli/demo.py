"""`snowfire demo`: the main job end to end on the bundled encoder and the shipped sample.

extract (SST-2 and STS-B samples, all 7 layers of all-MiniLM-L6-v2; STS-B pairs also encoded
separately) -> serve the store over REST -> train heads from features fetched over REST (the
project's strongest ❄️ set-up for STS-B: ESIM with pooled sentence vectors over separately
encoded pairs) -> the zero-training baseline (cosine of mean-pooled sentences) -> fine-tune the
encoder on the STS-B sample (the 🔥 baseline, a quick budget) -> ❄️, baseline and 🔥 side by side.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

#: (task, head, pair encoding, head options): the strongest ❄️ set-up of each task that fits.
DEMO_HEADS = (
    ("sst2", "linear", None, {}),
    ("stsb", "esim", "separate", {"pooled": True, "hidden": 100}),
)
DEMO_FINETUNE = "stsb"
#: 🔥 on a quick budget (as `snowfire compare --budget quick`): 2 epochs over 1,000 pairs.
FINETUNE_BUDGET = {"epochs": 2, "max_train_examples": 1000}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the service exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"the service at {url} did not become healthy in {timeout:.0f} s")


def _cosine(url: str, data: str) -> dict[str, float]:
    """The zero-training STS baseline on the STS-B sample's dev pairs, read over REST."""
    from cache import open_reader
    from heads.baseline import cosine_scores
    from tasks import evaluate, read_split

    reader = open_reader(url)
    info = reader.find_featureset(encoder="minilm", task="stsb", split="dev",
                                  pair_encoding="separate")  # fmt: skip
    gold = [float(e.label) for e in read_split("stsb", data, "dev")]
    return evaluate("stsb", gold, cosine_scores(reader, info).tolist())


def run_demo(out: Path, port: int = 0) -> int:
    """Run the demo into `out`; library errors propagate to the caller (the CLI reports them)."""
    from extractor import run_extract
    from finetune import FinetuneConfig
    from finetune import train as finetune
    from heads import TrainConfig
    from heads import train as train_head
    from jobs import python_command
    from tasks import DEMO_DATA_DIR

    started = time.perf_counter()
    store, runs, data = out / "store", out / "runs", str(DEMO_DATA_DIR)
    print(f"== 1/5 extract: all layers of the bundled encoder into {store}")
    for task, pair in (("sst2", "joint"), ("stsb", "joint"), ("stsb", "separate")):
        opts = {"encoder": "minilm", "task": task, "data": data, "store": store,
                "pair_encoding": pair}  # fmt: skip
        for info in run_extract(opts):
            print(f"   {info.id}: {info.num_examples} examples x {info.num_layers} layers")
    port = port or _free_port()
    url = f"http://127.0.0.1:{port}"
    print(f"== 2/5 serve: {url}")
    proc = subprocess.Popen(
        python_command("cli", "serve", "--store", str(store), "--port", str(port)),
        env={**os.environ, "PYTHONUNBUFFERED": "1", "SNOWFIRE_LOG_LEVEL": "warning"},
    )
    try:
        _wait_healthy(url, proc)
        with urllib.request.urlopen(f"{url}/v1/featuresets") as r:
            sets = json.load(r)
        print(f"   the service lists {len(sets)} feature sets")
        print("== 3/5 ❄️ train: heads on features fetched over REST (the encoder is not run)")
        results = []  # (task, what, dev metrics)
        for task, head, pair, hparams in DEMO_HEADS:
            cfg = TrainConfig(
                store=url, encoder="minilm", task=task, head=head, data=data,
                out=str(runs / f"{task}-{head}"), epochs=8, patience=2, progress=False,
                pair_encoding=pair, hparams=hparams,
            )  # fmt: skip
            results.append((task, f"❄️ {head}", train_head(cfg)["dev"]))
        print("== 4/5 zero-training baseline: cosine of the mean-pooled sentences (STS-B)")
        results.append(("stsb", "cosine, no training", _cosine(url, data)))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"== 5/5 🔥 fine-tune: the whole encoder on the {DEMO_FINETUNE} sample "
          f"({FINETUNE_BUDGET['epochs']} epochs over {FINETUNE_BUDGET['max_train_examples']:,} "
          "pairs)")  # fmt: skip
    cfg = FinetuneConfig(
        encoder="minilm", task=DEMO_FINETUNE, data=data,
        out=str(runs / f"{DEMO_FINETUNE}-finetune"), **FINETUNE_BUDGET,
    )  # fmt: skip
    results.append((DEMO_FINETUNE, "🔥 fine-tuning", finetune(cfg)["dev"]))
    print("\n== dev metrics (bundled all-MiniLM-L6-v2, sample training data)")
    for task, what, dev in results:
        print(f"   {task:6s} {what:22s} " + ", ".join(f"{k} {v:.4f}" for k, v in dev.items()))
    print(f"   runs in {runs}; total {time.perf_counter() - started:.0f} s")
    return 0
