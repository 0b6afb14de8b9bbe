"""Shared helpers of the benchmarks: interleaved timing, medians, a table, the JSON record.

The machine is shared and noisy, so a benchmark never judges one absolute time: it times the
cases it compares in turn on the same inputs (A B A B ...), takes each case's median, and
reports their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", action="store_true", help=f"also write {RESULTS_DIR}/NAME.json")
    p.add_argument("--seed", type=int, default=0)
    return p


def interleaved(
    cases: dict[str, Callable[[int], Any]], repeats: int, shuffle: int | None = None
) -> dict[str, list[float]]:
    """Seconds per call of each case, the cases taking turns; case(r) gets the repeat number
    so every case of round r can work on the same input. `shuffle` (a seed): each round runs
    the cases in a new random order, so no case always follows the one that just pulled the
    same bytes into the CPU caches, or the one that evicted them."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    order = list(cases.items())
    rng = random.Random(shuffle)
    for r in range(repeats):
        if shuffle is not None:
            rng.shuffle(order)
        for name, fn in order:
            t0 = time.perf_counter()
            fn(r)
            times[name].append(time.perf_counter() - t0)
    return times


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def spread(xs: list[float]) -> str:
    """Median with the interquartile range, for the table."""
    if len(xs) < 4:
        return f"{median(xs) * 1e3:.3f} ms"
    q = statistics.quantiles(xs, n=4)
    return f"{q[1] * 1e3:.3f} ms [{q[0] * 1e3:.3f}-{q[2] * 1e3:.3f}]"


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    cells = [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    line = "| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| " + " | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) + " |"
        for row in cells
    ]
    return "\n".join([line, rule, *body])


def machine() -> dict[str, Any]:
    out: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "loadavg_at_start": os.getloadavg()[0],
    }
    for pkg in ("torch", "transformers", "zarr", "numpy", "httpx", "uvicorn"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    torch = sys.modules.get("torch")  # only when the benchmark used it
    if torch is not None:
        out["torch_threads"] = torch.get_num_threads()
    return out


def save(name: str, args: argparse.Namespace, record: dict[str, Any]) -> None:
    """Write the record to results/NAME.json when --json was given."""
    if not args.json:
        return
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    full = {"benchmark": name, "options": vars(args), "machine": machine(), **record}
    path.write_text(json.dumps(full, indent=2, sort_keys=True, default=str) + "\n")  # paths
    print(f"wrote {path}")
