"""What length-bucketed batches buy on a CPU, for 🔥 and for a ❄️ head: the same training steps
with random batches (pool 0, runs made before the option) and with length-bucketed ones (the
default pool of 50 batches), alternating.

🔥: the first `--steps` batches of an epoch (`finetune.epoch_batches`, batch 32) of STS-B train
pairs (the shipped sample, or `--data DIR`'s split) through the bundled MiniLM: collate,
forward, loss, backward, AdamW step. ❄️: the same split's all-layer features extracted into a
temporary store, then the first `--steps` batches of `FeatureSource.iterate` (what `snowfire
train` draws) through the paper's ESIM head: collate, forward, loss, backward, AdamW step.
Printed per side: examples/s of each plan, its share of padding (🔥: word pieces of the joint
input; ❄️: tokens of the longer text of each pair, the length ESIM pads both texts to), and
bucketed / random examples/s.

    python benchmarks/batch_buckets.py [--steps 12] [--repeats 3] [--data DIR] [--side both]
        [--json]
"""

from __future__ import annotations

import sys
import tempfile
import time

import report


def fire_plans(args, data: str, train: list):
    """🔥's steps: {plan: one repeat's work}, {plan: (examples, padding share)}."""
    import torch

    from snowfire.finetune import FinetuneConfig, build_model, epoch_batches, to_device
    from snowfire.tasks import example_length, get_task

    cfg = FinetuneConfig(encoder="minilm", task="stsb", data=data, out="-", progress=False)
    model, _ = build_model(cfg, get_task("stsb"))
    model.train()
    optimizer = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=1e-5)
    lengths = [example_length(e) for e in train]
    work, shape = {}, {}
    for name, pool in (("random", 0), ("bucketed", 50)):
        batches = epoch_batches(lengths, 32, pool, args.seed, 1)[: args.steps]
        collated = [model.collate([train[i] for i in b]) for b in batches]
        real = sum(int(c["attention_mask"].sum()) for c in collated)
        total = sum(c["attention_mask"].numel() for c in collated)
        shape[name] = (sum(len(b) for b in batches), 1 - real / total)

        def run(_: int, batches=batches) -> None:
            for b in batches:
                batch = to_device(model.collate([train[i] for i in b]), torch.device("cpu"))
                _, loss = model(batch)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()

        work[name] = run
    return work, shape


def snow_plans(args, data: str, train: list, store: str):
    """❄️ ESIM's steps on features extracted into `store`, as `fire_plans`."""
    import numpy as np
    import torch

    import snowfire
    from snowfire.extractor import ExtractConfig
    from snowfire.heads import FeatureSource, build_head, collate, task_targets
    from snowfire.tasks import get_task

    spec = get_task("stsb")
    extract = ExtractConfig(
        encoder="minilm", task="stsb", data=data, store=store, split=["train"], progress=False
    )
    (info,) = snowfire.extract(extract)
    reader = snowfire.open_store(store)
    source = FeatureSource(reader, info, None, max_bytes=8 * 10**9)
    targets = task_targets(spec, train)
    head = build_head(
        "esim", kind=spec.kind, pair=True, num_layers=info.num_layers, dim=info.dim, num_labels=1
    )
    head.train()
    optimizer = torch.optim.AdamW(head.parameters(), lr=1e-3)
    work, shape = {}, {}
    for name, pool in (("random", 0), ("bucketed", 50)):
        it = source.iterate(32, np.random.default_rng(args.seed), pool)
        batches = [next(it) for _ in range(min(args.steps, -(-len(train) // 32)))]
        real = padded = 0
        for _, eb in batches:
            a = eb.pair_starts  # tokens of text a (b starts there, relative to the example)
            longer = np.maximum(a, np.diff(eb.offsets) - a)
            real, padded = real + int(longer.sum()), padded + int(longer.max()) * len(longer)
        shape[name] = (sum(len(idx) for idx, _ in batches), 1 - real / padded)

        def run(_: int, batches=batches) -> None:
            for idx, eb in batches:
                _, loss = head(collate(eb, targets[idx], kind=spec.kind))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()

        work[name] = run
    return work, shape


def main() -> None:
    p = report.parser(__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--data", default=None, help="a data directory with stsb/ (default: demo)")
    p.add_argument("--side", choices=("fire", "snow", "both"), default="both")
    args = p.parse_args()

    import numpy as np

    from snowfire.tasks import DEMO_DATA_DIR, example_length, get_task, read_split

    data = args.data or str(DEMO_DATA_DIR)
    train = read_split(get_task("stsb"), data, "train")
    record = {
        "mean_words": float(np.mean([example_length(e) for e in train])),
        "train_examples": len(train),
    }
    sides = ("fire", "snow") if args.side == "both" else (args.side,)
    with tempfile.TemporaryDirectory() as store:
        for side in sides:
            t0 = time.perf_counter()
            work, shape = (
                fire_plans(args, data, train)
                if side == "fire"
                else snow_plans(args, data, train, store)
            )
            times = report.interleaved(work, args.repeats, shuffle=args.seed)
            rate = {n: shape[n][0] / report.median(times[n]) for n in work}
            rows = [
                {
                    "case": f"{side} {n}",
                    "examples/s": f"{rate[n]:.1f}",
                    "padding": f"{shape[n][1]:.0%}",
                    "seconds": report.spread(times[n]),
                }
                for n in work
            ]
            print(report.table(rows, ["case", "examples/s", "padding", "seconds"]))
            ratio = rate["bucketed"] / rate["random"]
            print(
                f"{side}: bucketed / random examples/s: {ratio:.2f}  "
                f"({time.perf_counter() - t0:.0f} s)\n"
            )
            record[side] = {
                "examples_per_s": rate,
                "ratio": ratio,
                "padding": {n: shape[n][1] for n in work},
            }
    report.save("batch_buckets", args, record)


if __name__ == "__main__":
    sys.exit(main())
