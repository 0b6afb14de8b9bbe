"""`snowfire predict`: a saved ❄️ run's head on features in a store, or on a text file; a
saved 🔥 run (any method) on a text file. Its flags are `heads.PredictConfig`'s fields."""

from __future__ import annotations

import argparse

from snowfire.options import use_threads

from .flags import add_config_arguments, config_from_args


def add_parser(sub) -> None:
    from snowfire.heads import PredictConfig

    p = sub.add_parser(
        "predict",
        help="predict with a saved ❄️ run (RUN/head.json) or 🔥 run (RUN/best.pt), no retraining",
    )
    add_config_arguments(p, PredictConfig)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import snowfire
    from snowfire.heads import PredictConfig

    config = config_from_args(PredictConfig, args)
    use_threads()
    result = snowfire.predict(config)
    print(f"{len(result.predictions)} predictions written to {config.out}")
    return 0
