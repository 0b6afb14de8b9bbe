"""Every head learns: on store-shaped features where the answer is written in one feature
dimension (plus noise), a few hundred steps take it far above chance on held-out examples.
The same run with the features blanked out (a head that cannot see its input, like a head
that does not learn) stays at chance, so this test can fail."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from snowfire.heads import HEADS, build_head
from tests.helpers.heads import (
    CASES,
    IDS,
    NUM_LABELS,
    TINY,
    VARIANTS,
    L,
    batch_for,
    make_example,
)

SIGNAL = 3.0  # class / tag c is written as dim 0 = SIGNAL * (c - mean class)
EPOCHS = 12  # of 6 batches (lowest scores seen: 0.81 classification, 0.84 tagging, 0.96 Pearson)


def _data(kind: str, pair: bool, n: int, seed: int):
    rng = np.random.default_rng(seed)
    k = NUM_LABELS[kind]
    examples, targets = [], []
    for _ in range(n):
        words = rng.integers(1, 3, size=rng.integers(2, 6)).tolist()  # pieces per word
        ex = make_example(rng, words, list(reversed(words)) if pair else None)
        feats, word_ids = ex[0], ex[1]
        if kind == "tagging":
            tags = rng.integers(0, k, size=len(words))
            for t, w in enumerate(word_ids):
                if w >= 0 and (ex[3] < 0 or t < ex[3]):
                    feats[t, :, 0] = SIGNAL * (tags[w] - (k - 1) / 2)
            targets.append(tags.tolist())
        else:
            y = rng.integers(0, k) if kind == "classification" else rng.uniform(-1, 1)
            feats[:, :, 0] += SIGNAL * (y - (k - 1) / 2 if kind == "classification" else y)
            targets.append(int(y) if kind == "classification" else float(y))
        examples.append(ex)
    return examples, targets


def _score(kind: str, predicted, gold) -> float:
    if kind == "regression":
        if np.std(predicted) < 1e-6:
            return 0.0  # a constant prediction: no correlation (Pearson is undefined)
        return float(np.corrcoef(predicted, gold)[0, 1])
    if kind == "tagging":
        pairs = zip(predicted, gold, strict=True)
        return float(np.mean([p == g for ps, gs in pairs for p, g in zip(ps, gs, strict=True)]))
    return float(np.mean([p == g for p, g in zip(predicted, gold, strict=True)]))


def _train_and_score(name, kind, pair, *, blind: bool) -> float:
    torch.manual_seed(0)
    base, extra = VARIANTS.get(name, (name, {}))
    hparams = {**TINY.get(base, {}), **extra}
    if "dropout" in HEADS[base].hparams():
        hparams["dropout"] = 0.1  # the suite's heads are tiny: the default 0.5 starves them
    head = build_head(
        base, kind=kind, pair=pair, num_layers=L, dim=8, num_labels=NUM_LABELS[kind], **hparams
    )
    train, train_y = _data(kind, pair, 96, seed=1)
    test, test_y = _data(kind, pair, 64, seed=2)
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)

    def batch(examples, targets=None):
        if blind:  # the head sees zeros where the answer was
            examples = [(np.zeros_like(e[0]), *e[1:]) for e in examples]
        return batch_for(kind, examples, targets)

    head.train()
    for _ in range(EPOCHS):
        for i in range(0, len(train), 16):
            _, loss = head(batch(train[i : i + 16], train_y[i : i + 16]))
            opt.zero_grad()
            loss.backward()
            opt.step()
    head.eval()
    with torch.no_grad():
        out, _ = head(batch(test))
    return _score(kind, head.predict(out), test_y)


#: What "far above chance" means per kind (chance: 1/3 classes, 1/4 tags, Pearson 0).
LEARNED = {"classification": 0.7, "tagging": 0.7, "regression": 0.85}
CHANCE = {"classification": 0.5, "tagging": 0.4, "regression": 0.35}


@pytest.mark.parametrize(("name", "kind", "pair"), CASES, ids=IDS)
def test_every_head_learns(name, kind, pair):
    learned = _train_and_score(name, kind, pair, blind=False)
    assert learned >= LEARNED[kind], f"{name} ({kind}) reached only {learned:.3f}"


@pytest.mark.parametrize(
    ("name", "kind", "pair"),
    [
        ("linear", "classification", False),
        ("mlp", "regression", True),
        ("softmax", "tagging", False),
    ],
)
def test_a_head_that_cannot_see_its_input_stays_at_chance(name, kind, pair):
    """The negative control: the same training with the features blanked fails the bar above."""
    blind = _train_and_score(name, kind, pair, blind=True)
    assert abs(blind) <= CHANCE[kind] < LEARNED[kind], f"{name} ({kind}) blind scored {blind:.3f}"
