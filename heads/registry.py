"""The heads by name, and the one way to build one for a task.

    name            texts   kinds                        model
    linear          any     classification, regression   mix → mean → linear
    mlp             any     classification, regression   mix → mean → MLP
    probe           any     classification, regression,  one layer's mean, [CLS] or (tagging)
                            tagging                      each word's first piece → linear
    bcn             single  classification, regression   biattentive classification network
    esim            pair    classification, regression   ESIM
    bilstm-crf      single  tagging                      mix → 2-layer BiLSTM → CRF
    bilstm-softmax  single  tagging                      mix → 2-layer BiLSTM → softmax
    crf             single  tagging                      mix → linear → CRF
    softmax         single  tagging                      mix → linear → softmax

`build_head(...).config` holds every argument that built the head (defaults filled in), so a
checkpoint that stores it can rebuild the same head: `build_head(**config)`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

from .base import Head
from .batch import KINDS
from .bcn import BCN
from .esim import ESIM
from .pooled import PooledHead
from .probe import Probe
from .tagger import Tagger

# what every head receives from build_head itself, never as a hyper-parameter
_FIXED = ("num_layers", "dim", "num_labels", "kind")


@dataclass(frozen=True)
class HeadSpec:
    """A registered head: the class, the hyper-parameters its name fixes, its own defaults."""

    cls: type[Head]
    fixed: dict[str, Any] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def kinds(self) -> tuple[str, ...]:
        return self.cls.kinds

    @property
    def texts(self) -> str:
        return self.cls.texts

    def hparams(self) -> dict[str, Any]:
        """The tunable hyper-parameters and their defaults."""
        params = inspect.signature(self.cls.__init__).parameters
        found = {
            k: p.default
            for k, p in params.items()
            if k != "self" and k not in _FIXED and k not in self.fixed
        }
        return {**found, **self.defaults}


HEADS: dict[str, HeadSpec] = {
    "linear": HeadSpec(PooledHead, {"hidden": 0}),
    "mlp": HeadSpec(PooledHead, defaults={"hidden": 256}),
    "probe": HeadSpec(Probe),
    "bcn": HeadSpec(BCN),
    "esim": HeadSpec(ESIM),
    "bilstm-crf": HeadSpec(Tagger, {"output": "crf"}),
    "bilstm-softmax": HeadSpec(Tagger, {"output": "softmax"}),
    "crf": HeadSpec(Tagger, {"output": "crf", "lstm_layers": 0, "hidden": 0}),
    "softmax": HeadSpec(Tagger, {"output": "softmax", "lstm_layers": 0, "hidden": 0}),
}


def build_head(
    name: str,
    *,
    kind: str,
    pair: bool,
    num_layers: int,
    dim: int,
    num_labels: int,
    **hparams: Any,
) -> Head:
    """Build head `name` for a task of `kind` over single texts (pair=False) or pairs.

    num_layers, dim: the store's L and D; num_labels: K classes or tags, 1 for regression.
    hparams: the head's own hyper-parameters (see `HEADS[name].hparams()`); unknown ones fail.
    Refuses with the reason a head that cannot model the task.
    """
    check_head(name, kind, pair, hparams)
    spec = HEADS[name]
    allowed = spec.hparams()
    chosen = {**allowed, **hparams}
    if name == "mlp" and chosen["hidden"] < 1:
        raise ValueError(f"the mlp head needs hidden >= 1, got {chosen['hidden']} (use 'linear')")
    head = spec.cls(num_layers, dim, num_labels, kind=kind, **spec.fixed, **chosen)
    head.config = {
        "name": name,
        "kind": kind,
        "pair": pair,
        "num_layers": num_layers,
        "dim": dim,
        "num_labels": num_labels,
        **chosen,
        **head.resolved(),
    }
    return head


def check_head(name: str, kind: str, pair: bool, hparams: dict[str, Any]) -> None:
    """Refuse, with the reason and the heads that can, a head that cannot model a task of
    `kind` on single texts or pairs, or hyper-parameters the head does not take."""
    if name not in HEADS:
        raise ValueError(f"unknown head {name!r}; known heads: {', '.join(HEADS)}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    spec = HEADS[name]
    if kind not in spec.kinds:
        suited = _suited(kind, pair)
        raise ValueError(
            f"head {name!r} cannot model a {kind} task: it predicts {spec.cls.models}; "
            f"heads for {kind} on {_texts(pair)} texts: {suited}"
        )
    if kind == "tagging" and pair:
        raise ValueError(
            f"head {name!r}: a tagging task labels the words of single texts, not pairs"
        )
    if spec.texts != "any" and spec.texts != _texts(pair):
        suited = _suited(kind, pair)
        raise ValueError(
            f"head {name!r} reads {spec.texts} texts but the task has {_texts(pair)} texts; "
            f"heads for {kind} on {_texts(pair)} texts: {suited}"
        )
    allowed = spec.hparams()
    unknown = sorted(set(hparams) - set(allowed))
    if unknown:
        raise TypeError(
            f"unknown hyper-parameter(s) {unknown} for head {name!r}; "
            f"it takes: {', '.join(allowed) or 'none'}"
        )


def _suited(kind: str, pair: bool) -> str:
    """The names of the heads that can model `kind` on single texts or pairs."""
    texts = ("any", _texts(pair))
    return ", ".join(n for n, s in HEADS.items() if kind in s.kinds and s.texts in texts)


def _texts(pair: bool) -> str:
    return "pair" if pair else "single"
