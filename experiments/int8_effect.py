"""What int8 storage costs on dev scores: the same heads, seeds and data, on float16 and on int8
features of the same encoder.

For each task below, the task's train (first `--train N` examples, the same for both dtypes)
and dev splits are extracted twice with `snowfire extract` (--dtype float16, --dtype int8,
into two stores), then the same `snowfire train` command runs on each. Writes OUT/int8.json
(every run's dev metric, config and store bytes) and OUT/int8.md (the table docs/int8.md
quotes). Resumable: a finished extraction or run is not repeated.

    python experiments/int8_effect.py --data ../shared/data --out DIR [--seeds 1]

The three cells of issue #11: SST-2 with the linear head, STS-B with ESIM (pooled, pairs
encoded separately: the project's strongest ❄️ set-up), CoNLL-2003 with the BiLSTM-CRF.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

#: task -> (head, extra train flags, extract flags, metric); sized for a 2-core machine (ESIM
#: with 150 hidden units instead of 300, a few epochs): the two dtypes get the same budget
CELLS = {
    "sst2": ("linear", ["--epochs", "10"], [], "accuracy"),
    "stsb": (
        "esim",
        ["--epochs", "4", "--patience", "2", "--hparams", '{"pooled": true, "hidden": 150}'],
        ["--pair-encoding", "separate"],
        "pearson",
    ),
    "conll2003": (
        "bilstm-crf",
        ["--epochs", "4", "--patience", "2", "--hparams", '{"hidden": 150}'],
        [],
        "span_f1",
    ),
}
DTYPES = ("float16", "int8")


def subset(data: Path, out: Path, task: str, n: int) -> Path:
    """A data folder with the task's dev split and the first `n` training examples."""
    from snowfire.tasks import get_task

    spec = get_task(task)
    src, dst = data / spec.folder, out / "data" / spec.folder
    if dst.is_dir():
        return out / "data"
    dst.mkdir(parents=True)
    for name in src.iterdir():
        if name.name == spec.splits["train"].path:
            dst.joinpath(name.name).write_text(_head(name, task, n))
        elif name.name == spec.splits["dev"].path:
            shutil.copy(name, dst / name.name)
    return out / "data"


def _head(path: Path, task: str, n: int) -> str:
    """The first n examples of a train file (CoNLL: n sentences; TSV: n rows after the header)."""
    lines = path.read_text().splitlines(keepends=True)
    if task == "conll2003":
        out, count = [], 0
        for line in lines:
            out.append(line)
            if not line.strip():
                count += 1
                if count >= n:
                    break
        return "".join(out)
    header = 1 if task == "sst2" else 0
    return "".join(lines[: header + n])


def run(cmd: list[str]) -> None:
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--encoder", default="minilm")
    p.add_argument("--train", type=int, default=5000, help="training examples per task")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--tasks", default=",".join(CELLS))
    args = p.parse_args()
    from snowfire.rundir import METRICS

    exe = [sys.executable, "-m", "snowfire.cli"]
    results = []
    for task in args.tasks.split(","):
        head, train_flags, extract_flags, metric = CELLS[task]
        data = subset(args.data, args.out, task, args.train)
        for dtype in DTYPES:
            store = args.out / f"store-{dtype}"
            marker = args.out / f".extracted-{task}-{dtype}"
            if not marker.exists():
                run(
                    [
                        *exe,
                        "extract",
                        "--encoder",
                        args.encoder,
                        "--store",
                        str(store),
                        "--task",
                        task,
                        "--data",
                        str(data),
                        "--dtype",
                        dtype,
                        *extract_flags,
                    ]
                )
                marker.touch()
            for seed in range(args.seeds):
                out = args.out / "runs" / f"{task}-{head}-{dtype}-seed{seed}"
                if not (out / METRICS).exists():
                    run(
                        [
                            *exe,
                            "train",
                            "--store",
                            str(store),
                            "--encoder",
                            args.encoder,
                            "--task",
                            task,
                            "--head",
                            head,
                            "--data",
                            str(data),
                            "--out",
                            str(out),
                            "--seed",
                            str(seed),
                            "--quiet",
                            *train_flags,
                        ]
                    )
                metrics = json.loads((out / METRICS).read_text())
                results.append(
                    {
                        "task": task,
                        "head": head,
                        "dtype": dtype,
                        "seed": seed,
                        "metric": metric,
                        "dev": _dev(metrics, metric),
                        "run": str(out),
                    }
                )
    sizes = {d: _bytes(args.out / f"store-{d}") for d in DTYPES}  # every task's sets, both
    (args.out / "int8.json").write_text(
        json.dumps({"runs": results, "store_bytes": sizes}, indent=2)
    )
    text = table(results) + (
        f"\nBoth stores on disk, the same examples: int8 {sizes['int8']:,} "
        f"bytes, float16 {sizes['float16']:,} bytes "
        f"({sizes['int8'] / sizes['float16']:.2f}).\n"
    )
    (args.out / "int8.md").write_text(text)
    print(text)
    return 0


def _dev(metrics: dict, metric: str) -> float:
    dev = metrics.get("dev", metrics)
    return float(dev[metric] if metric in dev else dev["best"][metric])


def _bytes(store: Path) -> int:
    return sum(f.stat().st_size for f in store.rglob("*") if f.is_file())


def table(results: list[dict]) -> str:
    import numpy as np

    rows = [
        "| task | head | metric | float16 dev | int8 dev | Δ (int8 − float16) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for task in dict.fromkeys(r["task"] for r in results):
        cell = {d: [r for r in results if r["task"] == task and r["dtype"] == d] for d in DTYPES}
        if not all(cell.values()):
            continue
        f16, i8 = (100 * np.mean([r["dev"] for r in cell[d]]) for d in DTYPES)
        first = cell["float16"][0]
        rows.append(
            f"| {task} | {first['head']} | {first['metric']} | {f16:.2f} | {i8:.2f} | "
            f"{i8 - f16:+.2f} |"
        )
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.exit(main())
