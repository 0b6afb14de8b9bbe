"""Extraction into the store vs the bare encoder forward pass, on the same batches.

`extract` runs the bundled MiniLM (`load_encoder("minilm")`) over `--sentences` real SST-2 dev
sentences from the shipped demo sample into a fresh temporary store (progress off). The bare
pass runs the same model on the same batches (the plan `extract` makes: same texts, same
token-budget bucketing, tokenised beforehand) with output_hidden_states=True and moves the
stacked hidden states to numpy; nothing is stitched or stored. The two alternate, each round
on the same inputs, and the medians are compared:

    ratio bare/extract = bare time / extract time     (1.0: extraction costs nothing extra;
                                                       goal >= 0.9)

One more, instrumented, extraction splits its time into tokenise (encoder.prepare), forward
(model.forward), the rest of encode (padding, stacking, to numpy, stitching), the segment
write (concatenate, float16 check and cast, zarr), fsync, the feature set record, and the
remainder (keys, plan, look-ups).

    python benchmarks/extract_vs_encoder.py [--sentences 800] [--repeats 5] [--json]
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np
import report

from snowfire.cache import Store
from snowfire.extractor import ExtractConfig, TextInput, extract, load_encoder, plan_segments
from snowfire.tasks import DEMO_DATA_DIR, read_split


def bare_batches(encoder, texts: list[TextInput], config: ExtractConfig):
    """The batches `extract` would encode, as ready model inputs: [(inputs, real tokens)]."""
    import torch

    bytes_per_token = encoder.num_layers * encoder.dim * (2 if config.dtype == "float16" else 4)
    seg_tokens = config.segment_tokens or max(256, (64 << 20) // bytes_per_token)
    items = [(str(i), encoder.prepare(i, t)) for i, t in enumerate(texts)]
    out = []
    for seg in plan_segments(encoder, items, config, seg_tokens):  # extract's own batches
        for batch in seg:
            rows = []
            for _, p in batch:
                for seq in p.data[0]:
                    for s, e in seq["spans"]:  # windows, as HFEncoder.encode builds them
                        ids = seq["ids"]
                        rows.append(np.concatenate([ids[:1], ids[1 + s : 1 + e], ids[-1:]]))
            width = max(len(r) for r in rows)
            pad = encoder.tokenizer.pad_token_id or 0
            input_ids = torch.full((len(rows), width), pad, dtype=torch.long)  # (B, S)
            mask = torch.zeros((len(rows), width), dtype=torch.long)  # (B, S)
            for r, ids in enumerate(rows):
                input_ids[r, : len(ids)] = torch.from_numpy(ids)
                mask[r, : len(ids)] = 1
            inputs = {"input_ids": input_ids, "attention_mask": mask}
            if encoder.uses_types:
                inputs["token_type_ids"] = torch.zeros_like(input_ids)  # single sentences
            out.append((inputs, sum(p.length for _, p in batch)))
    return out


def bare_pass(encoder, batches) -> None:
    import torch

    for inputs, _ in batches:
        with torch.inference_mode():
            out = encoder.model(**inputs, output_hidden_states=True)
        torch.stack(out.hidden_states, dim=2).float().cpu().numpy()  # (B, S, L, D)


def run_extract(encoder, texts, config) -> None:
    with tempfile.TemporaryDirectory(prefix="snowfire-bench-") as tmp:
        extract(
            encoder,
            texts,
            Store(tmp),
            task="sst2",
            split="dev",
            config=dataclasses.replace(config, store=tmp),
        )


@contextmanager
def timers(encoder):
    """Wrap the stages of one extraction with timers; yield {stage: seconds}."""
    spent: dict[str, float] = defaultdict(float)

    def timed(name: str, fn: Callable) -> Callable:
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] += time.perf_counter() - t0

        return wrapper

    running: list[str] = []  # the store method running now, whose fsyncs are counted apart

    def store_stage(name: str, fn: Callable) -> Callable:
        def wrapper(*a, **kw):
            running.append(name)
            try:
                return timed(name, fn)(*a, **kw)
            finally:
                running.pop()

        return wrapper

    def fsync(fd) -> None:
        t0 = time.perf_counter()
        try:
            real_fsync(fd)
        finally:
            dt = time.perf_counter() - t0
            spent["fsync"] += dt
            if running:
                spent[running[-1]] -= dt

    saved_store = {n: getattr(Store, n) for n in ("write_segment", "write_featureset")}
    real_fsync = os.fsync
    encoder.prepare = timed("tokenise (prepare)", encoder.prepare)
    encoder.encode = timed("encode total", encoder.encode)
    encoder.model.forward = timed("forward", encoder.model.forward)
    Store.write_segment = store_stage("segment write", saved_store["write_segment"])
    Store.write_featureset = store_stage("write_featureset", saved_store["write_featureset"])
    os.fsync = fsync  # every fsync of the store's writes (cache/durable.py), wherever made
    try:
        yield spent
    finally:
        for name in ("prepare", "encode"):
            del encoder.__dict__[name]
        del encoder.model.__dict__["forward"]
        for n, f in saved_store.items():
            setattr(Store, n, f)
        os.fsync = real_fsync


def main() -> int:
    p = report.parser(__doc__.split("\n\n")[0])
    p.add_argument("--sentences", type=int, default=800)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--token-budget", type=int, default=ExtractConfig.token_budget)
    args = p.parse_args()
    import torch

    examples = read_split("sst2", DEMO_DATA_DIR, "dev")[: args.sentences]
    texts = [TextInput(tuple(e.words_a)) for e in examples]
    encoder = load_encoder("minilm")
    config = ExtractConfig(
        encoder="minilm",
        store=tempfile.gettempdir(),
        progress=False,
        token_budget=args.token_budget,
    )
    batches = bare_batches(encoder, texts, config)
    n_tokens = sum(t for _, t in batches)
    print(
        f"{len(texts)} sentences, {n_tokens} tokens, {len(batches)} batches "
        f"(token budget {config.token_budget}), torch threads {torch.get_num_threads()}"
    )
    bare_pass(encoder, batches)  # warm-up: first-call allocations, lazy inits
    run_extract(encoder, texts, config)
    times = report.interleaved(
        {
            "extract": lambda r: run_extract(encoder, texts, config),
            "bare forward": lambda r: bare_pass(encoder, batches),
        },
        args.repeats,
    )
    with timers(encoder) as spent:
        t0 = time.perf_counter()
        run_extract(encoder, texts, config)
        total = time.perf_counter() - t0

    med = {k: report.median(v) for k, v in times.items()}
    rows = [
        {
            "case": k,
            "runs": len(v),
            "median s": f"{med[k]:.3f}",
            "min-max s": f"{min(v):.3f}-{max(v):.3f}",
            "sentences/s": f"{len(texts) / med[k]:.0f}",
            "tokens/s": f"{n_tokens / med[k]:.0f}",
        }
        for k, v in times.items()
    ]
    print()
    print(report.table(rows, ["case", "runs", "median s", "min-max s", "sentences/s", "tokens/s"]))
    ratio = med["bare forward"] / med["extract"]
    print(f"\nratio bare/extract = {ratio:.3f} (goal >= 0.9)")

    stages = {
        "tokenise (prepare)": spent["tokenise (prepare)"],
        "forward": spent["forward"],
        "encode other (pad, stack, to numpy, stitch)": spent["encode total"] - spent["forward"],
        "segment write (concat, f16 check, zarr)": spent["segment write"],  # fsync apart
        "fsync": spent["fsync"],
        "write_featureset": spent["write_featureset"],
    }
    stages["other (keys, plan, look-ups)"] = total - sum(stages.values())
    print(f"\none instrumented extraction: {total:.3f} s")
    print(
        report.table(
            [
                {"stage": k, "s": f"{v:.3f}", "share": f"{100 * v / total:.1f}%"}
                for k, v in stages.items()
            ],
            ["stage", "s", "share"],
        )
    )
    report.save(
        "extract_vs_encoder",
        args,
        {
            "sentences": len(texts),
            "tokens": n_tokens,
            "batches": len(batches),
            "seconds": times,
            "median_seconds": med,
            "ratio_bare_over_extract": ratio,
            "breakdown_seconds": {"total": total, **stages},
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
