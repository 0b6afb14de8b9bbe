"""Argument parsing for `snowfire <command>`; each command imports its package lazily.

Every command's flags are derived from what they fill (cli/flags.py): a config dataclass
(extractor.ExtractConfig, heads.TrainConfig, finetune.FinetuneConfig, compare.CompareConfig,
compare.LayersConfig, jobs.worker.WorkerConfig, one config per analysis) or, for serve and
up, the service's settings (api.Settings, added only when one of them is parsed). A default,
a choice or a help text is written once, and a bad value is refused when the config is built.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from snowfire.options import THREADS_ENV, use_threads
from snowfire.rundir import PAUSED

from .flags import DeferredParser, add_config_arguments, add_settings_arguments, config_from_args
from .predict import add_parser as add_predict_parser
from .task import add_parser as add_task_parser

#: Commands that run torch here (each calls use_threads first) or start what does (serve: the
#: API's lifespan; worker: its job runners; up: the API and the workers): each takes --threads.
THREADED = (
    "compare",
    "extract",
    "train",
    "finetune",
    "analyze",
    "layers",
    "predict",
    "task",
    "fsck",
    "demo",
    "serve",
    "worker",
    "up",
)


def _extract(args: argparse.Namespace) -> int:
    import snowfire

    config = config_from_args(snowfire.ExtractConfig, args)
    use_threads()  # after the config: a bad flag is refused before torch loads
    for info in snowfire.extract(config):
        print(
            f"{info.id}: {info.num_examples} examples x {info.num_layers} layers x {info.dim} "
            f"({info.dtype}) in {args.store}"
        )
    return 0


def _settings(args: argparse.Namespace):
    """The service's settings: the flags given, then the SNOWFIRE_* environment, then the
    defaults (api/settings.py)."""
    from pydantic import ValidationError

    from snowfire.api import Settings
    from snowfire.jobs import describe_validation

    given = {k: v for k, v in vars(args).items() if k in Settings.model_fields}
    try:
        return Settings(**given)
    except ValidationError as err:
        raise ValueError(f"settings: {describe_validation(err.errors())}") from None


def _serve(args: argparse.Namespace) -> int:
    from snowfire.api import serve

    serve(_settings(args))
    return 0


def _up(args: argparse.Namespace) -> int:
    from snowfire.jobs import run_up

    settings = _settings(args)
    return run_up(settings.home, host=settings.host, port=settings.port)


def _worker(args: argparse.Namespace) -> int:
    from snowfire.jobs import WorkerConfig, check_worker, run_worker

    config = config_from_args(WorkerConfig, args)
    return check_worker(config) if args.check else run_worker(config)


def _print_metrics(prefix: str, metrics: dict[str, dict[str, float]], out: str) -> None:
    paused = Path(out) / PAUSED
    if not metrics and paused.is_file():
        at = json.loads(paused.read_text())
        print(f"{prefix}: paused after epoch {at['epoch']} (best {at['best_epoch']}): {paused}")
        return
    for split, values in metrics.items():
        print(f"{prefix} {split}: " + ", ".join(f"{k} {v:.4f}" for k, v in values.items()))
    print(f"run written to {out}")


def _train(args: argparse.Namespace) -> int:
    import snowfire

    config = config_from_args(snowfire.TrainConfig, args)
    use_threads()
    _print_metrics(f"{config.spec.name} {config.head}", snowfire.train(config).metrics, config.out)
    return 0


def _finetune(args: argparse.Namespace) -> int:
    import snowfire
    from snowfire.rundir import GRID_TABLE

    config = config_from_args(snowfire.FinetuneConfig, args)
    use_threads()
    metrics = snowfire.finetune(config).metrics  # type: ignore[operator]  # the package, callable
    if config.grid is not None:
        print((Path(config.out) / GRID_TABLE).read_text())
    chosen = " (chosen on dev)" if config.grid is not None else ""
    _print_metrics(f"{config.spec.name} finetune{chosen}", metrics, config.out)
    return 0


def _baseline(args: argparse.Namespace) -> int:
    from snowfire.cache import open_reader
    from snowfire.extractor import current_featureset
    from snowfire.heads import cosine_scores
    from snowfire.tasks import evaluate, read_split, resolve_task

    spec = resolve_task(args.task)
    if spec.kind != "regression" or not spec.pair:
        raise ValueError(f"baseline: {spec.name} is not a pair regression task (stsb, sick-r)")
    reader = open_reader(args.store)
    info = current_featureset(reader, args.encoder, spec, args.data, args.split, args.pair_encoding)
    gold = [e.label for e in read_split(spec, args.data, args.split)]  # scores, as read
    scores = cosine_scores(reader, info, layer=args.layer)
    metrics = evaluate(spec, gold, scores.tolist())
    shown = ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
    print(f"{spec.name} {args.split} cosine of mean-pooled layer {args.layer} ({info.id}): {shown}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    import snowfire
    from snowfire.rundir import RESULTS

    config = config_from_args(snowfire.CompareConfig, args)
    where = None
    if args.export:  # checked before anything runs
        fmt, where = args.export
        from snowfire.compare import EXPORT_FORMATS

        if fmt not in EXPORT_FORMATS:
            raise ValueError(f"--export: expected a format of {EXPORT_FORMATS}, got {fmt!r}")
    if config.replay:  # nothing trained: the race recomputed from OUT's runs, printed
        from snowfire.compare import run_compare

        run_compare(config)
        return 0
    use_threads()
    result = snowfire.compare(config, export_mteb=where)  # type: ignore[operator]  # (callable)
    print(result.table)
    print(f"results in {Path(config.out) / RESULTS}")
    if where is not None:
        print(f"MTEB results in {Path(where) / 'results'}")
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from snowfire.compare import run_analysis

    config = config_from_args(args.analysis, args)
    use_threads()
    run_analysis(config)
    print((Path(config.out) / f"{config.name}.md").read_text())
    return 0


def _layers(args: argparse.Namespace) -> int:
    import snowfire

    config = config_from_args(snowfire.LayersConfig, args)
    use_threads()
    result = snowfire.layers(config)
    print(result.table())
    if config.out is not None:
        print(f"sweep written to {config.out}")
    return 0


def _ls(args: argparse.Namespace) -> int:
    from snowfire.cache import open_reader

    for fs in open_reader(args.store).list_featuresets():
        print(
            f"{fs.id}\t{fs.encoder.get('spec')}\t{fs.task}\t{fs.split}\t{fs.num_examples}\t"
            f"{fs.num_layers}x{fs.dim}\t{fs.dtype}"
        )
    return 0


def _export(args: argparse.Namespace) -> int:
    from snowfire.cache import export_hdf5, open_store

    n = export_hdf5(open_store(args.store), args.featureset, args.out, words=args.words)
    print(f"wrote {n} sentences of {args.featureset} to {args.out}")
    return 0


def _fsck(args: argparse.Namespace) -> int:
    from snowfire.cache import check_store, open_store

    store = open_store(args.store)  # a directory, or s3://bucket/prefix (every object fetched)
    report = check_store(store, progress=not args.quiet)
    for line in report.lines():
        print(line)
    if (report.damage or report.uncovered) and args.repair:
        from snowfire.extractor import repair

        use_threads()
        for line in repair(store, report, device=args.device):
            print(line)
        report = check_store(open_store(args.store))
        for d in report.damage:
            print(f"STILL DAMAGED {d.where}: " + "; ".join(d.problems))
    print(f"{args.store}: {report.summary()}")
    return 1 if report.damage else 0


def _migrate(args: argparse.Namespace) -> int:
    from snowfire.extractor import MigrateConfig, migrate_store

    outcome = migrate_store(config_from_args(MigrateConfig, args))
    for line in outcome.lines():
        print(line)
    if not outcome.already:
        print(
            f"{args.store}: format 2; format 1's pools and manifests kept in "
            f"{args.store}/format-1/ (MIGRATION.json says what was done)"
        )
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    use_threads()
    return run_demo(out=Path(args.out), port=args.port)


# -- one function per command's flags


def _thread_count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of threads >= 1, got {text!r}")
    return int(text)


def _add_threads(parser: argparse.ArgumentParser, default) -> None:
    """--threads on `parser`, or on each of its commands' parsers where it has commands."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subparsers:
        for sub in subparsers[0].choices.values():
            _add_threads(sub, default)
        return
    parser.add_argument(
        "--threads",
        type=_thread_count,
        default=default,
        help=f"torch threads of this process, and of each it starts (env {THREADS_ENV}; "
        "default: the cores available, after CPU affinity and the cgroup's CPU quota, split "
        "among the processes one launcher starts: options/threads.py)",
    )


def _add_config_command(sub, name: str, help: str, config: str, func) -> argparse.ArgumentParser:
    """A command whose flags are the fields of `config` ("package:Class", imported here)."""
    import importlib

    module, _, cls = config.partition(":")
    parser = sub.add_parser(name, help=help)
    add_config_arguments(parser, getattr(importlib.import_module(module), cls))
    parser.set_defaults(func=func)
    return parser


def _service_flags(only: tuple[str, ...] | None = None):
    """Adds the flags of the service's settings (all, or `only` these) to a parser."""

    def add(parser: argparse.ArgumentParser) -> None:
        from snowfire.api import ENV_ONLY, Settings

        skip = tuple(n for n in Settings.model_fields if n in ENV_ONLY or (only and n not in only))
        add_settings_arguments(parser, Settings, skip=skip)

    return add


def _add_service(sub) -> None:
    s = sub.add_parser("serve", help="serve a store over REST", add_flags=_service_flags())
    s.set_defaults(func=_serve)

    w = _add_config_command(
        sub,
        "worker",
        "run queued jobs of one kind (data directory: --home)",
        "snowfire.jobs:WorkerConfig",
        _worker,
    )
    w.add_argument("--check", action="store_true", help="healthcheck: exit 0 if one is alive")

    u = sub.add_parser(
        "up",
        help="the API and one worker of each kind, until Ctrl-C",
        add_flags=_service_flags(("home", "host", "port")),
    )
    u.set_defaults(func=_up)


def _add_store_tools(sub) -> None:
    from snowfire.extractor import PAIR_ENCODINGS

    b = sub.add_parser("baseline", help="zero-training STS baseline: cosine of mean-pooled texts")
    b.add_argument("--store", required=True)
    b.add_argument("--encoder", required=True)
    b.add_argument(
        "--task", required=True, help="a pair regression task (stsb, sick-r) or its spec file"
    )
    b.add_argument("--data", default=None, help="data directory (a registered task's files)")
    b.add_argument("--split", default="dev")
    b.add_argument("--layer", type=int, default=-1, help="layer to pool (default: the last)")
    b.add_argument("--pair-encoding", choices=PAIR_ENCODINGS, default="separate")
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

    k = sub.add_parser(
        "fsck", help="check every segment and feature-set file against its write-time checksums"
    )
    k.add_argument(
        "--store", required=True, help="store directory or s3://bucket/prefix (all fetched)"
    )
    k.add_argument(
        "--repair",
        action="store_true",
        help="rebuild damaged feature-set files from their other files and source, set "
        "damaged segments aside (STORE/quarantine/) and re-extract them",
    )
    k.add_argument("--device", default=None, help="where --repair runs the encoder")
    k.add_argument("--quiet", action="store_true", help="no progress bar")
    k.set_defaults(func=_fsck)


def _add_analyze(sub) -> None:
    from snowfire.compare import ANALYSES, analysis_config

    a = sub.add_parser(
        "analyze",
        help="the paper's analyses: pairs (Table 4), probes (Fig. 1), "
        "mi (Fig. 2), ner-params (Table 5), elmo-biattention (Table 3)",
    )
    names = a.add_subparsers(dest="name", required=True, metavar="NAME")
    for name in ANALYSES:
        config = analysis_config(name)
        n = names.add_parser(name, help=config.__doc__.splitlines()[0])
        add_config_arguments(n, config)
        n.set_defaults(func=_analyze, analysis=config)


def _add_demo(sub) -> None:
    d = sub.add_parser(
        "demo", help="extract, serve, fetch over REST, train heads, fine-tune, print dev metrics"
    )
    d.add_argument("--out", default="demo_out", help="working directory for the demo")
    d.add_argument("--port", type=int, default=0, help="service port (0: a free one)")
    d.set_defaults(func=_demo)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="snowfire", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    _add_threads(p, None)
    sub = p.add_subparsers(dest="command", required=True, parser_class=DeferredParser)
    c = _add_config_command(
        sub,
        "compare",
        "❄️ or 🔥? heads and fine-tuning of one encoder on tasks, one table",
        "snowfire.compare:CompareConfig",
        _compare,
    )
    c.add_argument(
        "--export",
        nargs=2,
        metavar=("FORMAT", "DIR"),
        type=str,
        help="also write the results for other tools: `--export mteb DIR` writes "
        "DIR/results/{model}/{revision}/{task}.json and model_meta.json (compare/mteb.py)",
    )
    _add_config_command(
        sub,
        "extract",
        "run an encoder once, store all layers",
        "snowfire.extractor:ExtractConfig",
        _extract,
    )
    _add_service(sub)
    _add_config_command(
        sub,
        "train",
        "train a head on cached features (never runs the encoder)",
        "snowfire.heads:TrainConfig",
        _train,
    )
    _add_config_command(
        sub,
        "finetune",
        "🔥 fine-tune the whole encoder (the baseline); re-run the same command to resume",
        "snowfire.finetune:FinetuneConfig",
        _finetune,
    )
    _add_store_tools(sub)
    _add_config_command(
        sub,
        "migrate",
        "move a store of the previous format to this one, keeping its features "
        "wherever they are still right",
        "snowfire.extractor:MigrateConfig",
        _migrate,
    )
    add_predict_parser(sub)
    add_task_parser(sub)
    _add_analyze(sub)
    _add_config_command(
        sub,
        "layers",
        "which layer? per-layer and cumulative probes with seeds, the expected layer and "
        "selectivity, from stored features",
        "snowfire.compare:LayersConfig",
        _layers,
    )
    _add_demo(sub)
    for name in THREADED:  # after the command: not given there, the one before it stays
        _add_threads(sub.choices[name], argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    from snowfire.cache import StoreError

    args = build_parser().parse_args(argv)
    if args.threads is not None:  # the process's and its children's: see options/threads.py
        os.environ[THREADS_ENV] = str(args.threads)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return args.func(args)
    except (ValueError, TypeError, KeyError, OSError, RuntimeError, StoreError) as err:
        if args.verbose:
            raise
        print(f"snowfire {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
