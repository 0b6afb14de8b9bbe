"""256 random examples over REST (safetensors, cache.RemoteStore) vs Store.read in-process.

The store is the synthetic MiniLM-shaped one of store_read.py (L=7 x D=384 float16, 10-60
tokens per example). `snowfire serve` (python -m snowfire.cli serve) runs in a subprocess on
127.0.0.1 at a free port; the client and the server share the machine's cores. Each round
reads the same random selection both ways; the cases alternate and medians are compared:

    ratio rest/inprocess = RemoteStore.read time / Store.read time   (1.0: REST costs nothing)

A third case is the floor any service on this machine has: a bare TCP socket on 127.0.0.1
between two processes moving the same number of bytes (a buffer filled beforehand, sent in 4
MiB pieces; received into a fresh numpy buffer as RemoteStore does), with no HTTP and no read.
It prints bare/inprocess (what the loopback alone costs against the in-process read) and
rest/bare (what snowfire's HTTP path adds on top of moving the bytes). A fourth moves the same
bytes as two halves over two connections at once (a sending thread each, a receiving thread
each): what spreading one read over both cores would gain.

MB/s counts the feature bytes delivered (N tokens x L x D x 2). RemoteStore reads in pages
(cache/paging.py): at the default bound (64 MiB) a read of 256 examples is one page;
`--page-bytes` sets another, to see what smaller pages cost.

    python benchmarks/rest_vs_inprocess.py [--examples 3000] [--batch 256] [--repeats 11]
                                           [--page-bytes N]
"""

from __future__ import annotations

import multiprocessing
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import report
from store_read import build

from snowfire.cache import RemoteStore
from snowfire.jobs import free_port, stop_process, wait_healthy

ROOT = Path(__file__).resolve().parent.parent


def bare_server(listener: socket.socket, size: int, connections: int) -> None:
    """On each of `connections` connections (a thread each), answer each 8-byte length with
    that many bytes of one buffer, until the client leaves."""
    data = memoryview(np.random.default_rng(0).integers(0, 256, size, dtype=np.uint8))

    def answer(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while head := conn.recv(8, socket.MSG_WAITALL):
            (n,) = struct.unpack("<Q", head)
            for i in range(0, n, 4 << 20):
                conn.sendall(data[i : min(n, i + (4 << 20))])

    threads = [
        threading.Thread(target=answer, args=(listener.accept()[0],)) for _ in range(connections)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _receive(conn: socket.socket, view: memoryview) -> None:
    conn.sendall(struct.pack("<Q", len(view)))
    got = 0
    while got < len(view):
        got += conn.recv_into(view[got:], len(view) - got)


def bare_fetch(conns: list[socket.socket], n: int) -> np.ndarray:
    """n bytes from bare_server into a fresh buffer, split evenly over `conns` at once."""
    buf = np.empty(n, dtype=np.uint8)
    step = -(-n // len(conns))
    parts = [(c, memoryview(buf)[i * step : min(n, (i + 1) * step)]) for i, c in enumerate(conns)]
    if len(parts) == 1:
        _receive(*parts[0])
        return buf
    threads = [threading.Thread(target=_receive, args=part) for part in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return buf


def start_server(store_dir: Path, port: int, log: Path) -> subprocess.Popen:
    """`snowfire serve` in a subprocess, once it answers /healthz (its output goes to `log`)."""
    cmd = [sys.executable, "-m", "snowfire.cli", "serve"]
    cmd += ["--store", str(store_dir), "--port", str(port)]
    with open(log, "w") as out:  # a file, not a pipe nobody drains
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, log)
    except RuntimeError:
        stop_process(proc)
        raise
    return proc


def main() -> int:
    p = report.parser(__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=3000)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--repeats", type=int, default=11)
    p.add_argument("--page-bytes", type=int, default=None, help="RemoteStore's page bound")
    args = p.parse_args()

    with tempfile.TemporaryDirectory(prefix="snowfire-bench-") as tmp:
        root = Path(tmp)
        print(f"building {args.examples} synthetic examples in {root} ...")
        store, fs_id, _, offsets, _, _ = build(root, args.examples, args.seed)
        port = free_port()
        server = start_server(store.path, port, root / "serve.log")
        try:
            remote = RemoteStore(f"http://127.0.0.1:{port}", page_bytes=args.page_bytes)
            rng = np.random.default_rng(args.seed + 2)
            batches = [
                rng.choice(args.examples, args.batch, replace=False).tolist()
                for _ in range(args.repeats + 1)
            ]
            # same bytes both ways
            a, b = remote.read(fs_id, indices=batches[0]), store.read(fs_id, indices=batches[0])
            assert np.array_equal(a.features, b.features) and a.keys == b.keys
            assert np.array_equal(a.offsets, b.offsets)
            sizes = [store.read(fs_id, indices=b).features.nbytes for b in batches]
            listener = socket.create_server(("127.0.0.1", 0))
            bare = multiprocessing.get_context("fork").Process(
                target=bare_server, args=(listener, max(sizes), 3), daemon=True
            )
            bare.start()
            conns = [socket.create_connection(listener.getsockname()) for _ in range(3)]
            for conn in conns:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            one, two = conns[:1], conns[1:]
            assert len(bare_fetch(one, sizes[0])) == len(bare_fetch(two, sizes[0])) == sizes[0]
            times = report.interleaved(
                {
                    "in-process Store.read": lambda r: store.read(fs_id, indices=batches[r + 1]),
                    "REST RemoteStore.read": lambda r: remote.read(fs_id, indices=batches[r + 1]),
                    "bare socket, same bytes": lambda r: bare_fetch(one, sizes[r + 1]),
                    "bare, 2 connections": lambda r: bare_fetch(two, sizes[r + 1]),
                },
                args.repeats,
                shuffle=args.seed,
            )
            remote.close()
            for conn in conns:
                conn.close()
            bare.join(10)
        finally:
            stop_process(server, grace=10)

    nbytes = [sum(int(offsets[i + 1] - offsets[i]) for i in b) * 7 * 384 * 2 for b in batches[1:]]
    mb = float(np.median(nbytes)) / 2**20
    med = {k: report.median(v) for k, v in times.items()}
    rows = [
        {
            "case": k,
            "reads": len(v),
            "median [IQR]": report.spread(v),
            "MB/s": f"{mb / med[k]:.0f}",
        }
        for k, v in times.items()
    ]
    print(f"\n{args.batch} random examples per read, median {mb:.1f} MB of features")
    print(report.table(rows, ["case", "reads", "median [IQR]", "MB/s"]))
    ratio = med["REST RemoteStore.read"] / med["in-process Store.read"]
    floor = med["bare socket, same bytes"] / med["in-process Store.read"]
    over = med["REST RemoteStore.read"] / med["bare socket, same bytes"]
    floor2 = med["bare, 2 connections"] / med["in-process Store.read"]
    print(f"\nratio rest/inprocess = {ratio:.2f}")
    print(f"ratio bare/inprocess = {floor:.2f} (the loopback's floor)")
    print(f"ratio rest/bare = {over:.2f} (what the HTTP path adds)")
    print(f"ratio bare 2 connections/inprocess = {floor2:.2f} (the floor with both cores sending)")
    report.save(
        "rest_vs_inprocess",
        args,
        {
            "feature_mb_median": mb,
            "seconds": times,
            "median_seconds": med,
            "ratio_rest_over_inprocess": ratio,
            "ratio_bare_over_inprocess": floor,
            "ratio_rest_over_bare": over,
            "ratio_bare2_over_inprocess": floor2,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
