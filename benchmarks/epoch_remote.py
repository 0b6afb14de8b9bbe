"""One ❄️ training epoch fed from `snowfire serve` vs from the local store, on the same set.

The trainer's own feature source (heads.data.FeatureSource) streams the set in blocks of
`--block` examples in storage order, prefetching the next block in a thread while the head
trains on the current one; here it reads either the store directly or `cache.RemoteStore`
against `snowfire serve` (a subprocess on 127.0.0.1). The head is a real ❄️ head (a scalar
mix of all layers and an MLP, `--head`) taking an AdamW step per batch of 32 on random
binary labels: the speed of the epoch, not what it learns, is measured. The store is the
synthetic MiniLM-shaped one of store_read.py (L=7 x D=384 float16). The two feeds alternate
for `--repeats` epochs each; medians are compared:

    ratio remote/local = epoch time fed over REST / epoch time fed locally  (1.0: free)

also printed: the same epoch with the features already in memory (no reads at all), so the
share of the epoch spent waiting on features shows. Over REST each block is read in pages
(cache/paging.py; a block of 512 examples is about 96 MB: two pages at the default 64 MiB,
`--page-bytes` for another bound).

    python benchmarks/epoch_remote.py [--examples 3000] [--repeats 3] [--head mlp] [--json]
                                      [--page-bytes N]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import report
import torch
from rest_vs_inprocess import start_server
from store_read import L, build

from snowfire.cache import RemoteStore
from snowfire.heads import FeatureSource, build_head, collate
from snowfire.jobs import free_port, stop_process


def epoch(source: FeatureSource, head, optim, labels: np.ndarray, seed: int) -> int:
    """One shuffled pass with a step per batch; returns the examples seen."""
    seen = 0
    for idx, eb in source.iterate(32, np.random.default_rng(seed)):
        batch = collate(eb, labels[idx].tolist(), kind="classification")
        _, loss = head(batch)
        optim.zero_grad()
        loss.backward()
        optim.step()
        seen += len(idx)
    return seen


def main() -> int:
    p = report.parser(__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=3000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--block", type=int, default=512, help="examples per streamed read")
    p.add_argument("--head", default="mlp")
    p.add_argument("--page-bytes", type=int, default=None, help="RemoteStore's page bound")
    args = p.parse_args()
    torch.manual_seed(args.seed)
    with tempfile.TemporaryDirectory(prefix="snowfire-bench-") as tmp:
        root = Path(tmp)
        print(f"building {args.examples} synthetic examples in {root} ...")
        store, fs_id, *_ = build(root, args.examples, args.seed)
        info = store.get_featureset(fs_id)
        labels = np.random.default_rng(args.seed).integers(0, 2, args.examples)
        head = build_head(
            args.head, kind="classification", pair=False, num_layers=L, dim=info.dim, num_labels=2
        )
        optim = torch.optim.AdamW(head.parameters(), lr=1e-3)
        port = free_port()
        server = start_server(store.path, port, root / "serve.log")
        try:
            remote = RemoteStore(f"http://127.0.0.1:{port}", page_bytes=args.page_bytes)
            block = args.block
            sources = {
                "local store": FeatureSource(store, info, None, max_bytes=0, block_examples=block),
                "REST": FeatureSource(remote, info, None, max_bytes=0, block_examples=block),
                "in memory": FeatureSource(store, info, None, max_bytes=1 << 40),
            }
            assert sources["REST"].streaming and sources["local store"].streaming
            cases = {
                name: (lambda r, s=s: epoch(s, head, optim, labels, args.seed + r))
                for name, s in sources.items()
            }
            report.interleaved(cases, 1)  # warm-up: maps, connections, allocator
            times = report.interleaved(cases, args.repeats)
        finally:
            stop_process(server, grace=30)
    med = {k: report.median(v) for k, v in times.items()}
    rows = [
        {
            "case": k,
            "epochs": len(v),
            "median [IQR]": report.spread(v),
            "examples/s": f"{args.examples / med[k]:.0f}",
        }
        for k, v in times.items()
    ]
    print()
    print(report.table(rows, ["case", "epochs", "median [IQR]", "examples/s"]))
    ratios = {
        "epoch remote/local": med["REST"] / med["local store"],
        "epoch local/in-memory": med["local store"] / med["in memory"],
    }
    print()
    for name, value in ratios.items():
        print(f"ratio {name} = {value:.2f}")
    report.save(
        "epoch_remote",
        args,
        {"median_seconds": med, "ratios": ratios, "examples": args.examples, "head": args.head},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
