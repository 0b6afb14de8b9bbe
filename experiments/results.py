"""docs/results.md from `snowfire compare` and `snowfire analyze`: a thin caller of the two
commands, then one page made of what they wrote.

    python experiments/results.py --data ../shared/data --work WORK [--tasks all] [--seeds 3]
        [--fire-seeds F] [--analysis-seeds 1] [--budget quick|standard|full|2h]
        [--trials N] [--no-race] [--arms snow,fire,...] [--intermediate TASK]
        [--keep-remade-starts]
        [--analyses mi,probes,pairs,ner-params] [--encoder minilm]
        [--docs docs] [--note TEXT] [--append FILE] [--carry ARCHIVE]

1. `snowfire compare --encoder E --tasks T --data DATA --out WORK/compare --seeds S
   [--fire-seeds F] --budget B [--trials N] [--no-race] [--arms A]` (Table 2: ❄️ heads, 🔥
   and the other arms, tuned with N trials each and raced, verdicts, budget curves, cost);
2. `snowfire analyze NAME --store WORK/compare/store --out WORK/analyze ...` for each analysis,
   with the budget's caps (quick: epochs 3, 2,000 training examples; probes also probe each
   compare 🔥 run's saved encoder);
3. DOCS/results.md: the commands, the machine, then compare's table.md and each analysis' .md,
   their plots copied beside it as results-*.png; then `--append FILE` as it is (e.g. the
   sections of an earlier page that this run did not remake, under a heading that says so).

Both commands keep every finished run, so this script can be killed and rerun at any point:
only what is missing is computed. Each invocation's wall and CPU time goes to WORK/ledger.jsonl
(experiments/ledger.py), and the page states their sum. `--compose-only` rebuilds the page
from WORK as it is. `--carry ARCHIVE` takes the run from machine to machine: an empty WORK is
filled from the archive first, and the archive is written again with every finished run when
the invocation ends, stopped or not (experiments/carry.py: no weights, no data).
"""

from __future__ import annotations

import argparse
import platform
import re
import shlex
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ledger import cores_usable, invocation, total  # noqa: E402  (experiments/ledger.py, beside this script)

ANALYSES = ("mi", "probes", "pairs", "ner-params")
QUICK = {"epochs": 3, "max_train_examples": 2000}  # compare's quick caps (compare/budget.py)


def commands(args: argparse.Namespace) -> list[list[str]]:
    """The snowfire command lines this page is made of, in order."""
    work, store = Path(args.work), str(Path(args.work) / "compare" / "store")
    compare = [
        "compare",
        "--encoder",
        args.encoder,
        "--tasks",
        args.tasks,
        "--data",
        args.data,
        "--out",
        str(work / "compare"),
        "--seeds",
        str(args.seeds),
    ]
    if args.fire_seeds is not None:
        compare += ["--fire-seeds", str(args.fire_seeds)]
    compare += ["--budget", args.budget]
    if args.trials is not None:
        compare += ["--trials", str(args.trials)]
    if not args.race:
        compare += ["--no-race"]
    if args.arms:
        compare += ["--arms", args.arms]
    if args.intermediate:
        compare += ["--intermediate", args.intermediate]
    if args.keep_remade_starts:
        compare += ["--keep-remade-starts"]
    cmds = [compare]
    caps = []
    if args.budget == "quick":
        caps = ["--epochs", str(QUICK["epochs"])]
    for name in args.analyses:
        cmd = [
            "analyze",
            name,
            "--encoder",
            args.encoder,
            "--data",
            args.data,
            "--out",
            str(work / "analyze"),
            "--store",
            store,
        ]
        if name in ("pairs", "ner-params"):
            cmd += ["--seeds", str(args.analysis_seeds)] + caps
            if args.budget == "quick":
                cmd += ["--max-train-examples", str(QUICK["max_train_examples"])]
        if name == "probes":
            cmd += caps
            for run in sorted((work / "compare" / "fire").glob("*/seed0")):
                cmd += ["--finetuned", f"{run.parent.name}={run}"]
        cmds.append(cmd)
    return cmds


def compose(args: argparse.Namespace, cmds: list[list[str]]) -> str:
    """The page: provenance, compare's table, each analysis; plots copied into DOCS."""
    import numpy
    import torch

    work, docs = Path(args.work), Path(args.docs)
    docs.mkdir(parents=True, exist_ok=True)
    places = {str(work): "WORK", str(args.data): "DATA"}  # the page names no machine's paths
    # the command that remakes the page (--compose-only only rebuilt it from WORK as it was),
    # without the --note's prose, which the page prints below the commands, and without
    # --docs: where the page was written says nothing of how it was made
    hidden = ("--note", "--docs")
    shown = [
        a
        for i, a in enumerate(args.argv)
        if a != "--compose-only"
        and a.split("=")[0] not in hidden
        and (i == 0 or args.argv[i - 1] not in hidden)
    ]
    made_by = shlex.join(_placeholder(a, places) for a in shown)
    parts = [
        f"# Results: ❄️ and 🔥 with {args.encoder}",
        "",
        f"Made by `python experiments/results.py {made_by}`, which ran:",
        "",
        *[f"    snowfire {shlex.join(_placeholder(a, places) for a in c)}" for c in cmds],
        "",
        f"on {platform.machine()}, {cores_usable()} CPU cores, Python {platform.python_version()}, "
        f"torch {torch.__version__}, numpy {numpy.__version__}. Every run's config, seed and "
        "versions are in its run directory under WORK; `WORK/compare/results.json` holds every "
        "cell. Scores are reported on the dev splits of the data directory (its test splits "
        "are held back), x100; every choice is made on the selection split each task names "
        '("chosen on"), never on the split reported.',
        "",
        total(work).sentence(),
        "",
    ]
    tail = [Path(args.append).read_text().rstrip(), ""] if args.append else []
    if args.note:
        parts += [args.note, ""]
    sections = [(work / "compare", "table.md")] + [
        (work / "analyze", f"{n}.md") for n in args.analyses
    ]
    for folder, name in sections:
        text = (folder / name).read_text()
        text = re.sub(r"^# ", "## ", text, flags=re.M)  # one level under the page's title
        text = re.sub(
            r"\]\(([\w.-]+\.png)\)", lambda m, f=folder: f"]({_copy(f, m[1], docs)})", text
        )
        parts += [text.rstrip(), ""]
    return "\n".join(parts + tail)


def _placeholder(arg: str, places: dict[str, str]) -> str:
    """`arg` with a path under one of `places` (also after `TASK=`) shown under its name."""
    head, sep, value = arg.rpartition("=")
    for path, name in sorted(places.items(), key=lambda p: -len(p[0])):
        if value == path or value.startswith(path.rstrip("/") + "/"):
            return head + sep + name + value[len(path.rstrip("/")) :]
    return arg


def _copy(folder: Path, png: str, docs: Path) -> str:
    name = f"results-{png}"
    shutil.copyfile(folder / png, docs / name)
    return name


def _run(args: argparse.Namespace) -> int:
    from snowfire.cli import main as snowfire

    for cmd in commands(args)[:1]:  # compare first: probes reads its 🔥 runs
        if snowfire(cmd) != 0:
            return 1
    for cmd in commands(args)[1:]:
        if snowfire(cmd) != 0:
            return 1
    return 0


def _unpack(archive: Path, work: Path, data: Path) -> None:
    """A machine starting anew: WORK's finished runs from the archive an earlier one wrote."""
    import carry

    if work.is_dir() and any(work.iterdir()):
        print(f"carry: {work} holds runs already; {archive} is not unpacked", flush=True)
        return
    got = carry.unpack(archive, work, data)
    print(f"carry: {got['written']} files of finished runs unpacked from {archive}", flush=True)


def _pack(work: Path, data: Path, archive: Path) -> None:
    import carry

    try:
        made = carry.pack(work, data, archive)
    except (OSError, ValueError) as err:  # said, and the invocation's own end kept
        print(f"carry: {archive} not written: {err}", file=sys.stderr, flush=True)
        return
    print(f"carry: {len(made['files'])} files of finished runs packed into {archive}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--work", required=True, help="where the commands keep their runs")
    p.add_argument("--encoder", default="minilm")
    p.add_argument("--tasks", default="all", help="compare's tasks (comma-separated, or all)")
    p.add_argument("--seeds", type=int, default=3, help="❄️ seeds (and the analyses')")
    p.add_argument("--fire-seeds", type=int, default=None, help="🔥 seeds (default: --seeds)")
    p.add_argument(
        "--analysis-seeds",
        type=int,
        default=1,
        help="seeds per cell of pairs and ner-params (each a full run)",
    )
    p.add_argument(
        "--budget",
        default="quick",
        help="compare's --budget: quick, standard, full, or a time (e.g. 2h: CPU-hours)",
    )
    p.add_argument("--trials", type=int, default=None, help="compare's --trials: N per arm")
    p.add_argument(
        "--race",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="compare's racing (--no-race trains every trial to its cap)",
    )
    p.add_argument("--arms", default="", help="compare's --arms (default: snow,fire)")
    p.add_argument("--intermediate", default="", help="compare's --intermediate (arm seq)")
    p.add_argument(
        "--keep-remade-starts",
        action="store_true",
        help="compare's --keep-remade-starts: seq and lpft runs finished on another machine "
        "are kept though their start, trained again here, has other weights",
    )
    p.add_argument("--append", default="", help="a markdown file added at the page's end")
    p.add_argument(
        "--analyses", default=",".join(ANALYSES), help=f"comma-separated, of {', '.join(ANALYSES)}"
    )
    p.add_argument("--docs", default=str(ROOT / "docs"), help="where results.md goes")
    p.add_argument("--compose-only", action="store_true", help="only rebuild the page")
    p.add_argument(
        "--note",
        default="",
        help="a paragraph for the page (how the runs were made, "
        "e.g. on a shared machine), under the commands",
    )
    p.add_argument(
        "--carry",
        default="",
        help="an archive of WORK's finished runs (experiments/carry.py): unpacked into an "
        "empty WORK first, written again when the invocation ends",
    )
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.analyses = [a for a in args.analyses.split(",") if a]
    unknown = sorted(set(args.analyses) - set(ANALYSES))
    if unknown:
        p.error(f"--analyses: unknown {unknown}; choose from {', '.join(ANALYSES)}")
    if not args.compose_only:
        work = Path(args.work)
        if args.carry and Path(args.carry).is_file():
            _unpack(Path(args.carry), work, Path(args.data))
        try:
            with invocation(work, args.argv):
                if _run(args) != 0:
                    return 1
        finally:  # finished, failed or stopped (SIGTERM): what is finished goes with it
            if args.carry:
                _pack(work, Path(args.data), Path(args.carry))
    page = compose(args, commands(args))
    (Path(args.docs) / "results.md").write_text(page)
    print(f"wrote {Path(args.docs) / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
