"""N clients x T seconds against a live service: /features and /v1/embed (cached and new texts).

`snowfire serve --home H --encoder minilm` and `snowfire worker --kind extract --home H` run in
subprocesses on 127.0.0.1; the store holds the synthetic MiniLM-shaped set of store_read.py
(for /features) and, after a warm-up, `--cached` real sentences embedded once (for cached
/embed). Each client loops over three requests in turn, as safetensors:

    features     32 random examples of the synthetic set, all layers
    embed-hit    8 sentences from the cached pool (all hits)
    embed-new    8 sentences made of random words (all misses: encoded, stored, returned)

Halfway through, an extract job (`--job-lines` sentences) is submitted over REST; the run waits
for it to finish. Printed per request kind: count, p50 and p99 latency, MB/s of bodies, errors
(must be 0), and the ratio of the loaded p50 to the p50 of the same request made alone before
the load (1.0: the load costs nothing).

    python benchmarks/load.py [--clients 8] [--seconds 20] [--examples 2000] [--json]

`--overload N` runs the back-pressure case instead (api/limits.py): the service started with
`--max-in-flight N`, one client alone, then 4N clients that wait Retry-After when refused;
printed: accepted p99 / unloaded p99 per request kind, the refusals' latency, and the errors
other than 429/503 (must be 0).

    python benchmarks/load.py --overload 2 [--seconds 20] [--json]
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import report
from store_read import build

from snowfire.jobs import free_port, stop_process, stop_processes, wait_healthy

ROOT = Path(__file__).resolve().parent.parent
WORDS = (
    "the a man woman dog cat plays runs guitar piano park street quick brown fox lazy good "
    "bad movie film great story people food bike car water little big old young"
).split()


def _start(cmd: list[str], log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "snowfire.cli", *cmd],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _serve(home: Path, cached: list[str], *flags: str) -> tuple[str, subprocess.Popen]:
    """`snowfire serve --home HOME` (the bundled encoder, `flags`) on a free port, once it
    answers /healthz and has embedded `cached` (the warm-up: the cached pool); its URL and
    process."""
    import httpx

    url = f"http://127.0.0.1:{(port := free_port())}"
    cmd = ["serve", "--home", str(home), "--port", str(port), "--encoder", "minilm", *flags]
    proc = _start(cmd, home / "serve.log")
    try:
        wait_healthy(url, proc, home / "serve.log", timeout=120)
        for i in range(0, len(cached), 64):
            httpx.post(f"{url}/v1/embed", json={"texts": cached[i : i + 64]}, timeout=300)
    except BaseException:
        stop_process(proc)
        raise
    return url, proc


def _sentences(n: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20))) for _ in range(n)]


class Client(threading.Thread):
    def __init__(
        self,
        url: str,
        fs_id: str,
        n_examples: int,
        cached: list[str],
        seed: int,
        stop: threading.Event,
    ):
        super().__init__(daemon=True)
        self.url, self.fs_id, self.n, self.cached, self.stop = url, fs_id, n_examples, cached, stop
        self.rng = random.Random(seed)
        self.samples: dict[str, list[tuple[float, int]]] = {k: [] for k in KINDS}
        self.errors: list[str] = []

    def request(self, http, kind: str) -> tuple[float, int]:
        took, r = self.send(http, kind)
        if r.status_code != 200:
            raise RuntimeError(f"{kind}: {r.status_code} {r.text[:200]}")
        return took, len(r.content)

    def send(self, http, kind: str):
        """(seconds, response) of one request of `kind`."""
        if kind == "features":
            path = f"/v1/featuresets/{self.fs_id}/features"
            body = {"indices": self.rng.sample(range(self.n), 32)}
        elif kind == "embed-hit":
            path, body = "/v1/embed", {"texts": self.rng.sample(self.cached, 8)}
        else:
            path, body = "/v1/embed", {"texts": _sentences(8, self.rng)}
        start = time.perf_counter()
        r = http.post(self.url + path, json=body)
        return time.perf_counter() - start, r

    def run(self) -> None:
        import httpx

        with httpx.Client(timeout=120) as http:
            i = 0
            while not self.stop.is_set():
                kind = KINDS[i % len(KINDS)]
                i += 1
                try:
                    self.samples[kind].append(self.request(http, kind))
                except Exception as err:  # noqa: BLE001 - counted and reported
                    self.errors.append(str(err))


KINDS = ("features", "embed-hit", "embed-new")


class Bounded(Client):
    """A client of a bounded service: a 429/503 is a refusal, timed, and the client waits its
    Retry-After (x U(0.5, 1.5): refused clients do not come back in step); anything else but a
    200 is an error."""

    def run(self) -> None:
        import httpx

        self.refused: list[float] = []
        with httpx.Client(timeout=120) as http:
            i = 0
            while not self.stop.is_set():
                kind = KINDS[i % len(KINDS)]
                i += 1
                try:
                    took, r = self.send(http, kind)
                except Exception as err:  # noqa: BLE001 - counted and reported
                    self.errors.append(f"{kind}: {err}")
                    continue
                if r.status_code == 200:
                    self.samples[kind].append((took, len(r.content)))
                elif r.status_code in (429, 503) and r.headers.get("Retry-After"):
                    self.refused.append(took)
                    self.stop.wait(float(r.headers["Retry-After"]) * self.rng.uniform(0.5, 1.5))
                else:
                    self.errors.append(f"{kind}: {r.status_code} {r.text[:200]}")


def _phase(url, fs_id, args, cached, clients: int, seconds: float) -> list[Bounded]:
    stop = threading.Event()
    running = [
        Bounded(url, fs_id, args.examples, cached, args.seed + i, stop) for i in range(clients)
    ]
    for c in running:
        c.start()
    time.sleep(seconds)
    stop.set()
    for c in running:
        c.join()
    return running


def _p(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs), q)) if xs else float("nan")


def overload(args) -> int:
    """--overload N: the service bounded to N requests in flight (--max-in-flight N); one client
    alone (the unloaded latencies), then 4N clients. Printed per request kind: the accepted
    p99 over the unloaded p99, the refused answers' p99 over the unloaded p50, and the errors
    other than 429/503 with Retry-After (must be 0)."""
    import httpx

    n, rng = args.overload, random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="snowfire-overload-") as tmp:
        home = Path(tmp)
        print(f"building {args.examples} synthetic examples in {home}/store ...")
        _, fs_id, *_ = build(home, args.examples, args.seed)
        cached = _sentences(args.cached, rng)
        url, serve = _serve(home, cached, "--max-in-flight", str(n))
        try:
            alone = _phase(url, fs_id, args, cached, 1, args.seconds / 2)
            loaded = _phase(url, fs_id, args, cached, 4 * n, args.seconds)
            metrics = httpx.get(f"{url}/metrics", timeout=30).text
        finally:
            stop_process(serve)
    counted = [ln for ln in metrics.splitlines() if ln.startswith("snowfire_refused_total")]
    refused = [t for c in loaded for t in c.refused]
    errors = [e for c in alone + loaded for e in c.errors]
    base = {k: [t for c in alone for t, _ in c.samples[k]] for k in KINDS}
    rows, record = [], {"bound": n, "clients": 4 * n, "kinds": {}}
    for kind in KINDS:
        got = [t for c in loaded for t, _ in c.samples[kind]]
        r = {"alone p99": _p(base[kind], 99), "accepted": len(got), "accepted p99": _p(got, 99)}
        r["p99 ratio"] = r["accepted p99"] / r["alone p99"]
        record["kinds"][kind] = r
        rows.append(
            {
                "request": kind,
                "alone p99 ms": f"{r['alone p99'] * 1e3:.0f}",
                "accepted": len(got),
                "accepted p99 ms": f"{r['accepted p99'] * 1e3:.0f}",
                "accepted p99 / alone p99": f"{r['p99 ratio']:.2f}",
            }
        )
    fastest = min(_p(base[k], 50) for k in KINDS)
    print(f"\nbound {n} in flight, {4 * n} clients x {args.seconds:.0f} s (one alone before)")
    print(report.table(rows, list(rows[0])))
    print(
        f"refused: {len(refused)} (429/503 with Retry-After), p50 {_p(refused, 50) * 1e3:.1f} ms"
        f", p99 {_p(refused, 99) * 1e3:.1f} ms = {_p(refused, 99) / fastest:.2f} x the fastest "
        f"request's unloaded p50; /metrics: {'; '.join(counted)}"
    )
    print(f"errors other than 429/503: {len(errors)}")
    for e in errors[:5]:
        print("error:", e)
    record.update(
        {
            "refused": len(refused),
            "refused_p50": _p(refused, 50),
            "refused_p99": _p(refused, 99),
            "errors": len(errors),
        }
    )
    report.save("load_overload", args, record)
    return 0 if not errors else 1


def _job(url: str, home: Path, lines: int, rng: random.Random) -> dict:
    import httpx

    (home / "job.txt").write_text("\n".join(_sentences(lines, rng)) + "\n")
    body = {"kind": "extract", "params": {"encoder": "minilm", "input": "job.txt"}}
    job = httpx.post(f"{url}/v1/jobs", json=body, timeout=30).json()
    job["submitted"] = time.monotonic()
    return job


def main() -> int:
    p = report.parser(__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--examples", type=int, default=2000, help="synthetic examples for /features")
    p.add_argument("--cached", type=int, default=400, help="sentences embedded before the load")
    p.add_argument("--job-lines", type=int, default=200)
    p.add_argument(
        "--overload",
        type=int,
        metavar="N",
        help="instead: a service bounded to N in flight, 4N clients",
    )
    args = p.parse_args()
    if args.overload:
        return overload(args)
    import httpx

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="snowfire-load-") as tmp:
        home = Path(tmp)
        print(f"building {args.examples} synthetic examples in {home}/store ...")
        _, fs_id, *_ = build(home, args.examples, args.seed)
        cached = _sentences(args.cached, rng)
        url, serve = _serve(home, cached)
        worker = _start(["worker", "--kind", "extract", "--home", str(home)], home / "worker.log")
        try:
            stop = threading.Event()
            alone = Client(url, fs_id, args.examples, cached, args.seed + 99, stop)
            with httpx.Client(timeout=120) as http:  # each request alone, 5 times
                idle = {
                    k: report.median([alone.request(http, k)[0] for _ in range(5)]) for k in KINDS
                }
            clients = [
                Client(url, fs_id, args.examples, cached, args.seed + i, stop)
                for i in range(args.clients)
            ]
            started = time.monotonic()
            for c in clients:
                c.start()
            time.sleep(args.seconds / 2)
            job = _job(url, home, args.job_lines, rng)
            time.sleep(max(0.0, started + args.seconds - time.monotonic()))
            stop.set()
            for c in clients:
                c.join()
            elapsed = time.monotonic() - started
            while True:  # the job submitted mid-load must finish
                state = httpx.get(f"{url}/v1/jobs/{job['id']}", timeout=30).json()
                if state["status"] in ("done", "failed", "cancelled"):
                    break
                if time.monotonic() - job["submitted"] > 600:
                    state["status"] = "timed out"
                    break
                time.sleep(0.5)
            job_seconds = time.monotonic() - job["submitted"]
        finally:
            stop_processes((worker, serve))

    rows, record = [], {"kinds": {}}
    errors = [e for c in clients for e in c.errors]
    for kind in KINDS:
        samples = [s for c in clients for s in c.samples[kind]]
        lat = np.array([t for t, _ in samples]) if samples else np.zeros(1)
        mb = sum(b for _, b in samples) / 2**20
        p50, p99 = float(np.percentile(lat, 50)), float(np.percentile(lat, 99))
        row = {
            "request": kind,
            "count": len(samples),
            "p50 ms": f"{p50 * 1e3:.0f}",
            "p99 ms": f"{p99 * 1e3:.0f}",
            "MB/s": f"{mb / elapsed:.1f}",
            "alone p50 ms": f"{idle[kind] * 1e3:.0f}",
            "loaded/alone": f"{p50 / idle[kind]:.1f}",
        }
        rows.append(row)
        record["kinds"][kind] = {
            "count": len(samples),
            "p50": p50,
            "p99": p99,
            "mb_per_s": mb / elapsed,
            "alone_p50": idle[kind],
        }
    print(f"\n{args.clients} clients x {elapsed:.1f} s, {len(errors)} errors")
    print(report.table(rows, list(rows[0])))
    print(
        f"\nextract job of {args.job_lines} sentences submitted mid-load: {state['status']} "
        f"after {job_seconds:.1f} s"
    )
    for e in errors[:5]:
        print("error:", e)
    record.update(
        {
            "errors": len(errors),
            "job_status": state["status"],
            "job_seconds": job_seconds,
            "elapsed": elapsed,
        }
    )
    report.save("load", args, record)
    return 0 if not errors and state["status"] == "done" else 1


if __name__ == "__main__":
    sys.exit(main())
