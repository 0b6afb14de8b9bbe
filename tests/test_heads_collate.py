"""collate: the ragged store batch padded for the heads, checked on hand-built batches."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from snowfire.heads import collate
from snowfire.nn import IGNORE_INDEX
from tests.helpers.heads import (
    D,
    L,
    batch_for,
    example_batch,
    examples_for,
    make_example,
    make_head,
    targets_for,
)


def test_collate_pads_a_single_text_batch():
    examples = examples_for(False)
    eb = example_batch(examples)
    eb.features = eb.features.astype(np.float16)  # the store may hold float16
    batch = collate(eb, [2, 0, 1], kind="classification")
    assert batch.features.dtype == torch.float32 and batch.features.shape == (3, 10, L, D)
    assert batch.mask.dtype == torch.bool
    assert batch.mask.sum(1).tolist() == [6, 10, 4]
    assert batch.labels.tolist() == [2, 0, 1] and batch.labels.dtype == torch.long
    torch.testing.assert_close(
        batch.features[1, :10].numpy(), examples[1][0].astype(np.float16).astype(np.float32)
    )
    assert not batch.features[0, 6:].any()  # padding is zeros
    assert batch.word_ids[0].tolist() == [-1, 0, 0, 1, 2, -1] + [-1] * 4
    assert batch.type_ids[0].tolist() == [0] * 10
    assert not batch.is_pair and not batch.is_word_level and batch.keys == ["k0", "k1", "k2"]
    assert batch.to("cpu").features is not None and len(batch) == 3


@pytest.mark.parametrize("joint", [True, False], ids=["joint", "separate"])
def test_collate_splits_pairs_into_their_two_texts(joint):
    rng = np.random.default_rng(0)
    examples = [
        make_example(rng, [2, 1], [1, 1, 1], joint=joint),
        make_example(rng, [1], [3], joint=joint),
    ]
    batch = collate(example_batch(examples), [1.5, 4.0], kind="regression")
    assert batch.labels.dtype == torch.float32 and batch.labels.tolist() == [1.5, 4.0]
    feats, word_ids, type_ids, start = examples[0]
    a = [i for i in range(len(word_ids)) if word_ids[i] >= 0 and i < start]
    b = [i for i in range(len(word_ids)) if word_ids[i] >= 0 and i >= start]
    assert (a, b) == ([1, 2, 3], [5, 6, 7] if joint else [6, 7, 8])  # specials dropped
    torch.testing.assert_close(batch.features_a[0].numpy(), feats[a])
    torch.testing.assert_close(batch.features_b[0].numpy(), feats[b])
    assert batch.mask_a.tolist() == [[True] * 3, [True, False, False]]
    assert batch.mask_b.tolist() == [[True] * 3, [True] * 3]
    torch.testing.assert_close(batch.features_a[1, 0].numpy(), examples[1][0][1])
    assert not batch.features_a[1, 1:].any()
    assert batch.type_ids[0, : len(type_ids)].tolist() == type_ids.tolist()


def test_collate_takes_the_first_piece_of_every_word():
    examples = examples_for(False)  # pieces per word (2, 1, 1), (1, 3, 1, 2, 1), (1, 1)
    batch = collate(example_batch(examples), targets_for("tagging", examples), kind="tagging")
    assert batch.first_piece_index.tolist() == [[1, 3, 4, 0, 0], [1, 2, 5, 6, 8], [1, 2, 0, 0, 0]]
    assert batch.word_mask.sum(1).tolist() == [3, 5, 2]
    for i, (feats, *_) in enumerate(examples):
        n = int(batch.word_mask[i].sum())
        torch.testing.assert_close(
            batch.word_features[i, :n].numpy(), feats[batch.first_piece_index[i, :n].numpy()]
        )
        assert not batch.word_features[i, n:].any()
    assert batch.labels.shape == (3, 5) and (batch.labels[0, 3:] == IGNORE_INDEX).all()
    also = collate(example_batch(examples), [0, 1, 2], kind="classification", word_level=True)
    assert torch.equal(also.first_piece_index, batch.first_piece_index)


def test_collate_errors_name_the_problem():
    rng = np.random.default_rng(0)
    single, pair = make_example(rng, [1, 1]), make_example(rng, [1], [1])
    with pytest.raises(ValueError, match="the batch mixes pairs and single texts"):
        collate(example_batch([single, pair]), None, kind="classification")
    with pytest.raises(ValueError, match="2 examples but 3 targets"):
        collate(example_batch([single, single]), [0, 1, 1], kind="classification")
    with pytest.raises(ValueError, match="example 'k0' has 2 words but 3 tags"):
        collate(example_batch([single]), [[0, 1, 2]], kind="tagging")
    with pytest.raises(ValueError, match=re.escape("kind must be one of")):
        collate(example_batch([single]), None, kind="ranking")
    with pytest.raises(ValueError, match="word-level fields are built for single texts"):
        collate(example_batch([pair]), None, kind="classification", word_level=True)
    holes = (single[0][:3], np.array([-1, 1, -1], np.int32), single[2][:3], -1)  # word 0 lost
    with pytest.raises(ValueError, match=re.escape("example 'k0': words [0] have no pieces")):
        collate(example_batch([holes]), None, kind="tagging")
    no_b = (pair[0][:4], np.array([-1, 0, -1, -1], np.int32), np.array([0, 0, 0, 1], np.int8), 3)
    with pytest.raises(ValueError, match="example 'k0' has no tokens of text b"):
        collate(example_batch([no_b]), None, kind="classification")
    empty = example_batch([single])
    empty.offsets = np.array([0], np.int64)
    with pytest.raises(ValueError, match="the ExampleBatch holds no examples"):
        collate(empty, None, kind="classification")


def test_a_tagger_refuses_a_batch_without_words():
    head = make_head("crf", "tagging", False)
    batch = batch_for("tagging", examples_for(False))
    batch.word_features = None
    with pytest.raises(ValueError, match="the tagger reads word-level batches"):
        head(batch)
