"""What `snowfire.train`, `finetune`, `compare`, `predict` and `layers` return: small frozen
records of a finished run, read from the run directory it wrote (rundir/files.py names every
file), so a result from a fresh run and one from a finished run reused are the same object."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Metrics = dict[str, dict[str, float]]  # {split: {metric: value}}


def _score(metrics: Metrics, split: str, metric: str | None, task: str | None) -> float:
    from snowfire.tasks import get_task

    if split not in metrics:
        raise KeyError(f"no {split!r} scores; splits scored: {', '.join(metrics) or 'none'}")
    if metric is None and task is not None:
        try:
            metric = get_task(task).metric
        except (ValueError, TypeError):
            pass
    name = metric or next(iter(metrics[split]))  # a user's task (task_spec): its first is primary
    if name not in metrics[split]:
        raise KeyError(f"no {name!r} on {split}; metrics: {', '.join(metrics[split])}")
    return metrics[split][name]


@dataclass(frozen=True)
class TrainResult:
    """A finished ❄️ head run (`snowfire train`).

    run:        the run directory (config.json, metrics.json, head.json, weights, predictions)
    task, head: what was trained (task None: a user's task_spec)
    featureset: the id of the training split's feature set
    metrics:    {split: {metric: value}} of every split with gold labels
    scalar_mix: {module: softmax(w) per layer} of every scalar mix in the head ({} for none)
    paused:     RUN/paused.json of a run paused at a rung (`pause_at`), else None: then only
                `run` and `paused` say anything
    """

    run: Path
    task: str | None
    head: str
    featureset: str
    metrics: Metrics
    scalar_mix: dict[str, list[float]] = field(default_factory=dict)
    paused: dict[str, Any] | None = None

    @classmethod
    def from_run(cls, run: str | Path, metrics: Metrics | None = None) -> TrainResult:
        """The result of the finished (or paused: `paused`) run in directory `run`."""
        from snowfire.rundir import CONFIG, METRICS, PAUSED, SCALAR_MIX

        run = Path(run)
        if not metrics and (run / PAUSED).is_file():  # paused at a rung: no config.json yet
            return cls(run, None, "", "", {}, {}, paused=json.loads((run / PAUSED).read_text()))
        config = json.loads((run / CONFIG).read_text())
        mix_file = run / SCALAR_MIX
        return cls(
            run=run,
            task=config["train"].get("task"),
            head=config["train"]["head"],
            featureset=config["featureset"]["id"],
            metrics=metrics if metrics is not None else json.loads((run / METRICS).read_text()),
            scalar_mix=json.loads(mix_file.read_text()) if mix_file.is_file() else {},
        )

    def score(self, split: str = "dev", metric: str | None = None) -> float:
        """One score: `metric` (default: the task's primary metric) on `split`."""
        return _score(self.metrics, split, metric, self.task)

    def load_head(self):
        """(the trained head in eval mode, RUN/head.json): feed it `snowfire.FeatureDataset`
        batches (`dataset.collate`) or `heads.collate` ones."""
        from snowfire.heads import load_head

        return load_head(self.run)


@dataclass(frozen=True)
class FinetuneResult:
    """A finished 🔥 fine-tuning run (`snowfire finetune`).

    run:     the run directory; RUN/encoder/ is the fine-tuned encoder (`hf:RUN/encoder`)
    task:    the task
    metrics: {split: {metric: value}}; with a grid, the chosen cell's
    chosen:  with a grid, the chosen cell ({"lr", "epochs", "selection", "run", ...}); else None
    paused:  RUN/paused.json of a run paused at a rung (`pause_at`), else None
    """

    run: Path
    task: str | None
    metrics: Metrics
    chosen: dict[str, Any] | None = None
    paused: dict[str, Any] | None = None

    @classmethod
    def from_run(cls, run: str | Path, metrics: Metrics | None = None) -> FinetuneResult:
        from snowfire.rundir import CONFIG, METRICS, PAUSED

        run = Path(run)
        config = json.loads((run / CONFIG).read_text())
        if not metrics and (run / PAUSED).is_file():  # paused at a rung
            paused = json.loads((run / PAUSED).read_text())
            return cls(run, config["finetune"].get("task"), {}, paused=paused)
        return cls(
            run=run,
            task=config["finetune"].get("task"),
            metrics=metrics if metrics is not None else json.loads((run / METRICS).read_text()),
            chosen=config.get("grid", {}).get("chosen"),
        )

    def score(self, split: str = "dev", metric: str | None = None) -> float:
        return _score(self.metrics, split, metric, self.task)


@dataclass(frozen=True)
class TaskVerdict:
    """One task of a comparison (compare/report.py's summary of it).

    metric:    the task's primary metric
    best_head: the ❄️ head chosen on dev
    snow/fire: {split: (mean, sd)} over seeds of the best ❄️ head and of 🔥 (sd None: one seed)
    heads:     {head: {split: (mean, sd)}} of every ❄️ head
    delta:     🔥 − ❄️ on `split` (the seeds' means)
    verdict:   the verdict's words ("🔥 > ❄️", "❄️ > 🔥", "❄️ ≈ 🔥", "budget-limited: no
               verdict", or that neither side beats the no-training row)
    baseline:  the zero-training baseline ({"method", "dev", ...}) where the task has one
    interval:  Δ's 95% interval (a paired bootstrap over examples and seeds)
    split:     test where every cell scored a labelled test split, else dev
    text:      the verdict with its numbers and notes, as table.md prints it
    """

    metric: str
    best_head: str
    snow: dict[str, tuple[float, float | None]]
    fire: dict[str, tuple[float, float | None]]
    heads: dict[str, dict[str, tuple[float, float | None]]]
    delta: float
    verdict: str
    baseline: dict[str, Any] | None = None
    interval: tuple[float, float] | None = None  # Δ's 95% interval (compare/judge.py)
    split: str = "dev"  # what Δ was measured on: test where every cell had one, else dev
    text: str = ""  # the verdict with its numbers and notes, as table.md prints it

    @classmethod
    def from_summary(cls, s: dict[str, Any]) -> TaskVerdict:
        def pairs(d):
            return {k: tuple(v) for k, v in d.items()}

        return cls(
            metric=s["metric"],
            best_head=s["best_head"],
            snow=pairs(s["snow"]),
            fire=pairs(s["fire"]),
            heads={h: pairs(v) for h, v in s["heads"].items()},
            delta=s["verdict"]["delta"]["delta"],
            verdict=s["verdict"]["verdict"],
            baseline=s.get("baseline"),
            interval=(s["verdict"]["delta"]["low"], s["verdict"]["delta"]["high"]),
            split=s["verdict"]["split"],
            text=s["verdict"]["text"],
        )


@dataclass(frozen=True)
class CompareResult:
    """A finished comparison (`snowfire compare`): OUT/results.json, table.md and plots.

    out:     the output directory
    table:   OUT/table.md's text
    tasks:   {task: TaskVerdict}
    results: the whole of OUT/results.json (config, every cell with its metrics, versions)
    """

    out: Path
    table: str
    tasks: dict[str, TaskVerdict]
    results: dict[str, Any]

    @classmethod
    def from_out(cls, out: str | Path) -> CompareResult:
        from snowfire.rundir import RESULTS, TABLE

        out = Path(out)
        results = json.loads((out / RESULTS).read_text())
        return cls(
            out=out,
            table=(out / TABLE).read_text(),
            tasks={t: TaskVerdict.from_summary(s) for t, s in results["tasks"].items()},
            results=results,
        )

    def export_mteb(self, directory: str | Path) -> list[Path]:
        """Write the comparison as MTEB results under `directory` (compare/mteb.py): one
        `results/{model}/{revision}/{task}.json` per arm and task beside `model_meta.json`.
        The files written."""
        from snowfire.compare import export_mteb

        return export_mteb(self.out, directory)


@dataclass(frozen=True)
class PredictResult:
    """Predictions of a saved ❄️ run (`snowfire predict`).

    out:         the predictions file (the run's predictions/<split>.tsv format)
    predictions: one per example, decoded (labels, scores or tag lists)
    """

    out: Path
    predictions: list = field(default_factory=list)


@dataclass(frozen=True)
class Score:
    """A seed-averaged score (or a difference) with its 95% interval; `seeds`: each seed's."""

    value: float
    low: float
    high: float
    seeds: tuple[float, ...] = ()

    @classmethod
    def of(cls, entry: dict[str, Any]) -> Score:
        """From an entry of OUT/layers.json: a score ("score") or a difference ("delta")."""
        value = entry["score"] if "score" in entry else entry["delta"]
        return cls(value, entry["low"], entry["high"], tuple(entry.get("seeds", ())))


@dataclass(frozen=True)
class LayerRow:
    """One layer of a sweep: its linear and MLP probes' scores, and with a control task their
    control accuracy and selectivity ({"linear": Score, "mlp": Score}; None for regression)."""

    layer: int
    linear: Score
    mlp: Score
    control: dict[str, float] | None = None
    selectivity: dict[str, Score] | None = None


@dataclass(frozen=True)
class LayersResult:
    """A layer sweep (`snowfire layers`): which layer of the stored features carries the task.

    recommendation: the answer in words; best_layer: chosen on the selection split; carrying:
    the layers no worse than it by their intervals; carries: False when no layer beats its
    control task (or, for regression, 0); layers: a LayerRow per layer; cumulative: the mix of
    layers 0..ℓ per ℓ; mix_weights, expected_layer, center_of_gravity (None where undefined);
    mix_gain: the mix of all layers minus the best layer alone; answer: OUT/layers.json's
    whole content (the REST answer's `result`); out: where it was written (None: nowhere).
    """

    key: str
    task: str
    metric: str
    encoder: str
    recommendation: str
    best_layer: int
    carrying: list[int]
    carries: bool
    layers: list[LayerRow]
    cumulative: list[Score]
    mix_weights: list[float] | None
    expected_layer: float | None
    center_of_gravity: float | None
    mix_gain: Score | None
    answer: dict[str, Any]
    out: Path | None = None

    @classmethod
    def from_answer(cls, answer: dict[str, Any], out: str | Path | None = None) -> LayersResult:
        def row(r: dict[str, Any]) -> LayerRow:
            sel = r.get("selectivity")
            return LayerRow(
                layer=r["layer"],
                linear=Score.of(r["linear"]),
                mlp=Score.of(r["mlp"]),
                control=r.get("control"),
                selectivity=None if sel is None else {g: Score.of(v) for g, v in sel.items()},
            )

        return cls(
            key=answer["key"],
            task=answer["task"]["name"],
            metric=answer["metric"],
            encoder=answer["encoder"],
            recommendation=answer["recommendation"],
            best_layer=answer["best_layer"],
            carrying=list(answer["carrying"]),
            carries=answer["carries"],
            layers=[row(r) for r in answer["layers"]],
            cumulative=[Score.of(c) for c in answer["cumulative"]],
            mix_weights=answer.get("mix_weights"),
            expected_layer=answer.get("expected_layer"),
            center_of_gravity=answer.get("center_of_gravity"),
            mix_gain=None if answer.get("mix_gain") is None else Score.of(answer["mix_gain"]),
            answer=answer,
            out=None if out is None else Path(out),
        )

    @classmethod
    def from_out(cls, out: str | Path) -> LayersResult:
        """The finished sweep in directory `out` (OUT/layers.json)."""
        from snowfire.rundir import LAYERS

        return cls.from_answer(json.loads((Path(out) / LAYERS).read_text()), out)

    def table(self) -> str:
        """The markdown page OUT/layers.md holds: the words, then a row per layer."""
        from snowfire.compare import layers_table

        return layers_table(self.answer)
