"""`snowfire predict`: a saved ❄️ run's head on features in a store, or on a text file."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser(
        "predict", help="predict with a saved ❄️ run (RUN/head.json + weights), no retraining"
    )
    p.add_argument("--run", required=True, help="a finished `snowfire train` run directory")
    p.add_argument("--out", required=True, help="predictions file (the run's .tsv format)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--featureset", help="feature-set id in --store (see snowfire ls)")
    source.add_argument("--input", help="a text file: the run's encoder extracts it first")
    p.add_argument(
        "--store",
        help="store directory or http://HOST:PORT (with --featureset; "
        "with --input, where the extraction is kept: default a temporary store)",
    )
    p.add_argument("--data", help="task data directory for the gold column (default: the run's)")
    p.add_argument("--device", help="cpu, cuda (with --input: where the encoder runs)")
    p.set_defaults(func=run)  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from heads import predict_featureset, predict_texts

    if args.featureset is not None:
        if not args.store:
            raise ValueError("--featureset needs --store (the store that holds it)")
        preds = predict_featureset(args.run, args.store, args.featureset, args.out, data=args.data)
    else:
        preds = predict_texts(args.run, args.input, args.out, store=args.store, device=args.device)
    print(f"{len(preds)} predictions written to {args.out}")
    return 0
