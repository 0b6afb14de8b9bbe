"""What length-bucketed batches buy 🔥 on a CPU: the same training steps of the bundled MiniLM
on STS-B pairs with random batches (`--bucket-pool 0`, runs made before the field) and with
length-bucketed ones (the default pool of 50 batches), alternating.

Each case takes the first `--steps` batches of an epoch (`finetune.model.epoch_batches`, batch
32) of the shipped STS-B sample (or `--data DIR`'s STS-B train split) and runs the 🔥 loop's
work on them: collate, forward, loss, backward, AdamW step. Printed: examples/s of each, the
share of padding tokens in its batches, and bucketed / random examples/s.

    python benchmarks/batch_buckets.py [--steps 12] [--repeats 3] [--data DIR] [--json]
"""

from __future__ import annotations

import sys
import time

import report


def main() -> None:
    p = report.parser(__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--data", default=None, help="a data directory with stsb/ (default: demo)")
    args = p.parse_args()

    import numpy as np
    import torch

    from finetune import FinetuneConfig, build_model, epoch_batches, example_length, to_device
    from tasks import DEMO_DATA_DIR, get_task, read_split

    data = args.data or str(DEMO_DATA_DIR)
    spec = get_task("stsb")
    train = read_split(spec, data, "train")
    cfg = FinetuneConfig(encoder="minilm", task="stsb", data=data, out="-", progress=False)
    model, _ = build_model(cfg, spec)
    model.train()
    optimizer = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=1e-5)
    lengths = [example_length(e) for e in train]
    plans, padding = {}, {}
    for name, pool in (("random", 0), ("bucketed", 50)):
        batches = epoch_batches(lengths, 32, pool, args.seed, 1)[: args.steps]
        collated = [model.collate([train[i] for i in b]) for b in batches]
        real = sum(int(c["attention_mask"].sum()) for c in collated)
        padding[name] = 1 - real / sum(c["attention_mask"].numel() for c in collated)
        plans[name] = batches

    def step_all(name: str):
        def run(_: int) -> None:
            for b in plans[name]:
                batch = to_device(model.collate([train[i] for i in b]), torch.device("cpu"))
                _, loss = model(batch)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()

        return run

    t0 = time.perf_counter()
    times = report.interleaved({n: step_all(n) for n in plans}, args.repeats, shuffle=args.seed)
    n_ex = {n: sum(len(b) for b in plans[n]) for n in plans}
    rate = {n: n_ex[n] / report.median(times[n]) for n in plans}
    rows = [{"case": n, "examples/s": f"{rate[n]:.1f}", "padding": f"{padding[n]:.0%}",
             "seconds": report.spread(times[n])} for n in plans]  # fmt: skip
    print(report.table(rows, ["case", "examples/s", "padding", "seconds"]))
    ratio = rate["bucketed"] / rate["random"]
    print(f"bucketed / random examples/s: {ratio:.2f}  ({time.perf_counter() - t0:.0f} s)")
    report.save("batch_buckets", args, {
        "examples_per_s": rate, "padding": padding, "ratio": ratio,
        "mean_words": float(np.mean(lengths)), "train_examples": len(train),
    })  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
