"""Reading the store from S3-compatible storage vs from a local directory, and obstore vs s3fs.

A local S3 (moto's server on loopback, its own process) holds a copy of a synthetic
MiniLM-shaped store (store_read.build: L=7 x D=384 float16, 10-60 tokens per example). moto is
a Python server, so absolute times here are moto's more than the network's: what carries over
to a real object store is the number of requests per read and the client's own overhead,
which the ratios show.

    (a) the store: one random example (all layers) and --batch random examples, read through
        the store over obstore (s3://: an ObjectBackend) and over the local directory, in
        turns; ratio bucket / local
    (b) the client (the choice of library): the byte ranges of one example's tiles in one
        shard, and one whole shard object, fetched by obstore and by s3fs (when installed) on
        the same server; ratio s3fs / obstore

    python benchmarks/object_store.py [--examples 3000] [--singles 100] [--batches 8] [--json]
    python benchmarks/object_store.py --clients-only    # (b) alone: needs obstore, s3fs, moto
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import report


def local_s3():
    """The endpoint of moto's S3 server, started as its own process (not in this one: its
    request handling would share our GIL) on loopback; the AWS_* environment set."""
    import atexit
    import shutil
    import subprocess
    import sys
    import time
    import urllib.request

    import boto3

    from snowfire.jobs import free_port

    port = free_port()
    exe = shutil.which("moto_server") or str(Path(sys.executable).parent / "moto_server")
    proc = subprocess.Popen(
        [exe, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(proc.terminate)
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_REGION="us-east-1",
        AWS_ENDPOINT_URL=endpoint,
        AWS_ALLOW_HTTP="true",
    )
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="bench")
    return endpoint


def upload(root: Path, url: str) -> int:
    import obstore
    from obstore.store import from_url

    client = from_url(url)
    files = [p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")]
    for p in files:
        obstore.put(client, str(p.relative_to(root)), p.read_bytes())
    return len(files)


def clients(endpoint: str, repeats: int, seed: int) -> tuple[list[dict], dict[str, float]]:
    """(b): a shard-sized object, one example's tile ranges and the whole object."""
    import obstore
    from obstore.store import from_url

    L, D, tc, shard = 7, 384, 32, 2048  # noqa: N806  (MiniLM's shard of 2048 tokens)
    tile = tc * D * 2
    rng = np.random.default_rng(seed)
    body = rng.bytes(shard // tc * L * tile)  # 11 MB, tiles back to back
    client = from_url("s3://bench/clients")
    obstore.put(client, "shard", body)
    starts_of = []  # per round (2 warm-up rounds too): one 40-token example = 2 chunks x L tiles
    for _ in range(max(repeats, 2)):
        c = int(rng.integers(0, shard // tc - 1))
        starts_of.append([((c + k) * L + layer) * tile for k in (0, 1) for layer in range(L)])
    cases = {
        "obstore ranges": lambda r: obstore.get_ranges(
            client, "shard", starts=starts_of[r], lengths=[tile] * len(starts_of[r])
        ),
        "obstore whole": lambda r: obstore.get(client, "shard").bytes(),
    }
    try:
        import s3fs

        fs = s3fs.S3FileSystem(endpoint_url=endpoint, key="bench", secret="bench")
        path = "bench/clients/shard"

        def s3fs_ranges(r):
            n = len(starts_of[r])
            return fs.cat_ranges([path] * n, starts_of[r], [s + tile for s in starts_of[r]])

        cases["s3fs ranges"] = s3fs_ranges
        cases["s3fs whole"] = lambda r: fs.cat_file(path)
    except ImportError:
        print("s3fs not installed: obstore alone (pip install s3fs for the comparison)")
    for name, fn in cases.items():  # same bytes both ways
        if "ranges" in name:
            got = fn(0)
            assert [bytes(g) for g in got] == [body[s : s + tile] for s in starts_of[0]], name
    report.interleaved(cases, 2)
    times = report.interleaved(cases, repeats)
    med = {k: report.median(v) for k, v in times.items()}
    rows = [
        {"case": k, "calls": len(v), "median [IQR]": report.spread(v)} for k, v in times.items()
    ]
    ratios = {}
    if "s3fs ranges" in med:
        ratios["one example's 14 tile ranges: s3fs/obstore"] = (
            med["s3fs ranges"] / med["obstore ranges"]
        )
        ratios["one 11 MB shard: s3fs/obstore"] = med["s3fs whole"] / med["obstore whole"]
    return rows, ratios


def store_reads(args, endpoint: str) -> tuple[list[dict], dict[str, float]]:
    """(a): the same feature set read from the bucket and from the directory."""
    from store_read import build

    from snowfire.cache import Store, open_store

    tmp = tempfile.TemporaryDirectory(prefix="snowfire-bench-")
    root = Path(tmp.name)
    print(f"building {args.examples} examples ...")
    store, fs_id, _, offsets, _, n_segments = build(root, args.examples, args.seed)
    n = upload(store.path, "s3://bench/store")
    print(f"{n_segments} segments, {n} objects uploaded")
    local, bucket = Store(store.path), open_store("s3://bench/store")
    rng = np.random.default_rng(args.seed + 1)
    singles = rng.integers(0, args.examples, size=args.singles).tolist()
    batches = [
        rng.choice(args.examples, args.batch, replace=False).tolist() for _ in range(args.batches)
    ]
    for i in singles[:3] + batches[0][:3]:  # same values both ways
        a, b = bucket.read(fs_id, indices=[i]), local.read(fs_id, indices=[i])
        assert np.array_equal(a.features, b.features), i
    cases = {
        "bucket one example": lambda r: bucket.read(fs_id, indices=[singles[r]]),
        "local one example": lambda r: local.read(fs_id, indices=[singles[r]]),
    }
    bulk = {
        "bucket batch": lambda r: bucket.read(fs_id, indices=batches[r]),
        "local batch": lambda r: local.read(fs_id, indices=batches[r]),
    }
    report.interleaved(cases, 5)  # each segment's small arrays and shard indexes fetched
    report.interleaved(bulk, 1)
    times = {**report.interleaved(cases, args.singles), **report.interleaved(bulk, args.batches)}
    med = {k: report.median(v) for k, v in times.items()}
    batch_bytes = np.median([sum(int(offsets[i + 1] - offsets[i]) for i in b) for b in batches])
    batch_bytes *= 7 * 384 * 2
    rows = []
    for k, v in times.items():
        row = {"case": k, "calls": len(v), "median [IQR]": report.spread(v)}
        if "batch" in k:
            row["MB/s"] = f"{batch_bytes / 2**20 / med[k]:.0f}"
        rows.append(row)
    ratios = {
        "one example: bucket/local": med["bucket one example"] / med["local one example"],
        f"{args.batch} examples: bucket/local": med["bucket batch"] / med["local batch"],
    }
    tmp.cleanup()
    return rows, ratios


def main() -> int:
    p = report.parser(__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=3000)
    p.add_argument("--singles", type=int, default=100)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--batches", type=int, default=8)
    p.add_argument("--repeats", type=int, default=30, help="client comparison rounds (>= 1)")
    p.add_argument("--clients-only", action="store_true", help="(b) only")
    args = p.parse_args()
    if args.repeats < 1:
        p.error(f"--repeats: at least 1 round, got {args.repeats}")
    endpoint = local_s3()
    rows, ratios = [], {}
    if not args.clients_only:
        r, q = store_reads(args, endpoint)
        rows, ratios = rows + r, {**ratios, **q}
    r, q = clients(endpoint, args.repeats, args.seed)
    rows, ratios = rows + r, {**ratios, **q}
    print()
    print(report.table(rows, ["case", "calls", "median [IQR]", "MB/s"]))
    print()
    for name, value in ratios.items():
        print(f"ratio {name} = {value:.2f}")
    report.save("object_store", args, {"rows": rows, "ratios": ratios})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
