"""The ELMo bidirectional language model (inference), all layers out (Peters et al., 2018).

For a sentence `<S> w_1 ... w_T </S>` with character ids (see `chars.py`):

    x_k            = CharCNN(chars(w_k))                         layer 0 token embedding (P)
    ->h_{k,l}      = forward LSTM layer l over x_0..x_k           (P)
    <-h_{k,l}      = backward LSTM layer l over x_k..x_{T+1}      (P)
    layer 0        = [x_k ; x_k]                                  (2P, the embedding duplicated)
    layer l >= 1   = [->h_{k,l} ; <-h_{k,l}]                      (2P)

The LSTM state is an explicit input and output (`LstmState`): passing each call's
`new_state` into the next reproduces the reference's state carried across batches; passing
the same state every time makes each sentence independent of its neighbours.

Shapes: B batch, T+2 positions (with <S>/</S>), C chars per token (50), L = 1 + n_layers,
P projection_dim.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from .char_cnn import CharCNN
from .lstm import ElmoLstm, LstmState
from .options import ElmoOptions, read_options
from .weights import read_weights


class ElmoBiLM(nn.Module):
    """Char ids -> (L, B, T+2, 2P) activations of every layer, mask, new LSTM state."""

    def __init__(self, opt: ElmoOptions) -> None:
        super().__init__()
        self.options = opt
        self.token_embedder = CharCNN(opt)
        self.lstm = ElmoLstm(opt)
        self.num_layers = 1 + opt.n_layers  # L
        self.output_dim = 2 * opt.projection_dim  # 2P

    @classmethod
    def from_files(cls, options_file: str | Path, weight_file: str | Path) -> ElmoBiLM:
        """Build from an options JSON and load an HDF5 weight file (both validated)."""
        opt = read_options(options_file)
        weights = read_weights(weight_file, opt)
        model = cls(opt)
        model.token_embedder.load_tf(weights)
        model.lstm.load_tf(weights)
        return model.eval()

    def zero_state(self, batch_size: int, device: torch.device | str | None = None) -> LstmState:
        """All-zero LSTM state for `batch_size` rows."""
        return self.lstm.zero_state(batch_size, device)

    def forward(
        self,
        char_ids: torch.Tensor,  # (B, T+2, C)
        state: LstmState | None = None,  # h (2, n, B, P), c (2, n, B, C); None = zeros
    ) -> tuple[torch.Tensor, torch.Tensor, LstmState]:
        """Returns layers (L, B, T+2, 2P), mask (B, T+2) bool and the state after the batch.

        Padded positions are zero in every layer. Rows with no token at all keep their state.
        """
        if char_ids.ndim != 3 or char_ids.shape[2] != self.options.max_characters_per_token:
            raise ValueError(
                f"ElmoBiLM: expected char_ids (B, T+2, "
                f"{self.options.max_characters_per_token}), got {tuple(char_ids.shape)}"
            )
        batch_size = char_ids.shape[0]
        if state is None:
            state = self.zero_state(batch_size, char_ids.device)
        elif state.batch_size != batch_size:
            raise ValueError(
                f"ElmoBiLM: state has {state.batch_size} rows, the batch has {batch_size}"
            )
        mask = (char_ids > 0).any(dim=-1)  # (B, T+2)
        lengths = mask.sum(dim=1)  # (B,)
        emb = self.token_embedder(char_ids)  # (B, T+2, P), zero at padding
        lstm_layers, new_state = self.lstm(emb, lengths, state)  # (n, B, T+2, 2P)
        layer0 = torch.cat([emb, emb], dim=-1).unsqueeze(0)  # (1, B, T+2, 2P)
        layers = torch.cat([layer0, lstm_layers], dim=0)  # (L, B, T+2, 2P)
        return layers, mask, new_state
