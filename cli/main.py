"""Argument parsing for `snowfire <command>`; each command imports its package lazily."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path


def _extract(args: argparse.Namespace) -> int:
    from extractor import run_extract

    options = {k: v for k, v in vars(args).items() if k not in ("func", "command", "verbose")}
    for info in run_extract(options):
        print(
            f"{info.id}: {info.num_examples} examples x {info.num_layers} layers x {info.dim} "
            f"({info.dtype}) in {args.store}"
        )
    return 0


def _serve(args: argparse.Namespace) -> int:
    from api import serve

    serve(args.store, host=args.host, port=args.port, home=args.home)
    return 0


def _jobs(args: argparse.Namespace) -> int:
    """`snowfire worker` and `snowfire up`."""
    from jobs.launcher import run_up
    from jobs.worker import check_worker, run_worker

    if args.command == "up":
        return run_up(args.home, host=args.host, port=args.port)
    if args.check:
        return check_worker(args.home, args.kind, poll=args.poll, lease=args.lease)
    return run_worker(args.home, args.kind, once=args.once, poll=args.poll, lease=args.lease)


def _train(args: argparse.Namespace) -> int:
    from heads import TrainConfig, train

    hparams = json.loads(args.hparams) if args.hparams else {}
    config = TrainConfig(
        store=args.store,
        encoder=args.encoder,
        task=args.task,
        head=args.head,
        data=args.data,
        out=args.out,
        seed=args.seed,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        weight_decay=args.weight_decay,
        patience=args.patience,
        pair_encoding=args.pair_encoding,
        featureset_prefix=args.featureset,
        layer=args.layer,
        hparams=hparams,
        progress=not args.quiet,
    )
    metrics = train(config)
    for split, values in metrics.items():
        shown = ", ".join(f"{k} {v:.4f}" for k, v in values.items())
        print(f"{args.task} {args.head} {split}: {shown}")
    print(f"run written to {args.out}")
    return 0


def _baseline(args: argparse.Namespace) -> int:
    from cache import open_reader
    from heads.baseline import cosine_scores
    from tasks import evaluate, read_split

    reader = open_reader(args.store)
    info = reader.find_featureset(
        encoder=args.encoder, task=args.task, split=args.split, pair_encoding=args.pair_encoding
    )
    gold = [float(e.label) for e in read_split(args.task, args.data, args.split)]
    scores = cosine_scores(reader, info, layer=args.layer)
    metrics = evaluate(args.task, gold, scores.tolist())
    shown = ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
    print(f"{args.task} {args.split} cosine of mean-pooled layer {args.layer} ({info.id}): {shown}")
    return 0


def _finetune(args: argparse.Namespace) -> int:
    from finetune import from_args, train

    metrics = train(from_args(args))
    for split, values in metrics.items():
        print(
            f"{args.task} finetune {split}: " + ", ".join(f"{k} {v:.4f}" for k, v in values.items())
        )
    print(f"run written to {args.out}")
    return 0


def _ls(args: argparse.Namespace) -> int:
    from cache import open_reader

    for fs in open_reader(args.store).list_featuresets():
        print(
            f"{fs.id}\t{fs.encoder.get('spec')}\t{fs.task}\t{fs.split}\t{fs.num_examples}\t"
            f"{fs.num_layers}x{fs.dim}\t{fs.dtype}"
        )
    return 0


def _export(args: argparse.Namespace) -> int:
    from cache import Store, export_hdf5

    n = export_hdf5(Store(args.store), args.featureset, args.out, words=args.words)
    print(f"wrote {n} sentences of {args.featureset} to {args.out}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(out=Path(args.out), port=args.port)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="snowfire", description=__doc__)
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = p.add_subparsers(dest="command", required=True)

    e = sub.add_parser("extract", help="run an encoder once, store all layers")
    e.add_argument("--encoder", required=True, help="minilm | hf:NAME_OR_DIR | elmo:OPTS,WEIGHTS")
    e.add_argument("--store", required=True, help="store directory")
    e.add_argument("--task", help="task name (conll2003, sst2, mnli, mrpc, stsb, sick-e, ...)")
    e.add_argument("--data", help="task data directory (one folder per task)")
    e.add_argument("--split", action="append", help="split to extract (repeatable; default all)")
    e.add_argument("--input", help="raw text: one sentence per line, or JSONL")
    e.add_argument("--name", help="name for a raw-text feature set (default: file stem)")
    e.add_argument("--pair-encoding", choices=["joint", "separate"], default="joint")
    e.add_argument("--dtype", choices=["float16", "float32"], default="float16")
    e.add_argument("--token-budget", type=int, default=8192, help="padded tokens per batch")
    e.add_argument("--segment-tokens", type=int, default=None, help="tokens per commit")
    e.add_argument("--max-length", type=int, default=None, help="window length (<= model max)")
    e.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (default: GPU if present)")
    e.add_argument("--elmo-state", choices=["fixed", "stateful"], default="fixed")
    e.add_argument("--batch-size", type=int, default=32, help="sentences per batch (ELMo)")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    e.set_defaults(func=_extract)

    s = sub.add_parser("serve", help="serve a store over REST")
    s.add_argument("--store", default=None, help="store directory (env SNOWFIRE_STORE)")
    s.add_argument("--host", default=None, help="default 127.0.0.1 (env SNOWFIRE_HOST)")
    s.add_argument("--port", type=int, default=None, help="default 8000 (env SNOWFIRE_PORT)")
    s.add_argument("--home", default=None, help="data directory: store + jobs (SNOWFIRE_HOME)")
    s.set_defaults(func=_serve)

    w = sub.add_parser("worker", help="run queued jobs of one kind (data directory: --home)")
    w.add_argument("--kind", required=True, choices=["extract", "train", "finetune"])
    w.add_argument("--home", default=None, help="data directory (env SNOWFIRE_HOME)")
    w.add_argument("--once", action="store_true", help="run at most one job, then exit")
    w.add_argument("--poll", type=float, default=2.0, help="seconds between claims when idle")
    w.add_argument("--lease", type=float, default=60.0, help="seconds a claim lasts unrenewed")
    w.add_argument("--check", action="store_true", help="healthcheck: exit 0 if one is alive")
    w.set_defaults(func=_jobs)

    u = sub.add_parser("up", help="the API and one worker of each kind, until Ctrl-C")
    u.add_argument("--home", default=None, help="data directory (env SNOWFIRE_HOME)")
    u.add_argument("--host", default="127.0.0.1")
    u.add_argument("--port", type=int, default=8000)
    u.set_defaults(func=_jobs)

    t = sub.add_parser("train", help="train a head on cached features (never runs the encoder)")
    t.add_argument("--store", required=True, help="store directory or http://HOST:PORT")
    t.add_argument("--encoder", required=True, help="the encoder spec the features came from")
    t.add_argument("--task", required=True)
    t.add_argument("--head", required=True)
    t.add_argument("--data", required=True, help="task data directory (labels)")
    t.add_argument("--out", required=True, help="run directory")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--epochs", type=int, default=20)
    t.add_argument("--batch-size", type=int, default=32)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--weight-decay", type=float, default=0.01)
    t.add_argument("--patience", type=int, default=3, help="epochs without dev gain")
    t.add_argument("--pair-encoding", choices=["joint", "separate"], default=None)
    t.add_argument("--featureset", default=None, help="feature-set id prefix when ambiguous")
    t.add_argument("--layer", type=int, default=None, help="the layer a probe reads")
    t.add_argument("--hparams", default=None, help='head options as JSON, e.g. {"hidden": 300}')
    t.add_argument("--quiet", action="store_true")
    t.set_defaults(func=_train)

    f = sub.add_parser(
        "finetune",
        help="🔥 fine-tune the whole encoder (the baseline); re-run the same command to resume",
        argument_default=argparse.SUPPRESS,
    )
    for flag, what in (
        ("--encoder", "minilm | hf:DIR | elmo:..."),
        ("--task", "task name"),
        ("--data", "task data directory"),
        ("--out", "run directory"),
    ):
        f.add_argument(flag, required=True, help=what)
    for flag, kind in (
        ("--seed", int),
        ("--epochs", int),
        ("--batch-size", int),
        ("--lr", float),
        ("--warmup", float),
        ("--weight-decay", float),
        ("--discriminative", float),
        ("--max-length", int),
        ("--dropout", float),
        ("--patience", int),
        ("--max-grad-norm", float),
        ("--max-train-examples", int),
        ("--checkpoint-every", int),
        ("--device", str),
    ):
        f.add_argument(flag, type=kind)
    f.add_argument("--recipe", choices=["bert", "elmo"], help="default: the encoder family's")
    f.add_argument("--schedule", choices=["linear", "slanted"])
    for flag in ("--gradual-unfreezing", "--bi-attention", "--crf"):
        f.add_argument(flag, action=argparse.BooleanOptionalAction)
    f.add_argument("--quiet", dest="progress", action="store_false")
    f.set_defaults(func=_finetune)

    b = sub.add_parser("baseline", help="zero-training STS baseline: cosine of mean-pooled texts")
    b.add_argument("--store", required=True)
    b.add_argument("--encoder", required=True)
    b.add_argument("--task", required=True, help="a pair regression task (stsb, sick-r)")
    b.add_argument("--data", required=True)
    b.add_argument("--split", default="dev")
    b.add_argument("--layer", type=int, default=-1, help="layer to pool (default: the last)")
    b.add_argument("--pair-encoding", choices=["joint", "separate"], default="separate")
    b.set_defaults(func=_baseline)

    ls = sub.add_parser("ls", help="list the feature sets of a store")
    ls.add_argument("--store", required=True, help="store directory or http://HOST:PORT")
    ls.set_defaults(func=_ls)

    x = sub.add_parser("export-hdf5", help="write a feature set as AllenNLP `elmo --all` HDF5")
    x.add_argument("--store", required=True)
    x.add_argument("--featureset", required=True, help="feature-set id (see snowfire ls)")
    x.add_argument("--out", required=True, help="output .hdf5 file")
    x.add_argument(
        "--words",
        choices=["first", "mean", "pieces"],
        default="first",
        help="word-piece encoders: first piece per word, mean of pieces, or all",
    )
    x.set_defaults(func=_export)

    d = sub.add_parser(
        "demo", help="extract, serve, fetch over REST, train heads, fine-tune, print dev metrics"
    )
    d.add_argument("--out", default="demo_out", help="working directory for the demo")
    d.add_argument("--port", type=int, default=0, help="service port (0: a free one)")
    d.set_defaults(func=_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    from cache import StoreError

    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return args.func(args)
    except (ValueError, KeyError, OSError, RuntimeError, StoreError) as err:
        if args.verbose:
            raise
        print(f"snowfire {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
