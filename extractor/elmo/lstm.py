"""ELMo's stacked LSTMs with projection, one stack per direction (Peters et al., 2018).

One step of a cell (TensorFlow `LSTMCell` with `num_proj`, as bilm-tf trained it), with
x_t the layer input (P), h the projected state (P) and c the memory cell (C):

    [i, j, f, o] = x_t W_x + h_{t-1} W_h + b          gate blocks of C, TF order i, j, f, o
    c_t = clip( sigmoid(f + 1) * c_{t-1} + sigmoid(i) * tanh(j), +-cell_clip )
    h_t = clip( (sigmoid(o) * tanh(c_t)) W_P, +-proj_clip )

The +1 is TF's forget bias, not stored in the file. h_t is both output and state; there are
no peepholes and no projection bias. For layers l >= 1 with `use_skip_connections` the layer
output is h_t + x_t (a residual within one direction). The forward stack reads left to right,
the backward stack right to left starting at each sequence's own last token; positions past a
sequence's length output zeros and leave its state untouched.

Shapes: B batch, T positions, P projection_dim, C cell_dim, n layers per direction.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple, cast

import numpy as np
import torch
from torch import nn

from .options import ElmoOptions
from .weights import lstm_prefix

FORGET_BIAS = 1.0  # TF LSTMCell default, added at run time


class LstmState(NamedTuple):
    """Per-row recurrent state of both stacks; index 0 of dim 0 is forward, 1 backward."""

    h: torch.Tensor  # (2, n, B, P)
    c: torch.Tensor  # (2, n, B, C)

    @property
    def batch_size(self) -> int:
        return self.h.shape[2]

    def rows(self, index: torch.Tensor | slice) -> LstmState:
        """The state of some rows (a slice or an index tensor)."""
        return LstmState(self.h[:, :, index], self.c[:, :, index])

    def to(self, device: torch.device | str) -> LstmState:
        return LstmState(self.h.to(device), self.c.to(device))


class LstmCellWithProjection(nn.Module):
    """One direction of one layer, run over a whole padded batch (equations above)."""

    def __init__(self, opt: ElmoOptions) -> None:
        super().__init__()
        p, c = opt.projection_dim, opt.cell_dim
        self.input_linearity = nn.Linear(p, 4 * c, bias=True)  # W_x, b
        self.state_linearity = nn.Linear(p, 4 * c, bias=False)  # W_h
        self.state_projection = nn.Linear(c, p, bias=False)  # W_P
        self.cell_clip = opt.cell_clip
        self.proj_clip = opt.proj_clip

    @torch.no_grad()
    def load_tf(self, w0: np.ndarray, b: np.ndarray, wp: np.ndarray) -> None:
        """Copy `W_0` (in + P, 4C), `B` (4C,), `W_P_0` (C, P) from the HDF5 file."""
        w0_t = torch.from_numpy(np.ascontiguousarray(w0.T))  # (4C, in + P)
        n_in = self.input_linearity.in_features
        self.input_linearity.weight.copy_(w0_t[:, :n_in])
        self.state_linearity.weight.copy_(w0_t[:, n_in:])
        self.input_linearity.bias.copy_(torch.from_numpy(b))
        self.state_projection.weight.copy_(torch.from_numpy(np.ascontiguousarray(wp.T)))

    def forward(
        self,
        x: torch.Tensor,  # (B, T, P)
        lengths: torch.Tensor,  # (B,)
        h: torch.Tensor,  # (B, P)
        c: torch.Tensor,  # (B, C)
        reverse: bool,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Returns outputs (B, T, P), zero past each length, and the final h (B, P), c (B, C).

        Forward: the final state is after position length-1; backward: after position 0.
        A row of length 0 keeps its initial state.
        """
        t_max = int(lengths.max()) if lengths.numel() else 0
        zx = self.input_linearity(x[:, :t_max])  # (B, T', 4C), all time steps at once
        outputs: list[torch.Tensor] = []
        steps = range(t_max - 1, -1, -1) if reverse else range(t_max)
        for t in steps:
            active = (t < lengths).unsqueeze(1)  # (B, 1)
            z = zx[:, t] + self.state_linearity(h)  # (B, 4C)
            i, j, f, o = z.chunk(4, dim=1)  # (B, C) each
            c_new = torch.sigmoid(f + FORGET_BIAS) * c + torch.sigmoid(i) * torch.tanh(j)  # (B, C)
            c_new = c_new.clamp(-self.cell_clip, self.cell_clip)  # (B, C)
            h_new = self.state_projection(torch.sigmoid(o) * torch.tanh(c_new))  # (B, P)
            h_new = h_new.clamp(-self.proj_clip, self.proj_clip)  # (B, P)
            h = torch.where(active, h_new, h)  # (B, P)
            c = torch.where(active, c_new, c)  # (B, C)
            outputs.append(torch.where(active, h_new, torch.zeros_like(h_new)))  # (B, P)
        if reverse:
            outputs.reverse()
        out = x.new_zeros(x.shape[0], x.shape[1], h.shape[1])  # (B, T, P)
        if outputs:
            out[:, :t_max] = torch.stack(outputs, dim=1)  # (B, T', P)
        return out, h, c


class ElmoLstm(nn.Module):
    """Two independent stacks of `n_layers` cells, outputs concatenated per layer."""

    def __init__(self, opt: ElmoOptions) -> None:
        super().__init__()
        self.n_layers = opt.n_layers
        self.cell_dim = opt.cell_dim
        self.projection_dim = opt.projection_dim
        self.use_skip_connections = opt.use_skip_connections
        self.forward_layers = nn.ModuleList(
            LstmCellWithProjection(opt) for _ in range(opt.n_layers)
        )
        self.backward_layers = nn.ModuleList(
            LstmCellWithProjection(opt) for _ in range(opt.n_layers)
        )

    def load_tf(self, w: dict[str, np.ndarray]) -> None:
        """Copy the `RNN_{d}/.../Cell{l}/LSTMCell/*` arrays into both stacks."""
        for d, stack in enumerate((self.forward_layers, self.backward_layers)):
            for layer, cell in enumerate(cast(Iterable[LstmCellWithProjection], stack)):
                prefix = lstm_prefix(d, layer)
                cell.load_tf(w[f"{prefix}/W_0"], w[f"{prefix}/B"], w[f"{prefix}/W_P_0"])

    def zero_state(self, batch_size: int, device: torch.device | str | None = None) -> LstmState:
        """All-zero state for `batch_size` rows (the start of every reference run)."""
        cell = cast(LstmCellWithProjection, self.forward_layers[0])  # ModuleList: a Module
        weight = cell.state_projection.weight
        kw: dict[str, Any] = {"dtype": weight.dtype, "device": device or weight.device}
        h = torch.zeros(2, self.n_layers, batch_size, self.projection_dim, **kw)  # (2, n, B, P)
        c = torch.zeros(2, self.n_layers, batch_size, self.cell_dim, **kw)  # (2, n, B, C)
        return LstmState(h, c)

    def forward(
        self,
        x: torch.Tensor,  # (B, T, P) token embeddings, zero at padding
        lengths: torch.Tensor,  # (B,)
        state: LstmState,  # h (2, n, B, P), c (2, n, B, C)
    ) -> tuple[torch.Tensor, LstmState]:
        """Returns per-layer outputs (n, B, T, 2P) = [forward_l; backward_l] and the new state."""
        outputs: list[list[torch.Tensor]] = [[], []]
        h_out, c_out = torch.empty_like(state.h), torch.empty_like(state.c)
        for d, stack in enumerate((self.forward_layers, self.backward_layers)):
            layer_input = x  # (B, T, P)
            for layer, cell in enumerate(stack):
                out, h_out[d, layer], c_out[d, layer] = cell(
                    layer_input, lengths, state.h[d, layer], state.c[d, layer], reverse=d == 1
                )  # out (B, T, P)
                if layer > 0 and self.use_skip_connections:
                    out = out + layer_input  # (B, T, P), zero stays zero at padding
                outputs[d].append(out)
                layer_input = out
        layers = [
            torch.cat([f, b], dim=-1) for f, b in zip(*outputs, strict=True)
        ]  # n x (B, T, 2P)
        return torch.stack(layers), LstmState(h_out, c_out)  # (n, B, T, 2P)
