"""Entity chunks and span F1: hand-built IOB1/IOB2 cases, and seqeval on random sequences."""

from __future__ import annotations

import numpy as np
import pytest
from seqeval.metrics import f1_score, precision_score, recall_score

from snowfire.tasks import span_scores
from snowfire.tasks.spans import iob1_to_iob2, tag_spans

TOL = 1e-12


@pytest.mark.parametrize(
    ("tags", "spans"),
    [
        # IOB1: I- opens an entity after O or at the start; B- only between touching entities.
        (["I-PER", "I-PER", "O", "I-LOC"], [("PER", 0, 2), ("LOC", 3, 4)]),
        (["I-PER", "I-PER", "B-PER", "I-PER"], [("PER", 0, 2), ("PER", 2, 4)]),
        # IOB2: every entity opens with B-.
        (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 2), ("LOC", 3, 4)]),
        # Adjacent same-type B- tags are two entities.
        (["B-ORG", "B-ORG", "B-ORG"], [("ORG", 0, 1), ("ORG", 1, 2), ("ORG", 2, 3)]),
        # A type change ends a chunk even without B-.
        (["I-ORG", "I-LOC", "I-LOC"], [("ORG", 0, 1), ("LOC", 1, 3)]),
        (["B-ORG", "I-LOC"], [("ORG", 0, 1), ("LOC", 1, 2)]),
        # I- after O starts a chunk; B- after O too (the eng.train IOB1 inconsistency).
        (["O", "I-MISC", "O", "B-MISC", "I-MISC"], [("MISC", 1, 2), ("MISC", 3, 5)]),
        # An entity running to the end of the sentence.
        (["O", "O", "I-LOC"], [("LOC", 2, 3)]),
        (["O", "O"], []),
        ([], []),
    ],
)
def test_tag_spans_by_hand(tags, spans):
    assert tag_spans(tags) == spans


def test_iob1_to_iob2_keeps_the_chunks():
    iob1 = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "B-ORG", "I-ORG"]
    iob2 = ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "B-ORG", "I-ORG"]
    assert iob1_to_iob2(iob1) == iob2
    assert tag_spans(iob2) == tag_spans(iob1)


def test_iob1_and_iob2_spellings_score_as_equal():
    gold = [["I-PER", "I-PER", "O", "I-LOC", "B-LOC"]]
    pred = [iob1_to_iob2(gold[0])]
    assert span_scores(gold, pred) == {"span_f1": 1.0, "precision": 1.0, "recall": 1.0}


def test_partial_matches_by_hand():
    gold = [
        ["I-PER", "I-PER", "O", "I-LOC"],  # PER(0,2), LOC(3,4)
        ["I-ORG", "I-ORG", "I-ORG", "O"],  # ORG(0,3)
        ["O", "I-MISC", "B-MISC", "O"],  # MISC(1,2), MISC(2,3)
    ]
    pred = [
        ["I-PER", "O", "O", "I-LOC"],  # PER(0,1) wrong end; LOC(3,4) correct
        ["I-ORG", "I-ORG", "I-ORG", "O"],  # ORG(0,3) correct
        ["O", "I-MISC", "I-MISC", "O"],  # MISC(1,3): the merge matches neither
    ]
    # gold 5 chunks, predicted 4, correct 2
    p, r = 2 / 4, 2 / 5
    expected = {"span_f1": 2 * p * r / (p + r), "precision": p, "recall": r}
    assert span_scores(gold, pred) == pytest.approx(expected, abs=TOL)


def test_type_must_match():
    result = span_scores([["I-PER", "I-PER"]], [["I-ORG", "I-ORG"]])
    assert result == {"span_f1": 0.0, "precision": 0.0, "recall": 0.0}


def test_no_chunks_anywhere_is_zero():
    assert span_scores([["O"]], [["O"]]) == {"span_f1": 0.0, "precision": 0.0, "recall": 0.0}


def test_chunks_do_not_cross_sentences():
    # Joined into one sequence, I-PER | I-PER would be one chunk; per sentence they are two.
    result = span_scores([["I-PER"], ["I-PER"]], [["I-PER"], ["I-PER"]])
    assert result["span_f1"] == 1.0
    assert span_scores([["I-PER", "I-PER"]], [["I-PER"] * 2])["span_f1"] == 1.0


def _random_iob1(rng: np.random.Generator, n: int) -> list[str]:
    tags = ["O", "O", "O", "I-PER", "I-LOC", "I-ORG", "B-PER", "B-LOC", "I-MISC", "B-MISC"]
    return [tags[i] for i in rng.integers(0, len(tags), n)]


@pytest.mark.parametrize("seed", range(25))
def test_span_scores_match_seqeval_on_iob2(seed):
    """Our IOB1 scores == seqeval's default mode on the same tags converted to IOB2."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 15, int(rng.integers(1, 30)))
    gold = [_random_iob1(rng, n) for n in lengths]
    # Predictions: the gold tags with about a third of them replaced at random.
    pred = [
        [t if rng.random() > 0.33 else r for t, r in zip(g, _random_iob1(rng, len(g)), strict=True)]
        for g in gold
    ]
    ours = span_scores(gold, pred)
    g2 = [iob1_to_iob2(s) for s in gold]
    p2 = [iob1_to_iob2(s) for s in pred]
    assert ours["precision"] == pytest.approx(precision_score(g2, p2, zero_division=0), abs=TOL)
    assert ours["recall"] == pytest.approx(recall_score(g2, p2, zero_division=0), abs=TOL)
    assert ours["span_f1"] == pytest.approx(f1_score(g2, p2, zero_division=0), abs=TOL)


def test_bad_tags_and_shapes():
    with pytest.raises(
        ValueError,
        match=r"sentence 1 position 0: expected a tag 'O', 'B-TYPE' "
        r"or 'I-TYPE', got 'E-PER'",
    ):
        span_scores([["O"], ["I-PER"]], [["O"], ["E-PER"]])
    with pytest.raises(ValueError, match="got 'B-'"):
        tag_spans(["B-"])
    with pytest.raises(ValueError, match="got 'PER'"):
        tag_spans(["PER"])
    with pytest.raises(
        ValueError, match="sentence 0: expected 2 predicted tags \\(one per gold tag\\), got 1"
    ):
        span_scores([["O", "O"]], [["O"]])
    with pytest.raises(
        ValueError, match="expected as many predicted as gold sentences, got 1 and 2"
    ):
        span_scores([["O"], ["O"]], [["O"]])
    with pytest.raises(TypeError, match="sentence 0: expected a sequence of tags, got a str"):
        span_scores(["O"], ["O"])
    with pytest.raises(ValueError, match="expected at least one sentence"):
        span_scores([], [])
