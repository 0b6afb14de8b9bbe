"""Concurrent torch processes with and without the thread budget (options/threads.py).

(a) jobs: two ❄️ trainings (linear and mlp heads on SST-2 features of the bundled MiniLM) and
    one 🔥 fine-tuning (MiniLM), each a `snowfire` process, run three ways in turn:
        back to back   one after another, each with the whole budget (every core)
        at once        started together, each told it is one of three (threads_env(3): what
                       `snowfire up` and the compose stack do)
        unbudgeted     started together, each with torch's default threads (measured in a
                       fresh process: what every process took before the budget)
    printed: at once / back to back (goal <= 1.2) and unbudgeted / back to back beside it.
(b) embed: `snowfire serve --encoder minilm`, POST /v1/embed of 8 new sentences at a time (all
    misses: encoded), one request after another: the p99 latency with nothing else running,
    then while a 🔥 run works beside it; the service and the run each one of two (budgeted),
    or both with torch's default threads (unbudgeted). printed: loaded p99 / idle p99 (goal
    <= 3).
(c) this process's budget (affinity, cgroup quota, share) in words. That a container limited
    to fewer CPUs than the host takes its limit is shown by tests/test_threads.py (cgroup v1
    and v2 fixture trees) and by `make compose-check`, whose report names each service's
    threads.

    python benchmarks/threads.py [--quick] [--repeats 2] [--json]

Every process is started the same way (`python -m snowfire.cli`), so start-up costs the same
in every case; the cases of (a) take turns, and each case's median is taken.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import report
from load import WORDS
from rest_vs_inprocess import free_port

from snowfire.options import SHARE_ENV, THREADS_ENV, thread_budget, threads_env
from snowfire.tasks import DEMO_DATA_DIR

#: Sizes: (SST-2 train lines, dev lines, ❄️ epochs, 🔥 train examples, embed requests a phase).
SIZES = {"quick": (200, 100, 2, 48, 20), "full": (1500, 300, 6, 600, 150)}
BUDGET_VARS = (THREADS_ENV, SHARE_ENV, "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _env(**extra: str) -> dict[str, str]:
    """This environment without any thread setting, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in BUDGET_VARS}
    return env | {"TOKENIZERS_PARALLELISM": "false"} | extra


def torch_default_threads() -> int:
    """torch's own intra-op thread count in a fresh process with no thread setting."""
    code = "import torch; print(torch.get_num_threads())"
    return int(
        subprocess.run(
            [sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True
        ).stdout
    )


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "snowfire.cli", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _healthy(url: str, proc: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the service exited ({proc.returncode}): {log.read_text()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).is_success:
                return
        except httpx.TransportError:
            time.sleep(0.3)
    raise RuntimeError(f"the service did not answer /healthz within {timeout:.0f} s")


def prepare(work: Path, size: str) -> tuple[Path, Path]:
    """The first lines of the demo's SST-2 (data) and their features (store), made with every
    core before anything is timed."""
    train, dev, *_ = SIZES[size]
    data = work / "data"
    (data / "sst2").mkdir(parents=True)
    for name, lines in (("train.tsv", train + 1), ("dev.tsv", dev + 1)):
        with open(DEMO_DATA_DIR / "sst2" / name, encoding="utf-8") as src:
            kept = [line for _, line in zip(range(lines), src, strict=False)]
        (data / "sst2" / name).write_text("".join(kept), encoding="utf-8")
    store = work / "store"
    args = ["extract", "--encoder", "minilm", "--task", "sst2", "--data", str(data)]
    proc = _start([*args, "--store", str(store), "--quiet"], _env(), work / "extract.log")
    if proc.wait() != 0:
        raise RuntimeError(f"extract failed: {(work / 'extract.log').read_text()[-2000:]}")
    return data, store


def jobs(data: Path, store: Path, size: str) -> dict[str, list[str]]:
    """name -> the `snowfire` arguments of each job of (a), without --out."""
    _, _, epochs, fire_examples, _ = SIZES[size]
    common = ["--encoder", "minilm", "--task", "sst2", "--data", str(data), "--quiet"]
    snow = ["train", "--store", str(store), *common, "--epochs", str(epochs)]
    return {
        "❄️ linear": [*snow, "--head", "linear"],
        "❄️ mlp": [*snow, "--head", "mlp"],
        "🔥 minilm": [
            "finetune",
            *common,
            "--epochs",
            "1",
            "--max-train-examples",
            str(fire_examples),
            "--max-length",
            "64",
            "--batch-size",
            "16",
        ],
    }


def run_together(todo: dict[str, list[str]], env: dict[str, str], runs: Path) -> float:
    """Start every job of `todo` at once (each its own --out); the seconds until all ended."""
    runs.mkdir(parents=True)
    started = time.perf_counter()
    procs = {
        name: _start([*args, "--out", str(runs / str(i))], env, runs / f"{i}.log")
        for i, (name, args) in enumerate(todo.items())
    }
    for i, (name, proc) in enumerate(procs.items()):
        if proc.wait() != 0:
            raise RuntimeError(f"{name} failed: {(runs / f'{i}.log').read_text()[-2000:]}")
    return time.perf_counter() - started


def bench_jobs(data: Path, store: Path, args, default: int) -> dict[str, list[float]]:
    """Seconds of the three cases of (a), taking turns `args.repeats` times."""
    todo = jobs(data, store, args.size)
    work = Path(tempfile.mkdtemp(prefix="runs-", dir=store.parent))
    cases = {
        "back to back": lambda r: sum(
            run_together({name: argv}, _env(), work / f"seq{r}-{i}")
            for i, (name, argv) in enumerate(todo.items())
        ),
        "at once": lambda r: run_together(todo, _env(**threads_env(len(todo))), work / f"at{r}"),
        "unbudgeted": lambda r: run_together(
            todo, _env(**{THREADS_ENV: str(default)}), work / f"free{r}"
        ),
    }
    return report.interleaved(cases, args.repeats)


def _embed_latencies(url: str, n: int, rng: random.Random) -> list[float]:
    import httpx

    out = []
    with httpx.Client(timeout=300) as http:
        for _ in range(n):
            texts = [
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20))) for _ in range(8)
            ]
            start = time.perf_counter()
            r = http.post(f"{url}/v1/embed", json={"texts": texts})
            out.append(time.perf_counter() - start)
            if r.status_code != 200:
                raise RuntimeError(f"/v1/embed: {r.status_code} {r.text[:300]}")
    return out


def bench_embed(work: Path, size: str, env: dict[str, str], seed: int) -> tuple[float, float]:
    """(idle p99, p99 while a 🔥 run works beside the service), both processes with `env`."""
    n = SIZES[size][4]
    case = Path(tempfile.mkdtemp(prefix="embed-", dir=work))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    serve = ["serve", "--store", str(case / "store"), "--port", str(port), "--encoder", "minilm"]
    api = _start([*serve, "--log-level", "warning"], env, case / "serve.log")
    fire = None
    try:
        _healthy(url, api, case / "serve.log")
        rng = random.Random(seed)
        _embed_latencies(url, 5, rng)  # warm-up
        idle = _embed_latencies(url, n, rng)
        # the 🔥 run on the whole demo SST-2 train split: it outlasts the loaded phase
        fire_args = ["finetune", "--encoder", "minilm", "--task", "sst2", "--quiet"]
        fire_args += ["--data", str(DEMO_DATA_DIR), "--out", str(case / "fire"), "--epochs", "1"]
        fire = _start(fire_args, env, case / "fire.log")
        time.sleep(15 if size == "quick" else 30)  # its encoder loaded, training under way
        loaded = _embed_latencies(url, n, rng)
        if fire.poll() is not None:
            print(f"warning: the 🔥 run ended ({fire.returncode}) before the loaded phase did")
    finally:
        for proc in (fire, api):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=60)
    return float(np.percentile(idle, 99)), float(np.percentile(loaded, 99))


def main() -> None:
    p = report.parser(__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_const", const="quick", default="full", dest="size")
    p.add_argument("--repeats", type=int, default=None, help="turns of (a) (quick 1, else 2)")
    args = p.parse_args()
    args.repeats = args.repeats or (1 if args.size == "quick" else 2)
    budget, default = thread_budget(env=_env()), torch_default_threads()
    print(f"(c) this process: {budget.why()}; torch's default here: {default} threads")
    work = Path(tempfile.mkdtemp(prefix="snowfire-threads-"))
    try:
        data, store = prepare(work, args.size)
        times = bench_jobs(data, store, args, default)
        seq = report.median(times["back to back"])
        rows = [
            {
                "case": name,
                "seconds": f"{report.median(t):.1f}",
                "/ back to back": f"{report.median(t) / seq:.2f}",
            }
            for name, t in times.items()
        ]
        print("(a) two ❄️ trainings and one 🔥 run")
        print(report.table(rows, ["case", "seconds", "/ back to back"]))
        embed = {
            "budgeted": bench_embed(work, args.size, _env(**threads_env(2, budget)), args.seed),
            "unbudgeted": bench_embed(
                work, args.size, _env(**{THREADS_ENV: str(default)}), args.seed
            ),
        }
        erows = [
            {
                "case": name,
                "idle p99": f"{idle * 1e3:.0f} ms",
                "loaded p99": f"{loaded * 1e3:.0f} ms",
                "loaded / idle": f"{loaded / idle:.2f}",
            }
            for name, (idle, loaded) in embed.items()
        ]
        print("(b) /v1/embed beside a 🔥 run")
        print(report.table(erows, ["case", "idle p99", "loaded p99", "loaded / idle"]))
        report.save(
            "threads",
            args,
            {
                "budget": budget.to_json(),
                "torch_default_threads": default,
                "jobs_seconds": times,
                "jobs_ratio": {k: report.median(t) / seq for k, t in times.items()},
                "embed_p99": {k: {"idle": i, "loaded": lo} for k, (i, lo) in embed.items()},
            },
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
