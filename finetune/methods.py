"""What a 🔥 run trains besides its output layer: the arms between ❄️ and full fine-tuning
(the tutorial's adaptation menu; issue #27). BERT-family encoders only.

    full     every encoder weight (Devlin et al. 2019; the paper's 🔥)
    bitfit   the encoder's bias terms only (Ben Zaken et al. 2022)
    adapter  bottleneck adapters (Houlsby et al. 2019), two per layer: after the attention's
             output projection and after the feed-forward's, before the residual sum and the
             layer norm; the layer norms train too, every other weight is frozen:
                 a(h) = h + W_up g(W_down h + b_down) + b_up,   W_down (m, D), W_up (D, m),
                 g = GELU, near-identity start: W ~ N(0, 0.01²) truncated at 2 sd, b = 0
    lora     low-rank updates of the attention's query and value projections (Hu et al. 2021),
             through `peft`:  W x + (alpha / r) B A x,  A (r, D) random, B (D, r) = 0 at start

and two pulls that change how a full run trains, not what: `l2sp` adds λ ||θ − θ₀||² over the
encoder's trained weights (θ₀ the pretrained ones; Li et al. 2018, after Wiese et al. 2017 and
Kirkpatrick et al. 2017), `init_head` starts the output layer at a ❄️ probe's weights (LP-FT,
Kumar et al. 2022). Shapes: D hidden size, m bottleneck, r rank.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .recipe import LORA_TARGETS, METHODS

#: Houlsby et al.'s two insertion points in a BERT/RoBERTa layer.
_ADAPTER_AFTER = re.compile(r"(?:^|\.)layer\.(\d+)\.(attention\.output|output)\.dense$")
_NORM = re.compile(r"LayerNorm|layer_norm|layernorm")


class Adapter(nn.Module):
    """a(h) = h + W_up GELU(W_down h + b_down) + b_up (Houlsby et al. 2019, Figure 2)."""

    def __init__(self, dim: int, size: int, init_sd: float = 1e-2) -> None:
        super().__init__()
        self.down = nn.Linear(dim, size)  # (D) -> (m)
        self.up = nn.Linear(size, dim)  # (m) -> (D)
        for layer in (self.down, self.up):
            nn.init.trunc_normal_(layer.weight, std=init_sd, a=-2 * init_sd, b=2 * init_sd)
            nn.init.zeros_(layer.bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (..., D) -> (..., D)
        return h + self.up(nn.functional.gelu(self.down(h)))


def adapter_points(encoder: nn.Module) -> list[tuple[str, nn.Linear]]:
    """Houlsby et al.'s insertion points: every layer's two output projections, keyed
    "layerN_attention"/"layerN_ffn" (the names a run's adapters are saved under)."""
    points = []
    for name, module in encoder.named_modules():
        m = _ADAPTER_AFTER.search(name)
        if m is None or not isinstance(module, nn.Linear):
            continue
        where = "attention" if m.group(2) == "attention.output" else "ffn"
        points.append((f"layer{m.group(1)}_{where}", module))
    if not points:
        raise ValueError(
            f"adapters: no '<layer>.attention.output.dense' / '<layer>.output.dense' projection "
            f"in this {type(encoder).__name__} (BERT/RoBERTa layouts are supported)"
        )
    return points


def insert_adapters(encoder: nn.Module, size: int) -> nn.ModuleDict:
    """Adapters after every layer's two output projections, as forward hooks (the encoder's own
    weights keep their names); the ModuleDict holds them, keyed "layerN_attention"/"layerN_ffn"."""
    adapters = nn.ModuleDict()
    for key, module in adapter_points(encoder):
        adapters[key] = Adapter(module.out_features, size)
        module.register_forward_hook(lambda _m, _inp, out, a=adapters[key]: a(out))
    return adapters


def insert_lora(
    encoder: nn.Module, rank: int, alpha: float, targets: str = "attention", name: str = "default"
) -> None:
    """LoRA (Hu et al. 2021) on the `targets` linear maps (LORA_TARGETS), injected in place by
    peft as the adapter `name` (peft's default "default": the name a run's weights are saved
    under; finetune/shared.py adds one named adapter per served run to one encoder)."""
    import warnings

    from peft import LoraConfig, inject_adapter_in_model

    if targets not in LORA_TARGETS:
        raise ValueError(
            f"lora targets: expected one of {', '.join(LORA_TARGETS)}, got {targets!r}"
        )
    config = LoraConfig(
        r=rank,
        lora_alpha=alpha,  # type: ignore[arg-type]  # peft says int; it scales by alpha / r
        lora_dropout=0.0,
        target_modules=LORA_TARGETS[targets],
        bias="none",
    )
    with warnings.catch_warnings():  # a second named adapter is what finetune/shared.py means
        warnings.filterwarnings("ignore", message="Already found a `peft_config`")
        inject_adapter_in_model(config, encoder, adapter_name=name)


def trained_by(method: str, name: str) -> bool:
    """Whether `method` trains the encoder parameter `name` (the output layer always trains)."""
    if method == "full":
        return True
    if method == "bitfit":
        return name.endswith(".bias") and ".lora_" not in name
    if method == "lora":
        return ".lora_A." in name or ".lora_B." in name
    if method == "adapter":
        return bool(_NORM.search(name))  # the adapters themselves are another module
    raise ValueError(f"unknown method {method!r}: expected one of {', '.join(METHODS)}")


def l2sp_penalty(
    params: list[tuple[str, nn.Parameter]], anchors: dict[str, torch.Tensor]
) -> torch.Tensor:
    """sum over the trained `params` of ||θ − θ₀||² (θ₀ = `anchors[name]`); 0 with none."""
    total = torch.zeros(())
    for name, p in params:
        if p.requires_grad:
            total = total + (p - anchors[name]).pow(2).sum()
    return total


def load_probe(run: str | Path, dim: int, num_labels: int, kind: str) -> dict[str, torch.Tensor]:
    """The linear weights of a finished ❄️ probe run that reads what a BERT-family 🔥 output
    layer of a `kind` task reads: the top layer's [CLS] state, or (tagging) each word's first
    piece there. {"weight": (K, D), "bias": (K,)}."""
    from safetensors.torch import load_file

    from snowfire.heads import FIRE_POOL
    from snowfire.rundir import HEAD, WEIGHTS

    run = Path(run)
    if not (run / HEAD).is_file():
        raise FileNotFoundError(f"init_head {run}: no {HEAD}: not a finished ❄️ run")
    meta = json.loads((run / HEAD).read_text())
    head: dict[str, Any] = meta["head"]
    if head.get("name") != "probe":
        raise ValueError(
            f"init_head {run}: expected a probe head (LP-FT starts from a linear "
            f"probe), got {head.get('name')!r}"
        )
    if head.get("kind") != kind:
        raise ValueError(f"init_head {run}: a probe of a {head.get('kind')} task, this is {kind}")
    layers = meta.get("layers")  # the store layers the head read (None: all)
    read = head["layer"] % head["num_layers"]
    layer = layers[read] if layers else read
    top = int(meta["encoder"].get("num_layers", head["num_layers"])) - 1
    pool = FIRE_POOL[kind]
    if head.get("pool") != pool or layer != top:
        what = "each word's first piece" if kind == "tagging" else "[CLS] state"
        raise ValueError(
            f"init_head {run}: the probe must read the top layer's {what}, what the 🔥 "
            f'output layer reads (train it with --head probe --hparams \'{{"pool": "{pool}"}}\'); '
            f"got pool {head.get('pool')!r}, layer {layer} of 0..{top}"
        )
    weights = load_file(str(run / WEIGHTS))
    w, b = weights["out.weight"], weights["out.bias"]
    if tuple(w.shape) != (num_labels, dim):
        raise ValueError(
            f"init_head {run}: probe weights {tuple(w.shape)}, expected "
            f"{(num_labels, dim)} (the task's labels by the encoder's width)"
        )
    return {"weight": w.float(), "bias": b.float()}
