"""`snowfire demo`: the main job end to end on the bundled encoder and the shipped sample.

extract (SST-2 and STS-B samples, all 7 layers of all-MiniLM-L6-v2) -> serve the store over
REST -> train a head per task from features fetched over REST -> fine-tune the encoder on the
STS-B sample (3 epochs, the 🔥 baseline) -> print dev metrics, ❄️ beside 🔥.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

DEMO_TASKS = (("sst2", "linear"), ("stsb", "mlp"))
DEMO_FINETUNE = "stsb"  # 3 epochs over the 1,500 sample pairs: 843 s here, cores shared


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
    print(f"== 1/4 extract: all layers of the bundled encoder into {store}")
    for task, _ in DEMO_TASKS:
        for info in run_extract({"encoder": "minilm", "task": task, "data": data, "store": store}):
            print(f"   {info.id}: {info.num_examples} examples x {info.num_layers} layers")
    port = port or _free_port()
    url = f"http://127.0.0.1:{port}"
    print(f"== 2/4 serve: {url}")
    proc = subprocess.Popen(
        python_command("cli", "serve", "--store", str(store), "--port", str(port)),
        env={**os.environ, "PYTHONUNBUFFERED": "1", "SNOWFIRE_LOG_LEVEL": "warning"},
    )
    try:
        _wait_healthy(url, proc)
        with urllib.request.urlopen(f"{url}/v1/featuresets") as r:
            sets = json.load(r)
        print(f"   the service lists {len(sets)} feature sets")
        print("== 3/4 train: heads on features fetched over REST (the encoder is not run)")
        results = []  # (task, ❄️ or 🔥, dev metrics)
        for task, head in DEMO_TASKS:
            cfg = TrainConfig(
                store=url, encoder="minilm", task=task, head=head, data=data,
                out=str(runs / f"{task}-{head}"), epochs=8, patience=2, progress=False,
            )  # fmt: skip
            results.append((task, "❄️", train_head(cfg)["dev"]))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"== 4/4 fine-tune: the whole encoder on the {DEMO_FINETUNE} sample (🔥 baseline)")
    cfg = FinetuneConfig(
        encoder="minilm", task=DEMO_FINETUNE, data=data,
        out=str(runs / f"{DEMO_FINETUNE}-finetune"), epochs=3,
    )  # fmt: skip
    results.append((DEMO_FINETUNE, "🔥", finetune(cfg)["dev"]))
    print("\n== dev metrics (bundled all-MiniLM-L6-v2, sample training data)")
    for task, mark, dev in results:
        print(f"   {task:6s} {mark} " + ", ".join(f"{k} {v:.4f}" for k, v in dev.items()))
    print(f"   runs in {runs}; total {time.perf_counter() - started:.0f} s")
    return 0
