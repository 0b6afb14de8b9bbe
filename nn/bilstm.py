"""A bidirectional LSTM over padded sequences (Graves & Schmidhuber 2005), packed so that
padding is never read:

    ->h_s = LSTM_fwd(x_s, ->h_{s-1}),   <-h_s = LSTM_bwd(x_s, <-h_{s+1}),   h_s = [->h_s; <-h_s]

Each direction starts from zero at its end of the real positions, so a padded row's states
equal the same row's alone. Shapes: B batch, S positions, I input width, H each direction's
width. The ❄️ heads (BCN, ESIM, the taggers) and the 🔥 output layer's Table 5 "+BiLSTM" use it.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class BiLSTM(nn.Module):
    """A bidirectional LSTM over padded (B, S, I) inputs, packed so padding is never read.

    Returns (B, S, 2H): forward ‖ backward states, zeros on padding.
    """

    def __init__(self, input_dim: int, hidden: int, num_layers: int = 1, dropout: float = 0.0):
        super().__init__()
        self.lstm = nn.LSTM(
            input_dim,
            hidden,
            num_layers=num_layers,
            batch_first=True,
            bidirectional=True,
            dropout=dropout if num_layers > 1 else 0.0,
        )
        self.output_dim = 2 * hidden

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(dim=1).clamp(min=1).cpu()  # (B,)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])  # (B, S, 2H)
        return out * mask.unsqueeze(-1)  # (B, S, 2H)
