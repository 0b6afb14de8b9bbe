"""`snowfire compare`: is it better to tune or not, for this encoder and these tasks?

    cfg = CompareConfig(encoder="minilm", tasks=["stsb", "sick-r"], data=DIR, out=OUT)
    summary = run_compare(cfg)       # OUT/results.json, table.md, table.png, layer_weights.png

config.py (options, the paper's head per task), budget.py (the budgets' typed caps, `Caps`,
`Budget`), cell.py (a run of the comparison: `Cell`, its `Mode`), run.py (extraction and cells),
report.py (tables and plots), racing.py (the race of arms and trials, and `replay` of its
decisions from recorded runs; race_budget.py: the budget curves it would draw), judge.py (a
task's verdict from its runs), verdict.py (Δ's words), mteb.py (the results as MTEB's results
files: `export_mteb(out, directory)`); the statistics of the verdict:
interval.py (Δ's paired bootstrap interval over examples and seeds), convergence.py (a cell
still improving at its cap), restarts.py (the seeds' spread, degenerate restarts), curves.py
(a task's learning curves as a plot); analyses/ the paper's analyses
(`snowfire analyze NAME`: `run_analysis(analysis_config(NAME)(...))`); layers/ the layer sweep
(`snowfire layers`: `run_layers(LayersConfig(...))`).

    boot = weigh("pearson", gold, snow=[preds_seed0, ...], fire=[...], baseline=cosine_preds)
    cells = [mark_curve(read_curve(run, "pearson"), cap=epochs) for run in runs]
    task_verdict(boot, snow_cells, fire_cells, baseline=BASELINE_WORDS["regression"])
"""

from snowfire.options import lazy_exports

#: name -> where it loads from on first use: CompareConfig (the CLI) loads no plotting
_WHERE = {
    "ANALYSES": ".analyses:ANALYSES",
    "analysis_config": ".analyses:analysis_config",
    "run_analysis": ".analyses:run_analysis",
    "CompareConfig": ".config:CompareConfig",
    "BUDGETS": ".budget:BUDGETS",
    "Budget": ".budget:Budget",
    "Caps": ".budget:Caps",
    "Cell": ".cell:Cell",
    "Mode": ".cell:Mode",
    "run_compare": ".run:run_compare",
    "replay": ".racing:replay",
    "contender": ".racing:contender",
    "raced_budget_curves": ".race_budget:raced_budget_curves",
    "replay_cost": ".race_budget:replay_cost",
    "judge": ".judge:judge",
    "BASELINE_WORDS": ".verdict:BASELINE_WORDS",
    "BUDGET_LIMITED": ".verdict:BUDGET_LIMITED",
    "call": ".verdict:call",
    "task_verdict": ".verdict:task_verdict",
    "weigh": ".verdict:weigh",
    "zero_training_words": ".verdict:zero_training_words",
    "Bootstrap": ".interval:Bootstrap",
    "Interval": ".interval:Interval",
    "bootstrap": ".interval:bootstrap",
    "delta_interval": ".interval:delta_interval",
    "Convergence": ".convergence:Convergence",
    "mark_curve": ".convergence:mark_curve",
    "curve_of": ".convergence:curve_of",
    "read_curve": ".convergence:read_curve",
    "restart_spread": ".restarts:restart_spread",
    "plot_curves": ".curves:plot_curves",
    "EXPORT_FORMATS": ".mteb:EXPORT_FORMATS",
    "export_mteb": ".mteb:export_mteb",
    "LayersConfig": ".layers:LayersConfig",
    "layers_key": ".layers:layers_key",
    "layers_table": ".layers:layers_table",
    "read_answer": ".layers:read_answer",
    "run_layers": ".layers:run_layers",
}

__all__ = sorted(_WHERE)


__getattr__ = lazy_exports(__name__, _WHERE)
