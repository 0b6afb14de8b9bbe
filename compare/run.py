"""`snowfire compare`: per task, the features (extracted once, reused from the store), the ❄️
heads and the 🔥 baseline, for every seed; then the report (compare/report.py).

    OUT/store/                          the features (or --store)
    OUT/snow/<task>/<head>/seed<k>/     ❄️ runs (`snowfire train` run directories)
    OUT/fire/<task>/seed<k>/            🔥 runs (`snowfire finetune` run directories)
    OUT/<arm>/<task>/seed<k>/           the other arms' runs (--arms, compare/arms.py)
    OUT/snow/<task>/probe-cls/seed<k>/  arm lpft: the ❄️ probe its output layer starts from
                                        (probe-word on a tagging task: each word's piece)
    OUT/intermediate/<task>/seed0/      arm seq: 🔥 on --intermediate, once
    OUT/<arm>/<task>/epochs-xK/...      every arm's runs under --epochs-scale K > 1: ❄️ runs go
                                        on from the smaller K's (heads/continuation.py)
    OUT/extract/<task>.json             what the extraction cost (kept, so a rerun reports it)
    OUT/baseline/<task>.json            the zero-training baseline (compare/baseline.py)
    OUT/load.jsonl                      each attempt's host load: did other work share its
                                        cores while it was timed (compare/hostload.py)
    OUT/results.json, table.md, table.png, layer_weights.png

Every cell is an ordinary run directory, and a finished run is returned as it is: a rerun
recomputes nothing, and `kill -9` then the same command finishes the same table.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .cell import Cell, Mode
from .config import CompareConfig


def _store(cfg: CompareConfig) -> str:
    return cfg.store or str(Path(cfg.out) / "store")


def task_fields(spec) -> dict[str, Any]:
    """How a command's config names `spec`: a registered task by name, a user's by its
    recorded spec object (absolute paths, each file's sha256: a file edited mid-comparison is
    refused, never mixed in)."""
    from snowfire.tasks import describe

    if spec.registered:
        return {"task": spec.name}
    record = describe(spec)
    return {"task_spec": {k: v for k, v in record.items() if k not in ("metrics", "registered")}}


def check_tasks(cfg: CompareConfig) -> None:
    """Read every split of every task as its runs will (`tasks.read_training`: each row
    checked, train and dev with gold labels) before anything is written: a bad row stops the
    comparison with its file and line, the store and OUT untouched."""
    from snowfire.tasks import TASK_NAMES, get_task, read_training

    specs = list(cfg.specs.values())
    if cfg.intermediate in TASK_NAMES:  # arm seq fine-tunes on it first
        specs.append(get_task(cfg.intermediate))
    for spec in specs:
        read_training(spec, cfg.data)


def extraction_record(
    record: dict[str, Any], missing: list[str], made: list, spent: tuple[float, float]
) -> dict[str, Any]:
    """`record` with the (wall, CPU) seconds `spent` making the `missing` splits' feature sets
    (`made`, their FeatureSetInfo) added.

    A split the record already holds was made again because the store lost it (a new machine,
    a store removed): the cost of making the task's features stays that of making each split
    once, which is what ❄️'s budget counts, and the repeat goes to `remade_*`, so the run's
    whole spend is still on record. One extraction that made both kinds splits its cost by
    their share of the examples.
    """
    known = set(record.get("splits", []))
    new = sum(i.num_examples for i in made if i.split not in known)
    again = sum(i.num_examples for i in made if i.split in known)
    share = new / (new + again) if new + again else 1.0
    out = dict(record)
    for key, seconds, digits in (("seconds", spent[0], 2), ("cpu_seconds", spent[1], 1)):
        out[key] = round(record.get(key, 0.0) + share * seconds, digits)
        if again:
            out[f"remade_{key}"] = round(
                record.get(f"remade_{key}", 0.0) + (1 - share) * seconds, digits
            )
    out["splits"] = sorted(known | set(missing))
    out["examples"] = record.get("examples", 0) + new
    if again:
        out["remade_examples"] = record.get("remade_examples", 0) + again
    return out


def extract_task(cfg: CompareConfig, task: str) -> dict[str, Any]:
    """The task's feature sets (every split in the data directory), extracted where missing."""
    from snowfire.cache import FeatureSetNotFoundError, open_reader
    from snowfire.extractor import ExtractConfig, current_featureset, run_extract
    from snowfire.rundir import write_json
    from snowfire.tasks import available_splits

    record_path = Path(cfg.out) / "extract" / f"{task}.json"
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    pair_encoding = cfg.pair_encoding_used
    spec = cfg.specs[task]
    reader = open_reader(_store(cfg))
    missing, splits = [], available_splits(spec, cfg.data)
    for split in splits:
        try:
            current_featureset(reader, cfg.encoder, spec, cfg.data, split, pair_encoding)
        except (FeatureSetNotFoundError, ValueError):
            missing.append(split)
    if missing:
        started, cpu = time.perf_counter(), time.process_time()
        made = run_extract(
            ExtractConfig(
                encoder=cfg.encoder,
                store=_store(cfg),
                data=cfg.data,
                split=missing,
                pair_encoding=pair_encoding,
                device=cfg.device,
                progress=cfg.progress,
                **task_fields(spec),
            )
        )
        spent = (time.perf_counter() - started, time.process_time() - cpu)
        record = extraction_record(record, missing, made, spent)
        record_path.parent.mkdir(parents=True, exist_ok=True)
        write_json(record_path, record)
    return record | {"reused": not missing, "pair_encoding": pair_encoding, "all_splits": splits}


def find_or_extract(
    encoder: str,
    store: str,
    task,
    data: str | None,
    split: str,
    pair: str,
    device: str | None = None,
    progress: bool = True,
    who: str = "analyze",
):
    """The feature set of one task split (`task`: a TaskSpec or a registered name) made from
    its current file, extracted first when the store lacks it."""
    from snowfire.cache import FeatureSetNotFoundError, open_reader
    from snowfire.extractor import ExtractConfig, current_featureset, run_extract
    from snowfire.tasks import as_spec

    spec = as_spec(task)

    def find():
        return current_featureset(open_reader(store), encoder, spec, data, split, pair)

    try:
        return find()
    except FeatureSetNotFoundError:
        print(f"{who}: extracting {spec.name} {split} ({pair} pairs) with {encoder}", flush=True)
        run_extract(
            ExtractConfig(
                encoder=encoder,
                store=store,
                data=data,
                split=[split],
                pair_encoding=pair,
                device=device,
                progress=progress,
                **task_fields(spec),
            )
        )
        return find()


def intermediate_run(cfg: CompareConfig) -> str | None:
    """Arm seq's starting encoder's run: --intermediate's run directory, or where compare runs
    the registered task it names."""
    from snowfire.tasks import TASK_NAMES

    if not cfg.intermediate:
        return None
    if cfg.intermediate in TASK_NAMES:
        return str(Path(cfg.out) / "intermediate" / cfg.intermediate / "seed0")
    return cfg.intermediate


def plan(cfg: CompareConfig) -> list[Cell]:
    """Every cell of the comparison, in the order they run."""
    from snowfire.tasks import TASK_NAMES

    from .arms import fine_tuning_arms, why_not
    from .trials import probe_run, trial_cells

    cells: list[Cell] = []
    if cfg.intermediate in TASK_NAMES:  # arm seq's first stage, before every task
        cells.append(Cell(Mode.INTERMEDIATE, cfg.intermediate, None, 0, intermediate_run(cfg)))
    for task in cfg.names:
        if cfg.trials:
            cells += trial_cells(cfg, task)
            continue
        for seed in range(cfg.seeds):
            for head in cfg.heads_for(task):
                run = cfg.arm_dir(Mode.SNOW, task) / head / f"seed{seed}"
                cells.append(Cell(Mode.SNOW, task, head, seed, str(run)))
        for seed in range(cfg.seeds_fire):
            run = cfg.arm_dir(Mode.FIRE, task) / f"seed{seed}"
            cells.append(Cell(Mode.FIRE, task, None, seed, str(run)))
        for arm in map(Mode, fine_tuning_arms(cfg.arms)):
            if why_not(arm.value, task, cfg.specs[task].kind, cfg.intermediate):
                continue  # the report says why
            for seed in range(cfg.seeds_fire):
                if arm is Mode.LPFT:
                    probe = probe_run(cfg, task, seed, None)
                    cells.append(Cell(Mode.PROBE, task, "probe", seed, probe))
                run = cfg.arm_dir(arm, task) / f"seed{seed}"
                cells.append(Cell(arm, task, None, seed, str(run)))
    return cells


def cell_config(cfg: CompareConfig, cell: Cell, pair_encoding: str):
    """The run config of one cell: a `heads.TrainConfig` (❄️ side) or a
    `finetune.FinetuneConfig` (🔥 side), its budget's caps and its trial's draw applied, and
    an arm's epoch cap times --epochs-scale (first stages keep theirs)."""
    from dataclasses import replace

    config = _cell_config(cfg, cell, pair_encoding)
    if cell.mode is Mode.SNOW:  # a larger --epochs-scale goes on from its last state
        config = replace(config, keep_state=True)
    if cfg.epochs_scale > 1 and cell.mode.is_arm:
        return replace(config, epochs=config.epochs * cfg.epochs_scale)
    return config


def _cell_config(cfg: CompareConfig, cell: Cell, pair_encoding: str):
    from .arms import ARM_OPTIONS, probe_recipe
    from .trials import fire_options, probe_run, snow_options

    caps: dict[str, Any] = cfg.caps(cell.mode, cell.task).options()
    spec = cfg.specs.get(cell.task)
    task = task_fields(spec) if spec is not None else {"task": cell.task}
    if cell.mode.side is Mode.SNOW:
        from snowfire.heads import TrainConfig

        probe = cell.mode is Mode.PROBE
        hparams = probe_recipe(cfg.specs[cell.task].kind)["hparams"] if probe else cfg.hparams
        if cell.trial is not None:  # the trial's draw (compare/search.py)
            caps = snow_options(cell, caps)
            hparams = {**hparams, **caps.pop("hparams", {})}
        return TrainConfig(
            store=_store(cfg),
            encoder=cfg.encoder,
            head=cell.head,
            data=cfg.data,
            out=cell.run,
            seed=cell.seed,
            selection=cfg.selection,
            pair_encoding=pair_encoding,
            progress=cfg.progress,
            device=cfg.device,
            hparams=dict(hparams),
            **task,
            **caps,
        )
    from snowfire.finetune import FinetuneConfig

    # full: the rate and epochs tuned as the paper did, on the selection split (`--grid shared`)
    grid = "shared" if cfg.named_budget == "full" else None
    options = dict(ARM_OPTIONS.get(cell.mode.value, {}))
    encoder = cfg.encoder
    if cell.mode is Mode.LPFT:
        options["init_head"] = probe_run(cfg, cell.task, cell.seed, cell.trial)
    if cell.mode is Mode.SEQ:
        encoder = f"hf:{Path(intermediate_run(cfg)) / 'encoder'}"
    if options.get("method") or cell.mode is Mode.INTERMEDIATE:
        grid = None  # a grid tunes 🔥 alone; the other arms run their papers' recipes
    if cell.trial is not None:  # the trial's draw, not a grid: every arm tuned alike
        grid, caps = None, fire_options(cell, caps)
        options = {k: v for k, v in options.items() if k not in caps}
    return FinetuneConfig(
        encoder=encoder,
        data=cfg.data,
        out=cell.run,
        seed=cell.seed,
        selection=cfg.selection,
        progress=cfg.progress,
        device=cfg.device,
        grid=grid,
        keep_remade_start=cfg.keep_remade_starts,
        **task,
        **caps,
        **options,
    )


def run_cell(
    cfg: CompareConfig,
    cell: Cell,
    pair_encoding: str,
    pause_at: int | None = None,
    stop_at: int | None = None,
) -> dict[str, Any]:
    """Train one cell (or return its finished run): {split: {metric: value}}; {} when it
    paused at a race's rung (`pause_at`); `stop_at`: the race ends it at that epoch."""
    from dataclasses import replace

    config = replace(cell_config(cfg, cell, pair_encoding), pause_at=pause_at, stop_at=stop_at)
    if cell.mode.side is Mode.SNOW:
        from snowfire.heads import train

        if cfg.epochs_scale > 1 and cell.mode is Mode.SNOW:
            go_on_from_smaller_scale(cfg, cell, config)
        return train(config)
    from snowfire.finetune import train as finetune

    return finetune(config)


def go_on_from_smaller_scale(cfg: CompareConfig, cell: Cell, config) -> str | None:
    """A ❄️ cell under --epochs-scale K not started yet: start it from the same cell of the
    largest smaller scale that finished (heads/continuation.py: "same", "continued"), else
    None (it trains from scratch)."""
    from snowfire.heads import continue_from
    from snowfire.rundir import LOCK, METRICS, RunConfigError

    out = Path(cell.run)
    if out.exists() and any(p.name != LOCK for p in out.iterdir()):
        return None  # started, paused or finished already
    within = out.relative_to(cfg.arm_dir(cell.mode, cell.task))  # [trial<k>/]seed<s>, ...
    for k in range(cfg.epochs_scale - 1, 0, -1):
        base = cfg.arm_dir(cell.mode, cell.task, scale=k) / within
        if (base / METRICS).is_file():
            try:
                how = continue_from(base, config)
            except RunConfigError as err:  # another config than this cell's: not its start
                print(f"{cell.task} {cell.run}: trains anew ({err})", flush=True)
                return None
            said = {"same": "the same run as", "continued": "goes on from"}
            print(f"{cell.task} {cell.run}: {said.get(how or '', 'trains anew, not from')} {base}")
            return how
    return None


def run_compare(cfg: CompareConfig) -> dict[str, Any]:
    """Run every cell (finished ones are read back), write the report; its summary. A time
    budget (`--budget 2h`) plans the trials first (compare/timebudget.py). `replay`: train
    nothing, the race recomputed from OUT's runs; its record (compare/replaying.py)."""
    from .report import write_report

    if cfg.replay:  # nothing trained: the race recomputed from OUT's recorded runs
        from .replaying import replay_compare

        return replay_compare(cfg)
    check_tasks(cfg)  # every row of every task, before anything is written
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    extraction: dict[str, dict] = {}
    baselines: dict[str, dict | None] = {}
    finished: dict[Cell, Cell] = {}
    timing = None
    if cfg.hours:  # a time budget: one trial of every arm first, then as many as fit
        from dataclasses import replace

        from .timebudget import calibration_costs, plan_trials

        first = replace(cfg, trials=1, race=False)  # its cost measured over whole trials
        print(f"compare: budget {cfg.budget}: one trial of every arm first", flush=True)
        _run_cells(first, plan(first), extraction, baselines, finished, {})
        spent, per_trial, unit = calibration_costs(list(finished.values()), extraction)
        timing = plan_trials(cfg.hours, spent, per_trial, unit)
        print(f"compare: {timing.describe()}", flush=True)
        cfg = replace(cfg, trials=timing.trials)
    cells = plan(cfg)
    races: dict[str, dict] = {}
    _run_cells(cfg, cells, extraction, baselines, finished, races)
    cells = [finished[c] for c in cells if c in finished]  # the race's unrun seeds left out
    return write_report(cfg, cells, extraction, baselines, timing, races)


def _run_cells(
    cfg: CompareConfig,
    cells: list[Cell],
    extraction: dict,
    baselines: dict,
    finished: dict,
    races: dict,
) -> None:
    """Every cell of `cells` not yet in `finished`, task by task: each task's features first
    (extracted where missing) and its zero-training baseline; its arms raced (`cfg.race`,
    compare/racing.py: each task's record into `races`) or trained to their caps."""
    from .baseline import run_baseline

    every, cells = cells, [c for c in cells if c not in finished]
    first = [c for c in cells if c.mode is Mode.INTERMEDIATE]  # arm seq's first stage
    _run_stage(cfg, first, {"pair_encoding": cfg.pair_encoding_used}, finished, len(cells))
    for task in cfg.names:
        if task not in extraction:
            print(f"compare {task}: features of {cfg.encoder}", flush=True)
            extraction[task] = extract_task(cfg, task)
            baselines[task] = run_baseline(cfg, task, _store(cfg))
            if baselines[task]:
                base = baselines[task]
                shown = ", ".join(f"{k} {v:.4f}" for k, v in base.get("dev", {}).items())
                print(f"compare {task}: no training, {base['method']}: dev {shown}", flush=True)
        mine = [c for c in cells if c.task == task and c.mode is not Mode.INTERMEDIATE]
        # lpft's probes before the arms that start from them (Ray runs a stage's cells at once)
        for stage in (
            [c for c in mine if c.mode is Mode.PROBE],
            [c for c in mine if c.mode is not Mode.PROBE],
        ):
            if cfg.race and stage and stage[0].mode is not Mode.PROBE:
                # every arm's cell of the task races, the ones finished before too (their
                # recorded predictions weigh; a time budget's first trials)
                arms = [c for c in every if c.task == task and c.mode.is_arm]
                races[task] = _race_task(cfg, task, arms, extraction[task], finished, len(cells))
            else:
                _run_stage(cfg, stage, extraction[task], finished, len(cells))


def _race_task(
    cfg: CompareConfig, task: str, cells: list[Cell], extraction: dict, finished: dict, total: int
) -> dict:
    """One task's arms raced rung by rung (compare/racing.py); the cells that cannot pause
    first, whole; a cell finished already is not run again. The race's record for
    results.json."""
    from .racing import race_task, raced

    configs = {c.run: cell_config(cfg, c, extraction["pair_encoding"]) for c in cells}
    racing = raced(cells, configs)
    whole = [c for c in cells if c not in racing and c not in finished]
    _run_stage(cfg, whole, extraction, finished, total)

    def run_rung(steps):
        steps = [s for s in steps if s[0] not in finished]
        _run_stage(cfg, [c for c, _, _ in steps], extraction, finished, total, steps)

    spec = cfg.specs[task]
    caps = {c.run: configs[c.run].epochs for c in racing}
    keep = not cfg.race_stops_leaders
    return race_task(racing, caps, spec.metric, spec.kind, run_rung, keep_leaders=keep)


def _run_stage(
    cfg: CompareConfig,
    cells: list[Cell],
    extraction: dict,
    finished: dict,
    total: int,
    steps: list[tuple[Cell, int | None, int | None]] | None = None,
) -> None:
    """Run `cells` (at once on Ray, else in turn), each into `finished` (cell -> the cell with
    its metrics) and printed as it finishes; steps: a race's rung, (cell, pause_at, stop_at)
    of each (a paused cell is not finished yet)."""
    from .arms import ARM_NAMES
    from .dispatch import here, on_ray
    from .hostload import record_attempt

    if not cells:
        return
    race = {c: (pause, stop) for c, pause, stop in steps or []}
    runs = on_ray(cfg, cells, extraction, race) if cfg.ray else here(cfg, cells, extraction, race)
    for cell, (metrics, seconds, load) in runs:
        record_attempt(cfg.out, cell, load)  # OUT/load.jsonl: did other work share its cores?
        if not metrics:  # paused at the rung
            print(f"{cell.task} {cell.run}: paused at epoch {race[cell][0]}", flush=True)
            continue
        finished[cell] = cell.finished(metrics)
        what = {
            Mode.SNOW: f"❄️ {cell.head}",
            Mode.PROBE: "❄️ probe (LP-FT's start)",
            Mode.INTERMEDIATE: "🔥 intermediate (arm seq's start)",
        }.get(cell.mode) or ARM_NAMES[cell.mode.value]
        shown = ", ".join(f"{k} {v:.4f}" for k, v in metrics.get("dev", {}).items())
        print(
            f"[{len(finished)}/{total}] {cell.task} {what} seed {cell.seed}: dev {shown} "
            f"({took(cell.run, seconds)})",
            flush=True,
        )


def took(run: str, seconds: float) -> str:
    """A finished cell's time for the log: this invocation's seconds, and the run's total
    (RUN/config.json "seconds") when it trained across invocations (a raced or resumed run)."""
    from snowfire.rundir import CONFIG

    config = Path(run) / CONFIG
    total = json.loads(config.read_text()).get("seconds") if config.is_file() else None
    if isinstance(total, int | float) and total >= seconds + 1:
        return f"{seconds:.0f} s here, {total:.0f} s in all"
    return f"{seconds:.0f} s"
