"""The three fine-tuning tricks of the paper (after ULMFiT, Howard & Ruder 2018), as pure
functions of a model's layer groups.

Layer groups are listed from the top down: depth 0 is the task's output layer (the "head"),
depth 1 the top encoder layer, ..., depth G-1 the embeddings (BERT) or the character CNN (ELMo).

Discriminative learning rates:   lr_d = lr * factor^d              (factor 0.4 in the paper)
Schedules (multiplier f(t) of every group's lr at optimiser step t = 0 .. T-1, W warm-up steps):
    linear   f(t) = (t + 1) / W              for t < W   (BERT: linear warm-up ...)
             f(t) = (T - t) / (T - W)        for t >= W  (... then linear decay, last step 1/(T-W))
    slanted  p(t) = t / W                    for t < W   (slanted triangular, ULMFiT eq. 3,
             p(t) = 1 - (t - W) / (T - W)    for t >= W   cut = W, ratio 32; T - W stands for
             f(t) = (1 + p(t) (ratio - 1)) / ratio         cut (1/cut_frac - 1), equal when
                                                           T cut_frac is a whole number)
    with W = floor(warmup * T).
Gradual unfreezing: at epoch e (1-based) the groups of depth < e train, the others are frozen
(requires_grad False: no gradient, so AdamW leaves them and their weight decay untouched).
Epoch 1 trains the head alone, epoch 2 the head and the top layer, ..., and from epoch G on
every group trains. Without gradual unfreezing every group trains from the start.

`build_optimizer` puts the first two together for a model and its config: AdamW over the
groups at their rates, and the schedule as a LambdaLR.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from .base import FireModel
    from .config import FinetuneConfig

#: (name, parameters) of one layer group; a model's `layer_groups()` lists them top-down.
LayerGroup = tuple[str, list[nn.Parameter]]

SLANTED_RATIO = 32  # ULMFiT: the lowest rate is 1/32 of the peak


def group_rates(num_groups: int, lr: float, factor: float) -> list[float]:
    """The learning rate of each depth, top-down: lr * factor^d."""
    if num_groups < 1:
        raise ValueError(f"group_rates: expected >= 1 group, got {num_groups}")
    if not 0.0 < factor <= 1.0:
        raise ValueError(f"group_rates: expected a factor in (0, 1], got {factor}")
    return [lr * factor**d for d in range(num_groups)]


def param_groups(
    groups: Sequence[LayerGroup], lr: float, factor: float, weight_decay: float
) -> list[dict]:
    """AdamW parameter groups: one or two per layer group, with discriminative rates.

    Matrices (ndim >= 2) decay; biases and norm weights (ndim < 2) do not (BERT's recipe).
    Each dict carries `name` ("<group>" or "<group>/no_decay") and `depth` for logs and tests.
    A parameter listed in two groups is an error.
    """
    seen: set[int] = set()
    out = []
    for depth, ((name, params), rate) in enumerate(
        zip(groups, group_rates(len(groups), lr, factor), strict=True)
    ):
        for p in params:
            if id(p) in seen:
                raise ValueError(f"param_groups: a parameter of group {name!r} is listed twice")
            seen.add(id(p))
        decay = [p for p in params if p.ndim >= 2]
        no_decay = [p for p in params if p.ndim < 2]
        for suffix, members, wd in (("", decay, weight_decay), ("/no_decay", no_decay, 0.0)):
            if members:
                out.append(
                    {
                        "params": members,
                        "lr": rate,
                        "weight_decay": wd,
                        "name": name + suffix,
                        "depth": depth,
                    }
                )
    return out


def lr_multiplier(kind: str, total_steps: int, warmup: float) -> Callable[[int], float]:
    """f(t) of the module docstring, for `torch.optim.lr_scheduler.LambdaLR`."""
    if total_steps < 1:
        raise ValueError(f"lr_multiplier: expected total_steps >= 1, got {total_steps}")
    if not 0.0 <= warmup < 1.0:
        raise ValueError(f"lr_multiplier: expected warmup in [0, 1), got {warmup}")
    t_total = total_steps
    w = math.floor(warmup * t_total)

    if kind == "linear":

        def linear(t: int) -> float:
            if t < w:
                return (t + 1) / w
            return max(0.0, (t_total - t) / (t_total - w))

        return linear
    if kind == "slanted":

        def slanted(t: int) -> float:
            p = t / w if t < w else max(0.0, 1.0 - (t - w) / (t_total - w))
            return (1.0 + p * (SLANTED_RATIO - 1)) / SLANTED_RATIO

        return slanted
    raise ValueError(f"lr_multiplier: expected kind 'linear' or 'slanted', got {kind!r}")


def trainable_depth(epoch: int, num_groups: int, gradual: bool) -> int:
    """How many groups (from the top) train at `epoch` (1-based)."""
    if epoch < 1:
        raise ValueError(f"trainable_depth: epochs count from 1, got {epoch}")
    return min(epoch, num_groups) if gradual else num_groups


def unfreeze(groups: Sequence[LayerGroup], epoch: int, gradual: bool) -> list[str]:
    """Set requires_grad for `epoch`: depth < trainable_depth trains. Returns those names."""
    depth = trainable_depth(epoch, len(groups), gradual)
    for d, (_, params) in enumerate(groups):
        for p in params:
            p.requires_grad_(d < depth)
    return [name for name, _ in groups[:depth]]


def build_optimizer(
    model: FireModel, cfg: FinetuneConfig, total_steps: int
) -> tuple[torch.optim.AdamW, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW over the model's layer groups with the recipe's discriminative rates, and its
    schedule (`cfg.settings()`: the recipe in effect for the task)."""
    settings = cfg.settings()
    groups = param_groups(
        model.layer_groups(), settings.lr, settings.discriminative, cfg.weight_decay
    )
    optimizer = torch.optim.AdamW(groups)
    multiplier = lr_multiplier(settings.schedule, total_steps, settings.warmup)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, multiplier)
