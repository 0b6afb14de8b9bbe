"""`snowfire layers`: which layer should I use? Per-layer probes (linear and MLP) and cumulative
scalar mixes of layers 0..ℓ for one task on one encoder's stored features, several seeds with
95% intervals, the expected layer and the center of gravity (Tenney et al. 2019), selectivity
over a control task (Hewitt & Liang 2019), and a recommendation in words; trained from the
store alone, every probe of every layer and seed batched into one model.

    cfg = LayersConfig(store=S, encoder="minilm", task="sst2", data=D, out=OUT)
    answer = run_layers(cfg)          # OUT/layers.json (the answer), layers.md, layers.png
    answer["recommendation"]          # "layers 3–4 carry most of it (...); a mix ..."

config.py (the options), inputs.py (roles and feature sets), key.py (the content key), data.py
(pooled vectors read once, targets), control.py (control tasks), probes.py (the batched
probes), fit.py (the training loop), scoring.py (a probe's answers scored), summary.py (the
statistics), words.py (the words), report.py (table and plot), run.py (the command).
"""

from snowfire.options import lazy_exports

#: name -> where it loads from on first use: LayersConfig (the CLI, a job's params) loads no torch
_WHERE = {
    "LayersConfig": ".config:LayersConfig",
    "LAYERS_VERSION": ".key:LAYERS_VERSION",
    "layers_key": ".run:layers_key",
    "layers_table": ".report:layers_table",
    "read_answer": ".run:read_answer",
    "run_layers": ".run:run_layers",
}

__all__ = sorted(_WHERE)


__getattr__ = lazy_exports(__name__, _WHERE)
