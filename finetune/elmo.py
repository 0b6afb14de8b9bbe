"""🔥 ELMo fine-tuning (Peters, Ruder & Smith 2019, sec. 3): the whole biLM trains, with the
output layer of each task kind on top of a learned scalar mix of its L layers.

    h_t = gamma sum_l softmax(w)_l h_{t,l}                 scalar mix (Peters et al. 2018, eq. 1)
    classification (SST-2):  v = max_t h_t,  z = softmax(W dropout(v) + b)
    pairs (NLI, MRPC, STS):  a, b = h over each sentence, encoded separately; bi-attention
        e_ij = a_i . b_j,  ã_i = sum_j softmax_j(e_ij) b_j,  b̃_j = sum_i softmax_i(e_ij) a_i
        m_a = [a; ã; a - ã; a * ã],  m_b = [b; b̃; b - b̃; b * b̃]    ESIM's enhancement (Chen
        v = [mean m_a; max m_a; mean m_b; max m_b]                   et al. 2017, eq. 14-20)
        z = W dropout(v) + b   (softmax, or one score with squared error for STS)
      no parameters besides W, b; with bi_attention=False v = [max a; max b] (Table 3 ablation)
    NER:  e_t = W dropout(h_t) + b,  CRF over e (or a per-word softmax with crf=False)

State policy: fixed (`extractor/elmo/state.py`). Every sentence starts from the LSTM state
after reading `WARMUP_SENTENCES` from zero. That state depends on the weights being trained:
it is a constant of the optimisation (no gradient flows into it), recomputed from the current
weights by `refresh_state()` at the start of each epoch and before each evaluation. It is kept
in buffers, so a checkpoint restores it, and evaluation matches
`ElmoEncoder(state="fixed")` built from the saved weights.

Shapes: B batch, T words, T+2 with <S> </S>, C characters per token, L layers, D = 2P.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from snowfire.nn import ScalarMix, enhance, masked_max, pool_pair
from snowfire.tasks import encode_targets, label_indices

from .base import FireModel
from .optim import LayerGroup
from .output import IGNORE_INDEX, OutputLayer, TagScores

if TYPE_CHECKING:
    from snowfire.extractor import ElmoBiLM


class ElmoFinetuner(FireModel):
    """An `ElmoBiLM` + scalar mix + the task's `OutputLayer`; `collate` builds char ids."""

    warm_h: torch.Tensor  # buffers (register_buffer below): the warm-up state
    warm_c: torch.Tensor

    def __init__(
        self,
        bilm: ElmoBiLM,
        *,
        kind: str,
        pair: bool,
        num_labels: int,
        labels: Sequence[str] | None = None,
        dropout: float = 0.1,
        bi_attention: bool = True,
        crf: bool = True,
        lstm: int = 0,
    ) -> None:
        super().__init__()
        self.bilm = bilm
        self.kind, self.pair, self.bi_attention = kind, pair, bi_attention
        self.mix = ScalarMix(bilm.num_layers)
        d = bilm.output_dim  # D
        in_dim = (16 * d if bi_attention else 2 * d) if pair and kind != "tagging" else d
        tags = list(labels or ())
        pad_tag = tags.index("O") if kind == "tagging" and "O" in tags else 0
        self.output = OutputLayer(
            in_dim,
            kind,
            num_labels,
            dropout=dropout,
            crf=crf and kind == "tagging",
            lstm=lstm if kind == "tagging" else 0,
            pad_tag=pad_tag,
        )
        self.labels = list(labels or ())  # class names or tags, in index order
        state = bilm.zero_state(1)
        self.register_buffer("warm_h", state.h.clone())  # (2, n, 1, P)
        self.register_buffer("warm_c", state.c.clone())  # (2, n, 1, C)
        self.refresh_state()

    @torch.no_grad()
    def refresh_state(self) -> None:
        """The warm-up state of the current weights (`extractor.warmup_state`)."""
        from snowfire.extractor import warmup_state

        state = warmup_state(self.bilm, self.warm_h.device)  # h (2, n, 1, P), c (2, n, 1, C)
        self.warm_h.copy_(state.h)
        self.warm_c.copy_(state.c)

    # ------------------------------------------------------------------ data
    def collate(self, examples: Sequence[Any]) -> dict[str, torch.Tensor]:
        """Char ids of every sentence: (B, T+2, C), pairs (2B, T+2, C) as [a_1..a_B, b_1..b_B]."""
        from snowfire.extractor import batch_to_ids

        sentences = [list(e.words_a) for e in examples]
        if self.pair:
            sentences += [list(e.words_b) for e in examples]
        batch = {"chars": batch_to_ids(sentences)}  # (B | 2B, T+2, C)
        if self.kind == "tagging":
            if all(e.tags is not None for e in examples):
                t_max = batch["chars"].shape[1] - 2
                tags = torch.full((len(examples), t_max), IGNORE_INDEX)  # (B, T)
                for b, e in enumerate(examples):
                    tags[b, : len(e.tags)] = torch.from_numpy(label_indices(self.labels, e.tags))
                batch["labels"] = tags
        elif (targets := encode_targets(self.kind, self.labels, examples)) is not None:
            batch["labels"] = torch.from_numpy(targets)  # (B,): ❄️'s class indices, or scores
        return batch

    # ------------------------------------------------------------------ model
    def layers(self, chars: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """biLM layers of every word from the fixed state: (L, B, T, D) and mask (B, T)."""
        from snowfire.extractor import LstmState

        n = chars.shape[0]
        state = LstmState(
            self.warm_h.expand(-1, -1, n, -1), self.warm_c.expand(-1, -1, n, -1)
        )  # h (2, n, B, P), c (2, n, B, C)
        layers, mask, _ = self.bilm(chars, state)  # (L, B, T+2, D), (B, T+2)
        lengths = mask.sum(dim=1) - 2  # (B,) words without <S> </S>
        t = chars.shape[1] - 2
        words = torch.arange(t, device=chars.device)[None, :] < lengths[:, None]  # (B, T)
        return layers[:, :, 1:-1], words  # (L, B, T, D), (B, T)

    def states(self, chars: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Scalar-mixed states (B, T, D), zero past each sentence, and the word mask (B, T)."""
        layers, mask = self.layers(chars)  # (L, B, T, D), (B, T)
        h = self.mix(layers.permute(1, 2, 0, 3))  # (B, T, D)
        return h * mask.unsqueeze(-1), mask  # (B, T, D)

    def forward(
        self, batch: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor | TagScores, torch.Tensor | None]:
        h, mask = self.states(batch["chars"])  # (B | 2B, T, D), (B | 2B, T)
        labels = batch.get("labels")
        if self.kind == "tagging":
            return self.output(h, labels, mask=mask)  # emissions (B, T, K)
        if not self.pair:
            return self.output(masked_max(h, mask), labels)  # (B, D) -> (B, K) | (B,)
        n = h.shape[0] // 2
        a, b, mask_a, mask_b = h[:n], h[n:], mask[:n], mask[n:]  # (B, T, D), (B, T)
        if not self.bi_attention:
            v = torch.cat([masked_max(a, mask_a), masked_max(b, mask_b)], dim=-1)  # (B, 2D)
            return self.output(v, labels)
        m_a, m_b = enhance(a, b, mask_a, mask_b)  # (B, Ta, 4D), (B, Tb, 4D)
        v = pool_pair(m_a, m_b, mask_a, mask_b)  # (B, 16D)
        return self.output(v, labels)

    @property
    def pretrained(self) -> nn.Module:
        return self.bilm

    def layer_groups(self) -> list[LayerGroup]:
        """Top-down: output layer + scalar mix, LSTM layer n-1 (both directions), ..., LSTM
        layer 0, the character CNN (layer 0 of the biLM)."""
        lstm = self.bilm.lstm
        groups: list[LayerGroup] = [
            ("output", list(self.output.parameters()) + list(self.mix.parameters()))
        ]
        for i in reversed(range(lstm.n_layers)):
            cells = (lstm.forward_layers[i], lstm.backward_layers[i])
            groups.append((f"lstm{i}", [p for c in cells for p in c.parameters()]))
        groups.append(("char_cnn", list(self.bilm.token_embedder.parameters())))
        return groups

    def save_encoder(self, folder) -> None:
        """options.json + weights.hdf5 in the bilm-tf layout: `load_encoder("elmo:FOLDER")`."""
        from .bilm_file import save_bilm

        save_bilm(self.bilm, folder)
