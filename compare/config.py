"""The config of `snowfire compare`; its budgets are compare/budget.py's."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from snowfire.extractor import DEVICE_HELP, PAIR_ENCODINGS
from snowfire.options import check, option
from snowfire.tasks import SELECTIONS, TaskListFields

from .budget import BUDGETS, Caps
from .cell import Mode

#: The paper's ❄️ model per task (sec. 3): the BiLSTM-CRF for NER, BCN for sentiment, ESIM for
#: sentence pairs; `--heads auto` trains it and the smallest head (linear) beside it.
PAPER_HEAD = {
    "conll2003": "bilstm-crf",
    "sst2": "bcn",
    "cola": "bcn",
    "mnli": "esim",
    "sick-e": "esim",
    "sick-r": "esim",
    "mrpc": "esim",
    "stsb": "esim",
}
SMALLEST_HEAD = {"tagging": "crf", "classification": "linear", "regression": "linear"}
#: The seven tasks of the paper's Table 2 (`--tasks all`).
ALL_TASKS = ("conll2003", "sst2", "mnli", "sick-e", "sick-r", "mrpc", "stsb")


def time_budget(text: str) -> float | None:
    """Hours of a time budget ("2h", "1.5h", "90m"), None when `text` is not one."""
    import re

    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([hm])", text.strip())
    if found is None or float(found[1]) <= 0:
        return None
    return float(found[1]) / (60 if found[2] == "m" else 1)


def named_budget(budget: str) -> str:
    """The named budget whose caps a `--budget` takes (a time budget: standard's)."""
    return "standard" if time_budget(budget) else budget


def paper_head(kind: str, pair: bool) -> str:
    """The paper's ❄️ model for a kind of task: the BiLSTM-CRF for tagging, ESIM for pairs,
    BCN for one text (what sec. 3 uses for NER, entailment/similarity and sentiment)."""
    if kind == "tagging":
        return "bilstm-crf"
    return "esim" if pair else "bcn"


@dataclass(frozen=True)
class CompareConfig(TaskListFields):
    """One `snowfire compare`: ❄️ heads and 🔥 fine-tuning of one encoder on some tasks (the
    registered `tasks`, and the user's `task_spec` with `data`: tasks.TaskListFields)."""

    encoder: str = option(help="the encoder: minilm, hf:NAME_OR_DIR, elmo:OPTIONS,WEIGHTS")
    out: str = option(help="output directory: runs, results.json, table.md, plots")
    tasks: list[str] = option(
        help="registered tasks to compare (repeatable, or comma-separated; all: the paper's seven)",
        factory=list,
    )
    seeds: int | None = option(
        None,
        "seeds per cell, each a full run (default: 1 under quick, 3 under standard and full)",
        ge=1,
    )
    fire_seeds: int | None = option(
        None,
        "🔥 seeds per task when fewer than --seeds (🔥 costs the most); default: --seeds",
        ge=1,
    )
    budget: str = option(
        "quick",
        "quick: a first look in minutes (rarely earns a verdict); "
        "standard: converges on a laptop; full: the commands' defaults and "
        "🔥 tuned on the selection split (table.md prints the caps); or a time, e.g. 2h or "
        "90m (CPU-hours, GPU-hours on a GPU): standard's caps, and as many trials per arm as "
        "fit, planned from each arm's measured trial (compare/plan.py)",
    )
    trials: int | None = option(
        None,
        "tune every arm with N configurations drawn from its search space (compare/search.py: "
        "the same draws for every task and seed); each arm keeps its best on the selection "
        "split, and every trial draws its budget curve; default: each arm's one recipe",
        ge=1,
    )
    epochs_scale: int = option(
        1,
        "every arm's epoch cap times K (the budget's, or each trial's): runs go to "
        "<arm>/<task>/epochs-xK/; rerun with a larger K, a comparison's ❄️ runs go on from where "
        "the smaller K's ended and train only the new epochs (heads/continuation.py), its "
        "🔥-side runs train again (their rate schedule spans the cap)",
        ge=1,
    )
    race: bool = option(
        True,
        "race the arms and trials: train in rungs, and after each stop what is clearly behind "
        "the leader on the selection split (paired per example; compare/racing.py); "
        "--no-race trains every cell to its cap",
    )
    race_stops_leaders: bool = option(
        False,
        "the earlier race rule: an arm's leading trial stops too when it is clearly behind the "
        "overall leader (cheaper; it may stop an arm that is still rising, compare/race.py); "
        "by default every arm's leader trains to its cap",
    )
    replay: bool = option(
        False,
        "train nothing: recompute the race's decisions from OUT's recorded runs (raced or "
        "--no-race), print them and write OUT/replay.json (compare/replaying.py)",
    )
    selection: str = option(
        "auto",
        "the split every choice is made on, for every arm: auto: dev where a labelled test "
        "split reports, else a stratified slice of train, dev reporting (tasks/selection.py); "
        "dev: select and report on dev (the old protocol: optimistic, flagged in table.md)",
        choices=SELECTIONS,
    )
    store: str | None = option(
        None, "feature store (default OUT/store); features already there are reused"
    )
    heads: list[str] | None = option(
        None,
        "❄️ heads (default: the paper's head for the task "
        "and, except under standard, the smallest one)",
    )
    pair_encoding: str | None = option(
        None,
        "❄️ features of pairs encoded joint (the default for BERT-family encoders) or "
        "separate (each text alone; ELMo always)",
        choices=PAIR_ENCODINGS,
    )
    hparams: dict[str, Any] = option(
        help='options of every ❄️ head as JSON (with --heads), e.g. {"pooled": true}',
        factory=dict,
    )
    arms: list[str] | None = option(
        None,
        "what to compare, comma-separated: snow and fire (always), adapter, lora, bitfit, "
        "l2sp, lpft, seq (compare/arms.py); default: snow,fire",
    )
    intermediate: str | None = option(
        None,
        "arm seq: the task fine-tuned first (a registered task, e.g. mnli, read from "
        "--data) or a finished 🔥 run directory",
    )
    keep_remade_starts: bool = option(
        False,
        "keep the finished 🔥 runs of arms seq and lpft that started from other weights than "
        "their intermediate encoder or probe holds now (trained again, e.g. on another "
        "machine, whose CPU kernels change the last bits), each with the start it recorded; "
        "table.md says per task which starts its runs came from (compare/starts.py); "
        "default: refuse them by name",
    )
    forecast_from: str | None = option(
        None,
        "an earlier comparison's OUT (or its results.json) whose budget-limited forecasts "
        "this run checks where it reached 2x or 4x that budget: forecast vs measured Δ in "
        "results.json and table.md (compare/forecast_report.py); OUT's own earlier "
        "results.json is always checked",
    )
    device: str | None = option(None, DEVICE_HELP)
    progress: bool = option(True, "show progress bars")
    cell_processes: bool = option(
        True,
        "train each cell in a fresh process (forked from a fork server that loaded torch "
        "once: compare/cellproc.py; on Ray, a worker per cell), so that its peak memory is "
        "its own; --no-cell-processes trains every cell in this process, and the table marks "
        "the peaks that may hold what earlier cells left",
    )
    ray: str | None = option(
        None,
        "run each task's cells at once as Ray tasks on this cluster (an address, auto, or "
        "local to start one); OUT and the store must be reachable from every node",
    )

    def __post_init__(self) -> None:
        check(self)
        from snowfire.extractor import encoder_family

        if encoder_family(self.encoder) == "elmo" and self.pair_encoding == "joint":
            raise ValueError(
                "CompareConfig.pair_encoding: ELMo encodes each text alone; "
                "expected separate (or none), got 'joint'"
            )
        if self.budget not in BUDGETS and time_budget(self.budget) is None:
            raise ValueError(
                f"CompareConfig.budget: expected one of {', '.join(BUDGETS)} or a time such as "
                f"2h or 90m, got {self.budget!r}"
            )
        names = [t for item in self.tasks for t in item.split(",") if t]
        names = list(ALL_TASKS) if names == ["all"] else names
        object.__setattr__(self, "tasks", list(dict.fromkeys(names)))
        self.specs  # noqa: B018 (resolved and checked now: the errors name the field)
        if self.seeds is None:
            object.__setattr__(self, "seeds", 1 if self.hours else BUDGETS[self.budget].seeds)
        if self.heads is not None:
            object.__setattr__(self, "heads", [h for item in self.heads for h in item.split(",")])
        from .arms import parse_arms

        object.__setattr__(self, "arms", parse_arms(self.arms))
        self._check_arms()
        if self.epochs_scale > 1 and self.named_budget == "full" and not self.trials:
            raise ValueError(
                "CompareConfig.epochs_scale: --budget full tunes 🔥's epochs with a grid; "
                "raise the caps with --trials or under quick or standard"
            )
        if self.forecast_from:  # checked now, not after the training
            from pathlib import Path

            found = Path(self.forecast_from)
            if not (found / "results.json").is_file() and not found.is_file():
                raise ValueError(
                    "CompareConfig.forecast_from: expected an earlier comparison's OUT (with "
                    f"results.json) or its results.json, got {self.forecast_from!r}"
                )

    def _check_arms(self) -> None:
        from snowfire.extractor import encoder_family

        extra = [a for a in self.arms if a not in ("snow", "fire")]
        if extra and encoder_family(self.encoder) != "hf":
            raise ValueError(
                f"CompareConfig.arms: {', '.join(extra)} are for BERT-family "
                f"encoders, not {self.encoder}"
            )
        if "seq" in self.arms and not self.intermediate:
            raise ValueError(
                "CompareConfig.intermediate: arm seq needs the task to fine-tune "
                "first (e.g. mnli) or a finished 🔥 run directory"
            )
        if self.intermediate and "seq" not in self.arms:
            raise ValueError("CompareConfig.intermediate: only for arm seq (add it to arms)")
        if "lpft" in self.arms:
            if self.pair_encoding_used != "joint" and any(s.pair for s in self.specs.values()):
                raise ValueError(
                    "CompareConfig.arms: lpft's probe must read what 🔥 reads, "
                    "pairs encoded joint (not --pair-encoding separate)"
                )
        if self.intermediate:
            from pathlib import Path

            from snowfire.tasks import TASK_NAMES

            if self.intermediate not in TASK_NAMES and not Path(self.intermediate).is_dir():
                raise ValueError(
                    f"CompareConfig.intermediate: {self.intermediate!r} is neither "
                    f"a registered task ({', '.join(TASK_NAMES)}) nor a run "
                    "directory"
                )

    def arm_dir(self, arm: Mode, task: str, scale: int | None = None) -> Path:
        """Where an arm's runs of `task` go: OUT/<arm>/<task>, under --epochs-scale K > 1
        OUT/<arm>/<task>/epochs-xK (every scale's runs kept side by side); `scale`: another
        scale's folder than this comparison's."""
        scale = self.epochs_scale if scale is None else scale
        where = Path(self.out) / arm.value / task
        return where / f"epochs-x{scale}" if scale > 1 else where

    def caps(self, mode: Mode | str, task: str) -> Caps:
        """The budget's caps of a `mode` cell of `task` (a ❄️ run's for snow and probe, a 🔥
        run's for the others): its side's and the task's training subsample, the same for
        both sides."""
        try:
            mode = Mode(mode)
        except ValueError:
            raise ValueError(
                f"CompareConfig.caps: expected a mode among {[m.value for m in Mode]}, got {mode!r}"
            ) from None
        caps = BUDGETS[self.named_budget].caps(mode, task)
        from snowfire.extractor import encoder_family

        if encoder_family(self.encoder) != "hf":  # ELMo: scored at epoch ends only (its state)
            caps = replace(caps, curve_points=None)
        return caps

    @property
    def hours(self) -> float | None:
        """A time budget in hours (CPU-hours, GPU-hours on a GPU), None for a named one."""
        return time_budget(self.budget)

    @property
    def named_budget(self) -> str:
        """The named budget whose caps the runs take: a time budget takes standard's."""
        return named_budget(self.budget)

    @property
    def seeds_fire(self) -> int:
        return self.seeds if self.fire_seeds is None else min(self.fire_seeds, self.seeds)

    @property
    def pair_encoding_used(self) -> str:
        """The encoding of the pairs' ❄️ features: the option, else the family's default."""
        from snowfire.extractor import encoder_family

        if self.pair_encoding:
            return self.pair_encoding
        return "joint" if encoder_family(self.encoder) == "hf" else "separate"

    def heads_for(self, task: str) -> list[str]:
        """--heads, else the paper's head for the task and, under quick and full, the smallest
        one beside it (standard trains the paper's alone: on a laptop the linear head takes
        longer to flatten than ESIM, for a worse score on every task of the paper)."""
        if self.heads:
            return list(self.heads)
        spec = self.specs[task]
        paper = PAPER_HEAD[task] if spec.registered else paper_head(spec.kind, spec.pair)
        if self.named_budget == "standard":
            return [paper]
        return list(dict.fromkeys([paper, SMALLEST_HEAD[spec.kind]]))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
