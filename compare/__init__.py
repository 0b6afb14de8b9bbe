"""`snowfire compare`: is it better to tune or not, for this encoder and these tasks?

    cfg = CompareConfig(encoder="minilm", tasks=["stsb", "sick-r"], data=DIR, out=OUT)
    summary = run_compare(cfg)       # OUT/results.json, table.md, table.png, layer_weights.png

config.py (options, the paper's head per task), budget.py (the budgets' typed caps, `Caps`,
`Budget`), cell.py (a run of the comparison: `Cell`, its `Mode`), run.py (extraction and cells),
report.py (tables and plots), judge.py (a task's verdict from its runs), verdict.py (Δ's
words), mteb.py (the results as MTEB's results files: `export_mteb(out, directory)`); the
statistics of the verdict:
interval.py (Δ's paired bootstrap interval over examples and seeds), convergence.py (a cell
still improving at its cap), restarts.py (the seeds' spread, degenerate restarts), curves.py
(a task's learning curves as a plot); analyses/ the paper's analyses
(`snowfire analyze NAME`: `run_analysis(analysis_config(NAME)(...))`); layers/ the layer sweep
(`snowfire layers`: `run_layers(LayersConfig(...))`).

    boot = weigh("pearson", gold, snow=[preds_seed0, ...], fire=[...], baseline=cosine_preds)
    cells = [mark_curve(read_curve(run, "pearson"), cap=epochs) for run in runs]
    task_verdict(boot, snow_cells, fire_cells, baseline=BASELINE_WORDS["regression"])
"""

_WHERE = {
    "ANALYSES": "analyses",
    "analysis_config": "analyses",
    "run_analysis": "analyses",
    "CompareConfig": "config",
    "BUDGETS": "budget",
    "Budget": "budget",
    "Caps": "budget",
    "Cell": "cell",
    "Mode": "cell",
    "run_compare": "run",
    "judge": "judge",
    "BASELINE_WORDS": "verdict",
    "BUDGET_LIMITED": "verdict",
    "call": "verdict",
    "task_verdict": "verdict",
    "weigh": "verdict",
    "zero_training_words": "verdict",
    "Bootstrap": "interval",
    "Interval": "interval",
    "bootstrap": "interval",
    "delta_interval": "interval",
    "Convergence": "convergence",
    "mark_curve": "convergence",
    "curve_of": "convergence",
    "read_curve": "convergence",
    "restart_spread": "restarts",
    "plot_curves": "curves",
    "EXPORT_FORMATS": "mteb",
    "export_mteb": "mteb",
    "LayersConfig": "layers",
    "layers_key": "layers",
    "layers_table": "layers",
    "read_answer": "layers",
    "run_layers": "layers",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
