"""A finished comparison written as MTEB results (`snowfire compare --export mteb DIR`), so the
tools that read MTEB's results repository read ours unchanged:

    DIR/results/{model}/{revision}/model_meta.json      the arm as an MTEB ModelMeta
    DIR/results/{model}/{revision}/{task}.json          an MTEB TaskResult

One model per arm: each ❄️ head (`snowfire/{encoder}-snow-{head}`) and 🔥 fine-tuning
(`snowfire/{encoder}-fire`), `adapted_from` the encoder; the revision is the encoder's (or its
weights' sha256). A task file holds per split (dev, and test where labelled) one score entry
(`hf_subset` "default", English): the seeds' mean of every metric, `main_score` the task's
primary metric, and `scores_per_experiment` one entry per seed. What MTEB has no field for
(arm, head, layers, scalar-mix weights per seed, dtype, budget, runs, encoder identity) is in
the top-level `snowfire` block, which MTEB's loader ignores. `mteb_version` is null: MTEB did
not evaluate these (a trained head's score is not a zero-shot embedding score).
`DIR/results` is then an MTEB results cache: `mteb.ResultCache(DIR).load_results(...)`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .cell import Cell, Mode

#: What `snowfire compare --export FORMAT DIR` writes.
EXPORT_FORMATS = ("mteb",)
#: Every task of the paper is English; MTEB names a language by ISO 639-3 and script.
LANGUAGES = ["eng-Latn"]
NAMESPACE = "snowfire"


def _model(identity: dict[str, Any], arm: str) -> tuple[str, str]:
    """(MTEB model name "org/name", revision) of one arm of the comparison."""
    base = str(identity.get("name") or identity.get("spec") or "encoder").rstrip("/")
    short = base.rsplit("/", 1)[-1].replace(" ", "_") or "encoder"
    revision = identity.get("revision") or (
        f"sha256-{identity['weights_sha256'][:16]}" if identity.get("weights_sha256") else None
    )
    return f"{NAMESPACE}/{short}-{arm}", revision or "no_revision_available"


def _dataset_revision(data: str, task: str) -> str:
    """The task files' sha256s hashed together (MTEB records the dataset's revision)."""
    from snowfire.cache import digest
    from snowfire.tasks import available_splits, split_source

    try:
        found = [split_source(task, data, s)["sha256"] for s in available_splits(task, data)]
    except (ValueError, OSError):  # a user's task (task_spec) or its files moved: not here
        return "not_recorded"
    return f"sha256-{digest(found, 16)}" if found else "not_recorded"


def _scores(cells: list[Cell], metric: str) -> dict[str, list[dict[str, Any]]]:
    """{split: [one score entry]}: the mean of each metric over seeds, and every seed's."""
    scores = {}
    for split in ("dev", "test"):
        runs = [(c.seed, c.metrics[split]) for c in cells if c.metrics and split in c.metrics]
        if not runs:
            continue
        names = list(runs[0][1])
        per_seed = [{"seed": seed, "main_score": m[metric], **m} for seed, m in runs]
        mean = {n: sum(m[n] for _, m in runs) / len(runs) for n in names}
        scores[split] = [
            {
                "main_score": mean[metric],
                **mean,
                "hf_subset": "default",
                "languages": LANGUAGES,
                "scores_per_experiment": per_seed,
            }
        ]
    return scores


def _snow_details(cells: list[Cell]) -> dict[str, Any]:
    """Layers, scalar-mix weights (per seed) and dtype of a ❄️ arm, from its runs."""
    from snowfire.rundir import HEAD, SCALAR_MIX

    head = json.loads((Path(cells[0].run) / HEAD).read_text())
    layers = head["layers"]  # None: all of them
    if layers is None:
        layers = list(range(head["head"]["num_layers"]))
    mixes = []
    for c in cells:
        path = Path(c.run) / SCALAR_MIX
        saved = json.loads(path.read_text()) if path.is_file() else {}
        mixes.append({"seed": c.seed, **saved})
    return {
        "layers": layers,
        "mix_weights": mixes,
        "dtype": head["dtype"],
        "head_config": head["head"],
    }


def export_mteb(out: str | Path, directory: str | Path) -> list[Path]:
    """Write the comparison in `out` (its results.json and run directories) as MTEB results
    under `directory`; the files written, model_meta.json first per model."""
    from snowfire.cache import versions
    from snowfire.rundir import RESULTS, write_json

    from .budget import BUDGETS
    from .config import named_budget
    from .report import _cost

    out = Path(out)
    results_file = out / RESULTS
    if not results_file.is_file():
        raise FileNotFoundError(f"{out}: no {RESULTS} (run snowfire compare there first)")
    results = json.loads(results_file.read_text())
    cfg = results["config"]
    identity = results.get("encoder") or {"spec": cfg["encoder"]}
    written: list[Path] = []
    arms: dict[str, list[Cell]] = {}
    for c in map(Cell.from_json, results["cells"]):
        if not c.mode.is_arm:  # an arm's first stage (probe, intermediate)
            continue
        arm = f"snow-{c.head}" if c.mode is Mode.SNOW else c.mode.value  # fire, lora, ...
        arms.setdefault(arm, []).append(c)
    for arm, cells in arms.items():
        name, revision = _model(identity, arm)
        folder = Path(directory) / "results" / name.replace("/", "__") / revision
        folder.mkdir(parents=True, exist_ok=True)
        mode = cells[0].mode
        costs = {id(c): _cost(c) for c in cells}
        meta = {
            "loader": None,
            "loader_kwargs": {},
            "name": name,
            "revision": revision,
            "release_date": None,
            "languages": LANGUAGES,
            "n_parameters": costs[id(cells[0])]["params"],  # ❄️: the head's; 🔥: the encoder's
            "memory_usage_mb": None,
            "max_tokens": identity.get("max_length"),
            "embed_dim": None,
            "license": None,
            "open_weights": True,
            "public_training_code": None,
            "public_training_data": None,
            "framework": ["PyTorch"],
            "reference": None,
            "similarity_fn_name": None,
            "use_instructions": False,
            "training_datasets": sorted({c.task for c in cells}),
            "adapted_from": identity.get("name") or identity.get("spec"),
            "superseded_by": None,
            "modalities": ["text"],
        }
        write_json(folder / "model_meta.json", meta)
        written.append(folder / "model_meta.json")
        for task in sorted({c.task for c in cells}):
            mine = sorted((c for c in cells if c.task == task), key=lambda c: c.seed)
            summary = results["tasks"][task]
            block = {
                "arm": mode.value,
                "head": mine[0].head,
                "budget": cfg["budget"],
                "caps": BUDGETS[named_budget(cfg["budget"])].side(mode).to_json(),
                "metric": summary["metric"],
                "seeds": [c.seed for c in mine],
                "runs": [c.run for c in mine],
                "layers": None,
                "mix_weights": None,
                "dtype": None,
                "pair_encoding": results.get("extraction", {}).get(task, {}).get("pair_encoding"),
                "hparams": cfg.get("hparams") if mode is Mode.SNOW else None,
                "verdict": {
                    k: summary["verdict"][k] for k in ("verdict", "text", "split", "delta")
                },
                "encoder": identity,
                "compare": str(out),
                "versions": versions(),
            }
            if mode is Mode.SNOW:
                block.update(_snow_details(mine))
            result = {
                "dataset_revision": _dataset_revision(cfg["data"], task),
                "task_name": task,
                "mteb_version": None,
                "scores": _scores(mine, summary["metric"]),
                "evaluation_time": round(sum(costs[id(c)]["seconds"] for c in mine), 2),
                "kg_co2_emissions": None,
                NAMESPACE: block,
            }
            write_json(folder / f"{task}.json", result)
            written.append(folder / f"{task}.json")
    return written
