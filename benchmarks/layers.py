"""What a layer sweep costs next to one probe (issue 47): `snowfire layers` on SST-2's stored
features of the bundled MiniLM (7 hidden states x 3 seeds: per layer a linear and an MLP probe
on the task and on its control task, plus the 7 cumulative mixes: 105 probes, every one with
its own epoch chosen) against one probe, `snowfire train --head probe --layer 6` (the project's
own single-layer probe), both with the same epoch cap, patience, batch size and rate.

    python benchmarks/layers.py [--quick] [--data DIR] [--work DIR] [--repeats N] [--json]

full: SST-2 as it is in --data (../shared/data: 67,349 training sentences, 872 dev); quick: its
first 2,000 training and 300 dev lines, one turn (run it once to prove the script works; the
measurement is the full one, on a quiet machine). The features are extracted first (not
timed) into --work, which is kept when given, so a second run reuses them. Each case is a
`snowfire` process (start-up counted alike); the cases take turns and each one's median is
taken. Printed: seconds of each, sweep / one probe (goal < 3), and the sweep's answer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import report

REPO = Path(__file__).resolve().parents[1]
#: Sizes: (training lines, dev lines; None: all), turns by default.
SIZES = {"quick": (2000, 300, 1), "full": (None, None, 2)}
#: The options both cases train with (the sweep's defaults; the probe head's own differ).
TRAINING = ["--epochs", "30", "--patience", "3", "--batch-size", "64", "--lr", "0.01"]


def _shared_data() -> Path:
    shared = Path(os.environ.get("SNOWFIRE_SHARED") or REPO.parent / "shared")
    return shared / "data"


def _run(args: list[str], log: Path) -> float:
    """Seconds one `snowfire ARGS` process takes; RuntimeError with its log if it fails."""
    started = time.perf_counter()
    with open(log, "w") as out:
        code = subprocess.call(
            [sys.executable, "-m", "snowfire.cli", *args], stdout=out, stderr=subprocess.STDOUT
        )
    if code != 0:
        raise RuntimeError(f"snowfire {args[0]} failed: {log.read_text()[-3000:]}")
    return time.perf_counter() - started


def prepare(work: Path, source: Path, size: str) -> tuple[Path, Path]:
    """SST-2 (all of it, or its first lines) as a data directory, and its features."""
    train, dev, _ = SIZES[size]
    data = work / "data"
    if not (data / "sst2").is_dir():
        (data / "sst2").mkdir(parents=True)
        for name, lines in (("train.tsv", train), ("dev.tsv", dev)):
            text = (source / "sst2" / name).read_text(encoding="utf-8").splitlines(keepends=True)
            kept = text if lines is None else text[: lines + 1]  # the header, then the lines
            (data / "sst2" / name).write_text("".join(kept), encoding="utf-8")
    store = work / "store"
    args = ["extract", "--encoder", "minilm", "--task", "sst2", "--data", str(data)]
    seconds = _run([*args, "--store", str(store), "--quiet"], work / "extract.log")
    print(f"features of {data / 'sst2'} in {store} ({seconds:.0f} s, not timed below)")
    return data, store


def main() -> None:
    p = report.parser(__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_const", const="quick", default="full", dest="size")
    p.add_argument("--data", type=Path, default=None, help="data directory holding sst2/")
    p.add_argument("--work", type=Path, default=None, help="kept working directory")
    p.add_argument("--repeats", type=int, default=None, help="turns (quick 1, else 2)")
    args = p.parse_args()
    args.repeats = args.repeats or SIZES[args.size][2]
    source = args.data or _shared_data()
    if not (source / "sst2" / "train.tsv").is_file():
        raise SystemExit(f"no SST-2 in {source}: give --data DIR (DIR/sst2/train.tsv)")
    work = args.work or Path(tempfile.mkdtemp(prefix="snowfire-layers-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        data, store = prepare(work, source, args.size)
        common = ["--store", str(store), "--encoder", "minilm", "--task", "sst2"]
        common += ["--data", str(data), *TRAINING, "--quiet"]
        runs = work / "runs"
        shutil.rmtree(runs, ignore_errors=True)
        runs.mkdir()
        cases = {
            "one probe (layer 6, 1 seed)": lambda r: _run(
                ["train", *common, "--head", "probe", "--layer", "6", "--out", str(runs / f"p{r}")],
                runs / f"probe{r}.log",
            ),
            "sweep (7 layers x 3 seeds)": lambda r: _run(
                ["layers", *common, "--seeds", "3", "--out", str(runs / f"s{r}")],
                runs / f"sweep{r}.log",
            ),
        }
        times = report.interleaved(cases, args.repeats, shuffle=args.seed)
        one, sweep = (report.median(t) for t in times.values())
        rows = [
            {"case": name, "seconds": f"{report.median(t):.1f}", "/ one probe": ""}
            for name, t in times.items()
        ]
        rows[1]["/ one probe"] = f"{sweep / one:.2f} (goal < 3)"
        print(report.table(rows, ["case", "seconds", "/ one probe"]))
        answer = json.loads((runs / "s0" / "layers.json").read_text())
        passes = answer["passes"]
        print(f"sweep: {answer['recommendation']} ({passes} passes until every probe stopped)")
        report.save(
            "layers",
            args,
            {
                "seconds": times,
                "ratio": sweep / one,
                "examples": answer["examples"],
                "passes": passes,
                "recommendation": answer["recommendation"],
            },
        )
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
