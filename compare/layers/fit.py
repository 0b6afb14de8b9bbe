"""The sweep's one training loop: every probe of every layer and seed on the same feature
batches, read once from memory.

build data (data.py: pooled vectors, targets) -> build LayerProbes -> for each epoch: for each
step, each seed's batch (its own shuffled order), `out = probes(x)`, every probe's loss summed,
backward, step -> every probe's loss on the selection split: keep its best epoch's parameters
until its patience runs out (then it keeps that epoch, as it would have stopped alone) -> stop
when every probe has stopped -> every probe at its best epoch predicts the report split.

Epochs are chosen by the selection split's *loss*, the quantity each probe minimises, not its
metric: once a probe separates the selection examples its accuracy ties from epoch to epoch
while its mix weights go on settling (a constructed store whose label sits in one layer: the
metric stopped the mixes with under half their weight on that layer). The task's metric on the
selection split at each probe's chosen epoch is kept: it chooses the best layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .data import Probed
from .probes import LayerProbes

#: score(group, predictions (N,), data) -> the selection score of one probe (higher is better).
Scorer = Callable[[str, torch.Tensor, Probed], float]


@dataclass(frozen=True)
class Fitted:
    """What the loop returns. report: {group: (S, P, N) predictions on the report split (class
    or tag indices, or scores)}; selection: {group: (S, P) each probe's best selection score};
    best_epoch: {group: (S, P)}; mix_weights: (S, C, L) each mix's weights at its best epoch
    (None without mixes); epochs: how many ran; state: every parameter at its probe's best
    epoch (LayerProbes' names)."""

    report: dict[str, np.ndarray]
    selection: dict[str, np.ndarray]
    selection_loss: dict[str, np.ndarray]
    best_epoch: dict[str, np.ndarray]
    mix_weights: np.ndarray | None
    epochs: int
    state: dict[str, torch.Tensor]


def predict(
    model: LayerProbes, data: Probed, device, groups=None, chunk: int = 1024
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """({group: (S, P, N)} every probe's predictions on `data` (argmax, or the score),
    {group: (S, P)} its mean loss there), of `groups` (default: all)."""
    groups = list(groups or model.groups)
    parts: dict[str, list[torch.Tensor]] = {g: [] for g in groups}
    sums: dict[str, torch.Tensor] = {}
    s = len(model.seeds)
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(data), chunk):
            x = data.x[start : start + chunk].to(device)  # (B, L, D)
            out = model(x.unsqueeze(0).expand(s, *x.shape), groups)  # {g: (S, P, B, K)}
            y = data.y[start : start + chunk].to(device).expand(s, -1)  # (S, B)
            yc = None if data.yc is None else data.yc[start : start + chunk].to(device)
            losses = model.losses(out, y, None if yc is None else yc.expand(s, -1))
            for g, z in out.items():
                parts[g].append(z.squeeze(-1) if model.kind == "regression" else z.argmax(-1))
                sums[g] = sums.get(g, 0) + losses[g].double().cpu() * len(x)  # (S, P)
    model.train()
    preds = {g: torch.cat(p, dim=-1).cpu() for g, p in parts.items()}  # (S, P, N) each
    return preds, {g: v / len(data) for g, v in sums.items()}


def fit(
    model: LayerProbes,
    train: Probed,
    selection: Probed,
    report: Probed,
    score: Scorer,
    *,
    epochs: int,
    patience: int,
    batch_size: int,
    lr: float,
    device: torch.device,
    progress: bool = False,
) -> Fitted:
    """Train every probe of `model` (module docstring); each keeps its best selection epoch."""
    from tqdm import tqdm

    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    rngs = [np.random.default_rng(seed) for seed in model.seeds]  # each seed's own order
    shapes = {
        g: (len(model.seeds), len(model.tops if g == "mix" else model.layers)) for g in model.groups
    }
    lowest = {g: np.full(shape, np.inf) for g, shape in shapes.items()}  # (S, P) selection loss
    best = {g: np.full(shape, -np.inf) for g, shape in shapes.items()}  # its epoch's score
    best_epoch = {g: np.zeros(shape, dtype=np.int64) for g, shape in shapes.items()}
    bad = {g: np.zeros(shape, dtype=np.int64) for g, shape in shapes.items()}
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    mix_best = model.mix_weights().numpy().copy() if "mix" in model.groups else None
    n, epoch = len(train), 0
    steps = -(-n // batch_size)
    bar = tqdm(total=epochs * steps, desc="layers", unit="step", disable=not progress)
    live = list(model.groups)  # the groups with a probe still improving
    for epoch in range(1, epochs + 1):
        perms = np.stack([rng.permutation(n) for rng in rngs])  # (S, N)
        for start in range(0, n, batch_size):
            idx = torch.from_numpy(perms[:, start : start + batch_size])  # (S, B)
            x = train.x[idx].to(device)  # (S, B, L, D)
            yc = None if train.yc is None else train.yc[idx].to(device)  # (S, B)
            losses = model.losses(model(x, live), train.y[idx].to(device), yc)  # {g: (S, P)}
            loss = sum(v.sum() for v in losses.values())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            bar.update(1)
        preds, losses = predict(model, selection, device, live)  # {g: (S, P, N)}, {g: (S, P)}
        for g, p in preds.items():
            loss = losses[g].numpy()  # (S, P)
            running = bad[g] < patience  # a stopped probe keeps the epoch it stopped with
            better = running & (loss < lowest[g])
            bad[g] = np.where(better, 0, np.where(running, bad[g] + 1, bad[g]))
            lowest[g] = np.where(better, loss, lowest[g])
            if better.any():  # the task's score of the epochs kept
                scores = np.array([[score(g, q, selection) for q in row] for row in p])  # (S, P)
                best[g] = np.where(better, scores, best[g])
            best_epoch[g] = np.where(better, epoch, best_epoch[g])
            _keep(model, state, g, better)
            if g == "mix" and better.any():
                mix_best[better] = model.mix_weights().numpy()[better]
        # a group whose probes have all stopped is trained no further (nothing it does counts)
        live = [g for g in live if bool((bad[g] < patience).any())]
        if not live:
            break
    bar.close()
    model.load_state_dict(state)
    out, _ = predict(model, report, device)
    return Fitted(
        report={g: p.numpy() for g, p in out.items()},
        selection=best,
        selection_loss=lowest,
        best_epoch=best_epoch,
        mix_weights=mix_best,
        epochs=epoch,
        state=state,
    )


def _keep(model: LayerProbes, state: dict[str, torch.Tensor], group: str, better) -> None:
    """Copy the probes of `group` that just improved (`better` (S, P)) into `state`."""
    if not better.any():
        return
    mask = torch.from_numpy(better)  # (S, P)
    for name, param in model.per_probe()[group]:
        key = f"probes.{group}.{name}"
        state[key][mask] = param.detach()[mask].to(state[key].device)
