"""Per-word tag scores and the two outputs over them: a per-word softmax or a linear-chain CRF
(Lafferty et al. 2001, through pytorch-crf), shared by the ❄️ taggers and the 🔥 output layer.

    softmax:  p(y_t | x) = softmax(e_t),   loss = -sum_t log p(y_t | x) / #words
    CRF:      s(y) = start_{y_1} + sum_t e_{t, y_t} + sum_{t>1} A_{y_{t-1}, y_t} + end_{y_T}
              p(y | x) = exp s(y) / sum_{y'} exp s(y'),   loss = -log p(y | x), mean over
              sentences;  prediction: argmax_y s(y) by Viterbi

Shapes: B batch, T words, K tags. Padded tag positions hold `IGNORE_INDEX`.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100  # padded tag positions (what nn.CrossEntropyLoss ignores)


class TagScores(NamedTuple):
    """A tagger's output (❄️ heads and 🔥 output layers): per-word tag scores, which words
    are real, and (🔥) each sentence's length in words.

    emissions: (B, T, K); mask: (B, T) bool, a prefix of each row; lengths: (B,) words of each
    sentence, >= mask.sum(1) when BERT truncation dropped a sentence's last words (None: the
    mask's count).
    """

    emissions: torch.Tensor
    mask: torch.Tensor
    lengths: torch.Tensor | None = None


def tag_loss(scores: TagScores, tags: torch.Tensor | None, crf) -> torch.Tensor | None:
    """CRF negative log-likelihood (mean over sentences) when `crf` is a torchcrf.CRF, else
    token cross-entropy over the real words; None without tags. tags: (B, T) long."""
    if tags is None:
        return None
    emissions, mask = scores.emissions, scores.mask
    if crf is None:
        return F.cross_entropy(
            emissions.flatten(0, 1),
            tags.masked_fill(~mask, IGNORE_INDEX).flatten(),
            ignore_index=IGNORE_INDEX,
        )  # ()
    gold = tags.masked_fill(~mask, 0)  # (B, T) the CRF indexes with every position
    return -crf(emissions, gold, mask=mask, reduction="mean")  # ()


def decode_tags(scores: TagScores, crf) -> list[list[int]]:
    """Viterbi paths (CRF) or per-word argmax: one list of tag indices per sentence, as long
    as its real words in the mask."""
    emissions, mask = scores.emissions, scores.mask
    if crf is not None:
        return crf.decode(emissions, mask=mask)
    best = emissions.argmax(dim=-1)  # (B, T)
    return [row[:n].tolist() for row, n in zip(best, mask.sum(dim=1).tolist(), strict=True)]
