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
import sys
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
    from tasks import DEMO_DATA_DIR

    from .main import main as snowfire

    started = time.perf_counter()
    store, runs = out / "store", out / "runs"
    print(f"== 1/4 extract: all layers of the bundled encoder into {store}")
    for task, _ in DEMO_TASKS:
        code = snowfire(
            [
                "extract",
                "--encoder",
                "minilm",
                "--task",
                task,
                "--data",
                str(DEMO_DATA_DIR),
                "--store",
                str(store),
            ]
        )
        if code:
            return code
    port = port or _free_port()
    url = f"http://127.0.0.1:{port}"
    print(f"== 2/4 serve: {url}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--store", str(store), "--port", str(port)],
        env={**os.environ, "PYTHONUNBUFFERED": "1", "SNOWFIRE_LOG_LEVEL": "warning"},
    )
    try:
        _wait_healthy(url, proc)
        with urllib.request.urlopen(f"{url}/v1/featuresets") as r:
            sets = json.load(r)
        print(f"   the service lists {len(sets)} feature sets")
        print("== 3/4 train: heads on features fetched over REST (the encoder is not run)")
        results = []  # (task, ❄️ or 🔥, run directory)
        for task, head in DEMO_TASKS:
            run = runs / f"{task}-{head}"
            args = ["train", "--store", url, "--encoder", "minilm", "--task", task, "--head", head]
            args += ["--data", str(DEMO_DATA_DIR), "--out", str(run), "--quiet"]
            code = snowfire(args + ["--epochs", "8", "--patience", "2"])
            if code:
                return code
            results.append((task, "❄️", run))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"== 4/4 fine-tune: the whole encoder on the {DEMO_FINETUNE} sample (🔥 baseline)")
    fire = runs / f"{DEMO_FINETUNE}-finetune"
    args = ["finetune", "--encoder", "minilm", "--task", DEMO_FINETUNE, "--out", str(fire)]
    code = snowfire(args + ["--data", str(DEMO_DATA_DIR), "--epochs", "3"])
    if code:
        return code
    results.append((DEMO_FINETUNE, "🔥", fire))
    print("\n== dev metrics (bundled all-MiniLM-L6-v2, sample training data)")
    for task, mark, run in results:
        dev = json.loads((run / "metrics.json").read_text())["dev"]
        print(f"   {task:6s} {mark} " + ", ".join(f"{k} {v:.4f}" for k, v in dev.items()))
    print(f"   runs in {runs}; total {time.perf_counter() - started:.0f} s")
    return 0
