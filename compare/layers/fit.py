"""The sweep's one training loop: every probe of every layer and seed on the same feature
batches, read once from memory.

build data (data.py: pooled vectors, targets) -> build LayerProbes -> for each step: each
seed's batch (its own shuffled order of each pass), `out = probes(x)`, every probe's loss
summed, backward, step; every `check_every` examples (or every pass, on a smaller set) a
*check*: every live probe's loss on the selection split, each one keeping its parameters of its
lowest check until `patience` checks pass without a lower one (then it keeps them, as it would
have stopped alone) -> stop when every probe has stopped, or after `epochs` passes -> every
probe at its kept state predicts the report split.

Probes are kept by the selection split's *loss*, the quantity each minimises, not its metric:
once a probe separates the selection examples its accuracy ties from check to check while its
mix weights go on settling (a constructed store whose label sits in one layer: the metric
stopped the mixes with under half their weight on that layer). The task's metric on the
selection split at each probe's kept check is recorded: it chooses the best layer. Checks come
every `check_every` examples rather than every pass because on a large set a probe settles
within one pass, and waiting `patience` more passes would multiply the sweep's cost.
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
    or tag indices, or scores)}; selection: {group: (S, P) the task's selection score at each
    probe's kept check}; selection_loss: {group: (S, P) its selection loss there}; best_check:
    {group: (S, P) which check}; mix_weights: (S, C, L) each mix's weights there (None without
    mixes); passes: the passes over the training data made; checks: how many; state: every
    parameter as kept (LayerProbes' names)."""

    report: dict[str, np.ndarray]
    selection: dict[str, np.ndarray]
    selection_loss: dict[str, np.ndarray]
    best_check: dict[str, np.ndarray]
    mix_weights: np.ndarray | None
    passes: float
    checks: int
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
    check_every: int,
    device: torch.device,
    progress: bool = False,
) -> Fitted:
    """Train every probe of `model` (module docstring); each keeps its best checked state."""
    from tqdm import tqdm

    model.to(device)
    # fused: one kernel updates every parameter, by the same elementwise maths as the loop
    opt = torch.optim.Adam(model.parameters(), lr=lr, fused=True)
    rngs = [np.random.default_rng(seed) for seed in model.seeds]  # each seed's own order
    keeper = _Keeper(model, patience)
    n = len(train)
    period = -(-min(n, check_every) // batch_size)  # steps between two checks
    total = epochs * -(-n // batch_size)
    bar = tqdm(total=total, desc="layers", unit="step", disable=not progress)
    live = list(model.groups)  # the groups with a probe still improving
    step = 0
    while live and step < total:
        perms = np.stack([rng.permutation(n) for rng in rngs])  # (S, N): a new pass
        for start in range(0, n, batch_size):
            idx = torch.from_numpy(perms[:, start : start + batch_size])  # (S, B)
            x = train.x[idx].to(device)  # (S, B, L, D)
            yc = None if train.yc is None else train.yc[idx].to(device)  # (S, B)
            losses = model.losses(model(x, live), train.y[idx].to(device), yc)  # {g: (S, P)}
            loss = torch.stack([v.sum() for v in losses.values()]).sum()  # each probe's own
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            bar.update(1)
            if step % period == 0 or step == total:
                live = keeper.check(model, selection, score, device, live)
                if not live or step == total:
                    break
    bar.close()
    model.load_state_dict(keeper.state)
    out, _ = predict(model, report, device)
    return Fitted(
        report={g: p.numpy() for g, p in out.items()},
        selection=keeper.best,
        selection_loss=keeper.lowest,
        best_check=keeper.best_check,
        mix_weights=keeper.mix,
        passes=round(step * batch_size / n, 2),
        checks=keeper.checks,
        state=keeper.state,
    )


class _Keeper:
    """Each probe's lowest selection loss, the parameters it had then, its task score there
    and how many checks have passed since (arrays (S, P) per group)."""

    def __init__(self, model: LayerProbes, patience: int):
        shape = {
            g: (len(model.seeds), len(model.tops if g == "mix" else model.layers))
            for g in model.groups
        }
        self.patience, self.checks = patience, 0
        self.lowest = {g: np.full(s, np.inf) for g, s in shape.items()}
        self.best = {g: np.full(s, -np.inf) for g, s in shape.items()}
        self.best_check = {g: np.zeros(s, dtype=np.int64) for g, s in shape.items()}
        self.bad = {g: np.zeros(s, dtype=np.int64) for g, s in shape.items()}
        self.state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.mix = model.mix_weights().numpy().copy() if "mix" in model.groups else None

    def check(self, model, selection: Probed, score: Scorer, device, live) -> list[str]:
        """Every live probe's selection loss: keep those that went lower, count a check
        against the others; the groups with a probe still running."""
        self.checks += 1
        preds, losses = predict(model, selection, device, live)  # {g: (S, P, N)}, {g: (S, P)}
        for g, p in preds.items():
            loss = losses[g].numpy()  # (S, P)
            running = self.bad[g] < self.patience  # a stopped probe keeps what it had
            better = running & (loss < self.lowest[g])
            self.bad[g] = np.where(better, 0, np.where(running, self.bad[g] + 1, self.bad[g]))
            self.lowest[g] = np.where(better, loss, self.lowest[g])
            self.best_check[g] = np.where(better, self.checks, self.best_check[g])
            if not better.any():
                continue
            scores = np.array([[score(g, q, selection) for q in row] for row in p])  # (S, P)
            self.best[g] = np.where(better, scores, self.best[g])
            _keep(model, self.state, g, better)
            if g == "mix" and self.mix is not None:
                self.mix[better] = model.mix_weights().numpy()[better]
        # a group whose probes have all stopped is trained no further (nothing it does counts)
        return [g for g in live if bool((self.bad[g] < self.patience).any())]


def _keep(model: LayerProbes, state: dict[str, torch.Tensor], group: str, better) -> None:
    """Copy the probes of `group` that just improved (`better` (S, P)) into `state`."""
    if not better.any():
        return
    mask = torch.from_numpy(better)  # (S, P)
    for name, param in model.per_probe()[group]:
        key = f"probes.{group}.{name}"
        state[key][mask] = param.detach()[mask].to(state[key].device)
