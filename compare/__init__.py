"""`snowfire compare`: is it better to tune or not, for this encoder and these tasks?

    cfg = CompareConfig(encoder="minilm", tasks=["stsb", "sick-r"], data=DIR, out=OUT)
    summary = run_compare(cfg)       # OUT/results.json, table.md, table.png, layer_weights.png

config.py (options, budgets, the paper's head per task), run.py (extraction and cells),
report.py (tables and plots), verdict.py (Δ and the verdict).
"""

_WHERE = {"CompareConfig": "config", "run_compare": "run", "verdict": "verdict"}

__all__ = ["CompareConfig", "run_compare", "verdict"]


def __getattr__(name: str):
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
