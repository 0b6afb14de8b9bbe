"""Every probe of a layer sweep as one batched model: for each seed, a linear and an MLP probe
per layer (on the task, and on its control task), and a linear probe on each cumulative mix of
layers 0..c. They train together on the same feature batches, each with its own parameters and
its own loss.

    x_{s,b,l}   example b of seed s's batch at layer l (pooled vectors)       (S, B, L, D)
                (each group's maps are one batched matrix product over (S, P))
    linear      z = W_{s,l}ᵀ x_{s,b,l} + b_{s,l}                               (S, P, B, K)
    mlp         z = V_{s,l}ᵀ relu(U_{s,l}ᵀ x_{s,b,l} + c_{s,l}) + d_{s,l}      (S, P, B, K)
    mix 0..c    m = γ_{s,c} Σ_{l ≤ c} softmax(w_{s,c})_l x_{s,b,l}             (S, C, B, D)
                z = W_{s,c}ᵀ m + b_{s,c}                                       (S, C, B, K)
    loss        Σ over probes of each one's mean loss on its batch: cross-entropy, or the
                squared error for regression (K = 1)

The mix is the scalar mix of Peters et al. (2018, eq. 1) restricted to layers 0..c: Tenney et
al. (ACL 2019, "BERT Rediscovers the Classical NLP Pipeline", sec. 3) score such cumulative
mixes; the mix of all layers' weights give the expected layer (summary.py).

Why the batched model trains each probe as it would be trained alone: a probe's loss depends on
its own parameters only, so the gradient of the summed loss with respect to them is the
gradient of its own loss; Adam's update is elementwise; so from the same initialisation on the
same batches a probe takes the same steps (tests/test_layers_probes.py checks it against a
model of that probe alone). Each probe draws its initialisation from its own generator, seeded
by (seed, group, layer), as nn.Linear does by default: U(-1/√fan_in, 1/√fan_in); a mix starts
from w = 0 (every layer of 0..c weighs 1/(c+1)) and γ = 1.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

#: The probes of a sweep, by group: per layer (task and control) and cumulative mixes.
GROUPS = ("linear", "mlp", "mix", "control-linear", "control-mlp")
#: The groups trained on the control task's labels.
CONTROL = ("control-linear", "control-mlp")


def probe_seed(seed: int, group: str, index: int) -> int:
    """The seed of one probe's own generator (a stable hash, so a probe's initialisation does
    not depend on which other probes are built beside it)."""
    digest = hashlib.sha256(f"{seed}/{group}/{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & (2**63 - 1)


def _uniform(gens: list[list[torch.Generator]], shape: tuple[int, ...], fan_in: int):
    """(S, P, *shape): each probe's tensor drawn from its own generator, in call order."""
    bound = fan_in**-0.5
    rows = [
        torch.stack([(torch.rand(shape, generator=g) * 2 - 1) * bound for g in row]) for row in gens
    ]
    return nn.Parameter(torch.stack(rows))


class _Linear(nn.Module):
    """One linear map per probe: W (S, P, D, K), b (S, P, K)."""

    def __init__(self, gens, dim: int, k: int):
        super().__init__()
        self.weight = _uniform(gens, (dim, k), dim)  # (S, P, D, K)
        self.bias = _uniform(gens, (k,), dim)  # (S, P, K)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.matmul(x, self.weight)  # (S, P, B, K): one batched product over (S, P)
        return z + self.bias[:, :, None]  # (S, P, B, K)


class _MLP(nn.Module):
    """One MLP per probe: U (S, P, D, H), c (S, P, H), then a linear map H -> K."""

    def __init__(self, gens, dim: int, hidden: int, k: int):
        super().__init__()
        self.weight = _uniform(gens, (dim, hidden), dim)  # (S, P, D, H)
        self.bias = _uniform(gens, (hidden,), dim)  # (S, P, H)
        self.out = _Linear(gens, hidden, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.matmul(x, self.weight)  # (S, P, B, H)
        return self.out(torch.relu(h + self.bias[:, :, None]))  # (S, P, B, K)


class _Mix(nn.Module):
    """A scalar mix of layers 0..c per probe (w (S, C, L), γ (S, C)), then a linear map."""

    above: torch.Tensor  # (C, L) a registered buffer: layers above each mix's top

    def __init__(self, gens, tops: Sequence[int], num_layers: int, dim: int, k: int):
        super().__init__()
        s, c = len(gens), len(tops)
        self.w = nn.Parameter(torch.zeros(s, c, num_layers))  # (S, C, L)
        self.gamma = nn.Parameter(torch.ones(s, c))  # (S, C)
        above = torch.arange(num_layers)[None, :] > torch.tensor(list(tops))[:, None]  # (C, L)
        self.register_buffer("above", above, persistent=False)
        self.out = _Linear(gens, dim, k)

    def weights(self) -> torch.Tensor:
        """(S, C, L) softmax over layers 0..c, 0 above c."""
        return torch.softmax(self.w.masked_fill(self.above, float("-inf")), dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (S, L, B, D): every layer of each seed's batch."""
        s, n, b, d = x.shape
        m = torch.bmm(self.weights(), x.reshape(s, n, b * d))  # (S, C, B D): Σ_l s_l x_l
        return self.out(self.gamma[:, :, None, None] * m.view(s, -1, b, d))  # (S, C, B, K)


class LayerProbes(nn.Module):
    """The probes of `seeds` x `layers` (per-layer groups) and `seeds` x `tops` (cumulative
    mixes of layers 0..top), of the `groups` asked for; `forward(x (S, B, L, D))` gives each
    group's outputs (S, P, B, K) and `losses` each probe's loss (S, P)."""

    def __init__(
        self,
        *,
        seeds: Sequence[int],
        layers: Sequence[int],
        tops: Sequence[int],
        num_layers: int,
        dim: int,
        num_labels: int,
        hidden: int,
        kind: str,
        groups: Sequence[str] = GROUPS,
    ):
        super().__init__()
        unknown = [g for g in groups if g not in GROUPS]
        if unknown:
            raise ValueError(f"LayerProbes: unknown groups {unknown}; expected {GROUPS}")
        bad = [i for i in (*layers, *tops) if not 0 <= i < num_layers]
        if bad:
            raise ValueError(f"LayerProbes: layers {bad} outside 0..{num_layers - 1}")
        self.seeds, self.layers, self.tops = list(seeds), list(layers), list(tops)
        self.all_layers = self.layers == list(range(num_layers))
        self.kind, self.groups = kind, tuple(groups)
        self.probes = nn.ModuleDict()
        for group in self.groups:
            index = self.tops if group == "mix" else self.layers
            gens = [
                [torch.Generator().manual_seed(probe_seed(s, group, i)) for i in index]
                for s in self.seeds
            ]
            if group == "mix":
                self.probes[group] = _Mix(gens, self.tops, num_layers, dim, num_labels)
            elif group.endswith("mlp"):
                self.probes[group] = _MLP(gens, dim, hidden, num_labels)
            else:
                self.probes[group] = _Linear(gens, dim, num_labels)

    def forward(
        self, x: torch.Tensor, groups: Sequence[str] | None = None
    ) -> dict[str, torch.Tensor]:
        """x (S, B, L, D) -> {group: (S, P, B, K)} of `groups` (default: all)."""
        by_layer = x.transpose(1, 2).contiguous()  # (S, L, B, D)
        per_layer = by_layer if self.all_layers else by_layer[:, self.layers]  # (S, P, B, D)
        return {
            g: self.probes[g](by_layer if g == "mix" else per_layer) for g in groups or self.groups
        }  # (S, P, B, K) each

    def losses(
        self, out: dict[str, torch.Tensor], y: torch.Tensor, yc: torch.Tensor | None
    ) -> dict[str, torch.Tensor]:
        """{group: (S, P)} each probe's mean loss on its batch; y, yc: (S, B) targets."""
        if yc is None and any(g in CONTROL for g in out):
            raise ValueError(f"LayerProbes.losses: control groups {CONTROL} need control targets")
        return {
            g: self._loss(z, yc if g in CONTROL and yc is not None else y) for g, z in out.items()
        }

    def _loss(self, z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        s, p, b, k = z.shape
        t = t[:, None].expand(s, p, b)  # (S, P, B)
        if self.kind == "regression":
            return ((z.squeeze(-1) - t) ** 2).mean(-1)  # (S, P)
        ce = F.cross_entropy(z.reshape(-1, k), t.reshape(-1), reduction="none")  # (S P B,)
        return ce.view(s, p, b).mean(-1)  # (S, P)

    def mix_weights(self) -> torch.Tensor:
        """(S, C, L) the cumulative mixes' layer weights, detached."""
        mix = self.probes["mix"]
        assert isinstance(mix, _Mix)  # built so in __init__
        with torch.no_grad():
            return mix.weights().cpu()

    def per_probe(self) -> dict[str, list[tuple[str, nn.Parameter]]]:
        """{group: [(name, parameter (S, P, ...))]}: every parameter with a probe's axes."""
        return {g: list(m.named_parameters()) for g, m in self.probes.items()}
