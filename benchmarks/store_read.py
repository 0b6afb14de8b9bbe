"""Reading examples from the store vs from a raw numpy memmap of the same float16 bytes.

A synthetic pool shaped like MiniLM (L=7 layers x D=384, float16) of `--examples` examples of
10-60 tokens is written through the real Store API (ensure_pool, writer, write_segment,
write_featureset), segmented and ordered as `extractor.extract` does it (by length, ~64 MB per
segment), and the feature set lists the examples in their original order. The baseline is one
flat (N, L, D) float16 file in feature-set order with its offsets, read through np.memmap: the
least any reader of these bytes can do. Both are read from the page cache (the store was just
written), so this measures per-call overhead and copies, not the disk.

    (a) latency of one random example: all layers, and one layer (the last)
    (b) throughput of 256 random examples in one call (Store.read with 256 indices)
    (c) opening the set in a fresh Store (manifest and keys read, parsed and checked): what
        the first read of a process pays once, not per read

Printed ratios are store / memmap (1.0 = as fast as the raw bytes).

    python benchmarks/store_read.py [--examples 5000] [--singles 300] [--batches 15] [--json]
        [--order shuffled|fixed] [--opens 50]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import report

from snowfire.cache import Store, digest, example_key

L, D = 7, 384  # MiniLM: embeddings + 6 layers, hidden 384
DTYPE = "float16"
SEGMENT_TOKENS = (64 << 20) // (L * D * 2)  # extractor.extract's default segment size


def build(root: Path, n: int, seed: int):
    """Write the store and the flat file; return (store, fs_id, memmap, offsets, locations).

    locations[i] = (segment folder, start, end) of feature-set example i, for the zarr-only row.
    """
    rng = np.random.default_rng(seed)
    lengths = rng.integers(10, 61, size=n)  # (n,) tokens per example
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)  # (n + 1,)
    flat_path = root / "flat.f16"
    flat = np.lib.format.open_memmap(
        flat_path, mode="w+", dtype=np.float16, shape=(int(offsets[-1]), L, D)
    )  # (N, L, D)
    step = 8192
    for s in range(0, flat.shape[0], step):
        block = rng.standard_normal((min(step, flat.shape[0] - s), L, D), dtype=np.float32)
        flat[s : s + len(block)] = block  # (step, L, D)
    flat.flush()

    store = Store(root / "store")
    identity = {"kind": "synthetic", "name": "minilm-shaped", "num_layers": L, "dim": D}
    pool = store.ensure_pool(identity, DTYPE, L, D)
    keys = [example_key(pool, {"a": [f"example-{i}"], "b": None}) for i in range(n)]
    order = sorted(range(n), key=lambda i: (int(lengths[i]), i))  # extract's storage order
    segments, current, size = [], [], 0
    for i in order:
        current.append(i)
        size += int(lengths[i])
        if size >= SEGMENT_TOKENS:
            segments.append(current)
            current, size = [], 0
    if current:
        segments.append(current)
    locations: list[tuple[Path, int, int]] = [None] * n  # type: ignore[list-item]
    seg_root = store.path / "pools" / pool / "segments"
    with store.writer(pool):
        for members in segments:
            seg_keys = [keys[i] for i in members]
            seg_id = digest(seg_keys, 24)
            parts, pos = [], 0
            for i in members:
                feats = np.asarray(flat[offsets[i] : offsets[i + 1]])  # (S, L, D)
                s_len = feats.shape[0]
                word_ids = np.arange(s_len, dtype=np.int32) - 1
                word_ids[0] = word_ids[-1] = -1
                parts.append((feats, word_ids, np.zeros(s_len, np.int8), -1))
                locations[i] = (seg_root / seg_id, pos, pos + s_len)
                pos += s_len
            store.write_segment(pool, seg_id, seg_keys, parts, DTYPE)
    manifest = {
        "id": f"synthetic-{n}",
        "task": None,
        "split": None,
        "encoder": identity,
        "encoder_id": pool,
        "dtype": DTYPE,
        "num_layers": L,
        "dim": D,
    }
    info = store.write_featureset(manifest, keys)
    mm = np.load(flat_path, mmap_mode="r")  # (N, L, D) read-only view of the same bytes
    return Store(store.path), info.id, mm, offsets, locations, len(segments)


def main() -> int:
    p = report.parser(__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=5000)
    p.add_argument("--singles", type=int, default=300, help="random examples for latency")
    p.add_argument("--batch", type=int, default=256, help="examples per throughput read")
    p.add_argument("--batches", type=int, default=15, help="throughput repeats")
    p.add_argument("--opens", type=int, default=50, help="fresh opens of the set, timed")
    p.add_argument("--keep", default=None, help="build the store here and keep it")
    p.add_argument(
        "--order",
        choices=("shuffled", "fixed"),
        default="shuffled",
        help="the cases' order in each round: shuffled (seeded), or fixed "
        "(memmap always right after the store read of the same bytes)",
    )
    args = p.parse_args()
    import zarr

    tmp = None
    if args.keep:
        root = Path(args.keep)
        root.mkdir(parents=True, exist_ok=False)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="snowfire-bench-")
        root = Path(tmp.name)
    print(f"building {args.examples} examples (L={L}, D={D}, {DTYPE}) in {root} ...")
    store, fs_id, mm, offsets, locations, n_segments = build(root, args.examples, args.seed)
    n_tokens = int(offsets[-1])
    print(
        f"{n_tokens} tokens, {n_tokens * L * D * 2 / 2**20:.0f} MB, {n_segments} segments, "
        f"mean {n_tokens / args.examples:.1f} tokens/example"
    )
    rng = np.random.default_rng(args.seed + 1)
    last = L - 1
    zarr_arrays = {}

    def zarr_slice(i: int, layer: int | None = None) -> np.ndarray:
        """The zarr array read alone (no Store bookkeeping), for the breakdown."""
        seg, s, e = locations[i]
        if seg not in zarr_arrays:
            zarr_arrays[seg] = zarr.open_array(str(seg / "features"), mode="r")
        a = zarr_arrays[seg]
        return a[s:e] if layer is None else a[s:e, layer : layer + 1]

    # correctness first: the two sides hold the same bytes
    for i in rng.choice(args.examples, 5, replace=False).tolist():
        got = store.read(fs_id, indices=[i]).features
        assert np.array_equal(got, mm[offsets[i] : offsets[i + 1]]), i
        got = store.read(fs_id, indices=[i], layers=[last]).features
        assert np.array_equal(got, mm[offsets[i] : offsets[i + 1], last : last + 1]), i

    # (a) one example
    singles = rng.integers(0, args.examples, size=args.singles).tolist()
    cases = {
        "store all layers": lambda r: store.read(fs_id, indices=[singles[r]]),
        "memmap all layers": lambda r: np.array(mm[offsets[singles[r]] : offsets[singles[r] + 1]]),
        "zarr slice all layers": lambda r: zarr_slice(singles[r]),
        "store one layer": lambda r: store.read(fs_id, indices=[singles[r]], layers=[last]),
        "memmap one layer": lambda r: np.array(
            mm[offsets[singles[r]] : offsets[singles[r] + 1], last : last + 1]
        ),
        "zarr slice one layer": lambda r: zarr_slice(singles[r], last),
    }
    shuffle = args.seed if args.order == "shuffled" else None
    report.interleaved(cases, min(20, args.singles))  # warm caches and open segments
    single = report.interleaved(cases, args.singles, shuffle)

    # (b) a batch of random examples
    batches = [
        rng.choice(args.examples, args.batch, replace=False).tolist() for _ in range(args.batches)
    ]

    def memmap_batch(r: int) -> np.ndarray:
        return np.concatenate([mm[offsets[i] : offsets[i + 1]] for i in batches[r]])

    bulk_cases = {
        "store batch": lambda r: store.read(fs_id, indices=batches[r]),
        "memmap batch": memmap_batch,
    }
    report.interleaved(bulk_cases, 1)
    bulk = report.interleaved(bulk_cases, args.batches, shuffle)
    batch_bytes = float(
        np.median([sum(int(offsets[i + 1] - offsets[i]) for i in b) * L * D * 2 for b in batches])
    )

    # (c) opening the set: a fresh Store each time
    open_cases = {
        "open set (manifest + keys)": lambda r: Store(store.path).featureset_keys(fs_id),
    }
    report.interleaved(open_cases, 3)
    opened = report.interleaved(open_cases, args.opens)

    timed = {**single, **bulk, **opened}
    med = {k: report.median(v) for k, v in timed.items()}
    rows = [
        {"case": k, "calls": len(v), "median [IQR]": report.spread(v)} for k, v in timed.items()
    ]
    for row in rows:
        if "batch" in row["case"]:
            row["MB/s"] = f"{batch_bytes / 2**20 / med[row['case']]:.0f}"
    print()
    print(report.table(rows, ["case", "calls", "median [IQR]", "MB/s"]))
    ratios = {
        "one example, all layers: store/memmap": med["store all layers"] / med["memmap all layers"],
        "one example, one layer: store/memmap": med["store one layer"] / med["memmap one layer"],
        f"{args.batch} examples: store/memmap": med["store batch"] / med["memmap batch"],
        "one example, all layers: zarr slice/store (share of Store.read in zarr)": med[
            "zarr slice all layers"
        ]
        / med["store all layers"],
    }
    print()
    for name, value in ratios.items():
        print(f"ratio {name} = {value:.2f}")
    report.save(
        "store_read",
        args,
        {
            "examples": args.examples,
            "order": args.order,
            "tokens": n_tokens,
            "segments": n_segments,
            "batch_feature_bytes_median": batch_bytes,
            "median_seconds": med,
            "ratios": ratios,
        },
    )
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
