"""What the cache buys: the same examples' all-layer features fetched over REST, read from the
local store, and recomputed by the encoder, in tokens/s, for three encoder shapes.

Shapes: the bundled MiniLM (its real weights), and BERT-base and BERT-large shapes (12 x 768
and 24 x 1024, randomly initialised from their configs with the MiniLM tokenizer: speed needs
no trained weights). For each: `--sentences` SST-2 dev sentences of the shipped sample are
extracted once into a temporary store; then, alternating `--repeats` times on the same
examples,

    recompute  encoder.encode over extract's own batches (prepared beforehand): the forward
               pass with all hidden states, to numpy, stitched; nothing stored
    local      Store.read of all of them, all layers
    REST       cache.RemoteStore.read of the same from `snowfire serve` (subprocess)

and the ratios REST / recompute and local / recompute of tokens/s are printed (goal for MiniLM
on this CPU: REST >= 10x recompute).

    python benchmarks/cache_speedup.py [--sentences 256] [--repeats 3] [--shapes minilm,base,large]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import report
from rest_vs_inprocess import start_server

SHAPES = {
    "minilm": None,  # the bundled weights
    "base": {
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
    },
    "large": {
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
    },
}


def model_dir(shape: str, root: Path) -> str:
    """An HF folder for the shape: the bundled MiniLM, or a random BERT with its tokenizer."""
    from snowfire.extractor import minilm_dir

    if SHAPES[shape] is None:
        return str(minilm_dir())
    import torch
    from transformers import BertConfig, BertModel

    out = root / f"bert-{shape}"
    out.mkdir()
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        src = Path(minilm_dir()) / name
        if src.exists():
            shutil.copy(src, out / name)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=30522, **SHAPES[shape])).eval().save_pretrained(out)
    return str(out)


def measure(shape: str, root: Path, sentences: int, repeats: int) -> dict:
    from snowfire.cache import RemoteStore, Store
    from snowfire.extractor import ExtractConfig, TextInput, extract, load_encoder, plan_segments
    from snowfire.jobs import free_port, stop_process
    from snowfire.tasks import DEMO_DATA_DIR, read_split

    encoder = load_encoder(f"hf:{model_dir(shape, root)}")
    examples = read_split("sst2", str(DEMO_DATA_DIR), "dev")[:sentences]
    texts = [TextInput(tuple(e.words_a)) for e in examples]
    store = Store(root / f"store-{shape}")
    config = ExtractConfig(
        encoder=f"hf:{model_dir(shape, root)}", store=str(store.path), progress=False
    )
    info = extract(encoder, texts, store, task=None, split=None, config=config)
    tokens = int(info.manifest["num_tokens"])
    items = [(str(i), encoder.prepare(i, t)) for i, t in enumerate(texts)]
    batches = [
        [p for _, p in b] for seg in plan_segments(encoder, items, config, 1 << 30) for b in seg
    ]
    indices = list(range(len(texts)))
    port = free_port()
    server = start_server(store.path, port, root / f"serve-{shape}.log")
    try:
        remote = RemoteStore(f"http://127.0.0.1:{port}")
        times = report.interleaved(
            {
                "recompute": lambda r: [encoder.encode(b) for b in batches],
                "local": lambda r: store.read(info.id, indices=indices),
                "REST": lambda r: remote.read(info.id, indices=indices),
            },
            repeats,
        )
        remote.close()
    finally:
        stop_process(server, grace=15)
    med = {k: report.median(v) for k, v in times.items()}
    return {
        "shape": shape,
        "layers x dim": f"{encoder.num_layers} x {encoder.dim}",
        "tokens": tokens,
        "MB": tokens * encoder.num_layers * encoder.dim * 2 / 2**20,
        "tok_s": {k: tokens / v for k, v in med.items()},
        "seconds": times,
    }


def main() -> int:
    p = report.parser(__doc__.split("\n\n")[0])
    p.add_argument("--sentences", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--shapes", default="minilm,base,large")
    args = p.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="snowfire-speedup-") as tmp:
        for shape in args.shapes.split(","):
            print(f"{shape}: extracting {args.sentences} sentences, then timing ...", flush=True)
            results.append(measure(shape, Path(tmp), args.sentences, args.repeats))
    rows = [
        {
            "shape": r["shape"],
            "layers x dim": r["layers x dim"],
            "tokens": r["tokens"],
            "MB": f"{r['MB']:.0f}",
            **{f"{k} tok/s": f"{v:,.0f}" for k, v in r["tok_s"].items()},
            "REST/recompute": f"{r['tok_s']['REST'] / r['tok_s']['recompute']:.1f}",
            "local/recompute": f"{r['tok_s']['local'] / r['tok_s']['recompute']:.1f}",
        }
        for r in results
    ]
    print()
    print(report.table(rows, list(rows[0])))
    report.save("cache_speedup", args, {"results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
