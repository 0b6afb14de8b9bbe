"""`snowfire demo`: the main job end to end on the bundled encoder and the shipped sample.

extract (SST-2 and STS-B samples, all 7 layers of all-MiniLM-L6-v2; STS-B pairs encoded each
text alone) -> serve the store over REST -> train a ❄️ head on SST-2 from features fetched over
REST (the encoder is not run) -> `snowfire compare` on STS-B, quick budget, 3 ❄️ seeds and 2 🔥
seeds (so Δ's interval holds the restarts' spread too): the strongest ❄️ set-up that fits
(ESIM over pooled sentence vectors of separately encoded pairs), the zero-training baseline
(cosine of the mean-pooled sentences) and 🔥 fine-tuning, both sides trained on the same
examples -> compare's table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

#: SST-2 from the service: the linear head (the strongest that fits the demo's time).
DEMO_REST_HEAD = ("sst2", "linear")
#: `snowfire compare` on the STS-B sample, with the project's strongest ❄️ set-up for it.
DEMO_COMPARE = {
    "tasks": ["stsb"],
    "heads": ["esim"],
    "pair_encoding": "separate",
    "hparams": {"pooled": True, "hidden": 100},
    "budget": "quick",
    "seeds": 3,
    "fire_seeds": 2,
}


def run_demo(out: Path, port: int = 0) -> int:
    """Run the demo into `out`; library errors propagate to the caller (the CLI reports them)."""
    from snowfire.compare import BUDGET_LIMITED, CompareConfig, run_compare
    from snowfire.extractor import ExtractConfig, run_extract
    from snowfire.heads import TrainConfig
    from snowfire.heads import train as train_head
    from snowfire.jobs import free_port, stop_process, wait_healthy
    from snowfire.tasks import DEMO_DATA_DIR

    started = time.perf_counter()
    store, runs, data = out / "store", out / "runs", str(DEMO_DATA_DIR)
    print(f"== 1/3 extract: all layers of the bundled encoder into {store}")
    for task, pair in (("sst2", "joint"), ("stsb", "separate")):
        config = ExtractConfig(
            encoder="minilm", task=task, data=data, store=str(store), pair_encoding=pair
        )
        for info in run_extract(config):
            print(f"   {info.id}: {info.num_examples} examples x {info.num_layers} layers")
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    task, head = DEMO_REST_HEAD
    print(f"== 2/3 serve {url}; ❄️ {head} head on {task} from features fetched over REST")
    proc = subprocess.Popen(
        [sys.executable, "-m", "snowfire.cli", "serve", "--store", str(store), "--port", str(port)],
        env={**os.environ, "PYTHONUNBUFFERED": "1", "SNOWFIRE_LOG_LEVEL": "warning"},
    )
    try:
        wait_healthy(url, proc)
        with urllib.request.urlopen(f"{url}/v1/featuresets") as r:
            print(f"   the service lists {len(json.load(r))} feature sets")
        cfg = TrainConfig(
            store=url,
            encoder="minilm",
            task=task,
            head=head,
            data=data,
            out=str(runs / f"{task}-{head}"),
            epochs=8,
            patience=2,
            progress=False,
        )
        rest = train_head(cfg)["dev"]
    finally:
        stop_process(proc, grace=30)
    print(f"   {task} ❄️ {head}: dev " + ", ".join(f"{k} {v:.4f}" for k, v in rest.items()))
    print(
        "== 3/3 snowfire compare on the STS-B sample: ❄️ ESIM (pooled, pairs encoded "
        "separately), no training (cosine), 🔥 fine-tuning; quick budget, 3 ❄️ and 2 🔥 "
        "seeds"
    )
    summary = run_compare(
        CompareConfig(
            encoder="minilm", data=data, out=str(out / "compare"), store=str(store), **DEMO_COMPARE
        )
    )
    print()
    print(Path(summary["table"]).read_text().split("\n\n")[1])  # Table 2's rows
    verdict = summary["verdicts"]["stsb"]
    print(f"\n   ❄️ or 🔥 on the STS-B sample: {verdict}; the whole table: {summary['table']}")
    if verdict.startswith(BUDGET_LIMITED):
        print(
            "   The quick budget's few epochs leave cells still improving, so it makes no call: "
            "`snowfire compare --budget standard` trains until the curves flatten and gives "
            "one (about 1-2 h for STS-B on 2 cores)."
        )
    print(f"   runs in {runs} and {out / 'compare'}; total {time.perf_counter() - started:.0f} s")
    return 0
