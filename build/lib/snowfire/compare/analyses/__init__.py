"""`snowfire analyze NAME`: the paper's analyses, each writing OUT/NAME.json, NAME.md, NAME.png.

    pairs             ❄️ with pairs encoded jointly vs separately (Table 4): SICK-E, SICK-R,
                      STS-B, MRPC
    probes            a probe per layer (logistic / linear regression on the layer's token
                      mean; the `probe` head) on CoLA, SST-2, MRPC, STS-B (Figure 1), for the
                      pretrained encoder and, with --finetuned TASK=RUN, for a 🔥 run's saved
                      encoder re-extracted
    mi                mutual information between each layer's mean activation and the labels
                      (Figure 2; compare/mi.py says which estimator and why)
    ner-params        parameters added on NER (Table 5): ❄️ + CRF vs ❄️ + BiLSTM + CRF, and 🔥
                      + CRF, 🔥 + BiLSTM + CRF, each with and without gradual unfreezing
    elmo-biattention  ELMo 🔥 on pairs with and without bi-attention (Table 3)

One file per analysis, each with its frozen config (the `snowfire analyze NAME` flags are
derived from its fields; base.py holds the fields they share) and `run(config)`; output.py
writes the json, md and png. Features come from OUT/store (or --store) and are extracted where
missing; every run is an ordinary run directory under OUT/NAME/, so a rerun recomputes nothing.

    run_analysis(PairsConfig(encoder="minilm", data=DIR, out=OUT, tasks=["stsb"]))
"""

from __future__ import annotations

import importlib
from typing import Any

#: name -> (module, config class) of each analysis, in the order `snowfire analyze` lists them.
_ANALYSES = {
    "pairs": ("pairs", "PairsConfig"),
    "probes": ("probes", "ProbesConfig"),
    "mi": ("mi", "MiConfig"),
    "ner-params": ("ner_params", "NerParamsConfig"),
    "elmo-biattention": ("elmo_biattention", "ElmoBiattentionConfig"),
}
#: The names of the analyses.
ANALYSES = tuple(_ANALYSES)

__all__ = ["ANALYSES", "analysis_config", "run_analysis"]


def _module(name: str):
    if name not in _ANALYSES:
        raise ValueError(f"unknown analysis {name!r}: expected one of {', '.join(ANALYSES)}")
    return importlib.import_module(f".{_ANALYSES[name][0]}", __name__)


def analysis_config(name: str) -> type:
    """The config dataclass of analysis `name` (importing it loads nothing heavy)."""
    return getattr(_module(name), _ANALYSES[name][1])


def run_analysis(config: Any) -> dict[str, Any]:
    """Run the analysis `config` is the config of; what it wrote to OUT/NAME.json."""
    return _module(config.name).run(config)
