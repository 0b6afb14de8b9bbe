"""The zero-training baseline a sentence-embedding user would pick for STS instead of a head.

    e_a = mean_{s in a} h_{s,l},  e_b = mean_{s in b} h_{s,l},  score = cos(e_a, e_b)

over all tokens of each text (special tokens included, as sentence-transformers' mean pooling
does), on one layer l (the last by default). With features of pairs encoded separately
(`--pair-encoding separate`), e_a is exactly the sentence embedding all-MiniLM-L6-v2 users get.
No parameter is trained; the score is compared to the gold with Pearson / Spearman.
"""

from __future__ import annotations

import numpy as np

from snowfire.cache import FeatureSetInfo, Reader


def cosine_scores(
    reader: Reader, info: FeatureSetInfo, layer: int = -1, batch: int = 512
) -> np.ndarray:
    """(n,) cosine similarity of the mean-pooled texts of each pair of a feature set."""
    layer = layer % info.num_layers
    scores = np.zeros(info.num_examples, dtype=np.float64)
    for start in range(0, info.num_examples, batch):
        idx = list(range(start, min(start + batch, info.num_examples)))
        eb = reader.read(info.id, indices=idx, layers=[layer])
        for j, i in enumerate(idx):
            x = eb.example(j)[:, 0].astype(np.float64)  # (S, D)
            cut = int(eb.pair_starts[j])
            if cut < 0:
                raise ValueError(f"{info.id}: example {i} is not a pair; cosine needs pairs")
            a, b = x[:cut].mean(axis=0), x[cut:].mean(axis=0)  # (D,), (D,)
            scores[i] = a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12)
    return scores
