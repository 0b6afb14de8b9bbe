"""Entity spans of IOB tag sequences and span-level F1, with conlleval's chunking rules.

A tag is "O" or "B-TYPE" / "I-TYPE". Following conlleval (CoNLL-2000/2003 evaluation script),
a chunk of type X

  * starts at B-X; or at I-X when the previous tag is O or of another type (so IOB1, where
    I-X opens an entity and B-X only separates two touching same-type entities, and IOB2,
    where every entity opens with B-X, are both read correctly);
  * ends before O, before any B-, and before a tag of another type.

Scores are micro-averaged over all chunks of all sentences (chunks never cross sentences):

    P = correct / predicted,   R = correct / gold,   F1 = 2 P R / (P + R)

where a predicted chunk is correct only if a gold chunk has the same start, end and type.
All three are fractions in [0, 1] (conlleval prints percentages); an undefined ratio is 0.0.
"""

from __future__ import annotations

from collections.abc import Sequence


def _split_tag(tag: str, sentence: int, position: int) -> tuple[str, str]:
    """("B"|"I"|"O", type) of one tag; anything else is an error."""
    if tag == "O":
        return "O", ""
    prefix, dash, kind = tag.partition("-")
    if prefix not in ("B", "I") or not dash or not kind:
        raise ValueError(
            f"sentence {sentence} position {position}: expected a tag 'O', "
            f"'B-TYPE' or 'I-TYPE', got {tag!r}"
        )
    return prefix, kind


def tag_spans(tags: Sequence[str], sentence: int = 0) -> list[tuple[str, int, int]]:
    """Chunks of one tag sequence as (type, start, end), end exclusive, in order.

    >>> tag_spans(["I-PER", "I-PER", "B-PER", "O", "I-LOC"])
    [('PER', 0, 2), ('PER', 2, 3), ('LOC', 4, 5)]
    """
    spans: list[tuple[str, int, int]] = []
    start, open_kind = -1, ""
    for position, tag in enumerate(tags):
        prefix, kind = _split_tag(tag, sentence, position)
        if open_kind and (prefix != "I" or kind != open_kind):
            spans.append((open_kind, start, position))
            open_kind = ""
        if prefix != "O" and not open_kind:
            start, open_kind = position, kind
    if open_kind:
        spans.append((open_kind, start, len(tags)))
    return spans


def iob1_to_iob2(tags: Sequence[str]) -> list[str]:
    """The same chunks in IOB2: every chunk opens with B-TYPE, continues with I-TYPE.

    >>> iob1_to_iob2(["I-PER", "I-PER", "B-PER", "O", "I-LOC"])
    ['B-PER', 'I-PER', 'B-PER', 'O', 'B-LOC']
    """
    out = ["O"] * len(tags)
    for kind, start, end in tag_spans(tags):
        out[start] = f"B-{kind}"
        out[start + 1 : end] = [f"I-{kind}"] * (end - start - 1)
    return out


def span_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, float]:
    """Micro precision, recall and F1 of entity chunks (keys "precision", "recall", "span_f1").

    `gold` and `pred` are lists of tag sequences, one per sentence, pairwise of equal length.
    """
    if len(gold) != len(pred):
        raise ValueError(
            f"span_scores: expected as many predicted as gold sentences, "
            f"got {len(pred)} and {len(gold)}"
        )
    if len(gold) == 0:
        raise ValueError("span_scores: expected at least one sentence, got none")
    n_gold = n_pred = n_correct = 0
    for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
        if isinstance(g, str) or isinstance(p, str):
            raise TypeError(f"span_scores: sentence {i}: expected a sequence of tags, got a str")
        if len(g) != len(p):
            raise ValueError(
                f"span_scores: sentence {i}: expected {len(g)} predicted tags "
                f"(one per gold tag), got {len(p)}"
            )
        gold_spans = set(tag_spans(g, i))
        pred_spans = set(tag_spans(p, i))
        n_gold += len(gold_spans)
        n_pred += len(pred_spans)
        n_correct += len(gold_spans & pred_spans)
    precision = n_correct / n_pred if n_pred else 0.0
    recall = n_correct / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"span_f1": f1, "precision": precision, "recall": recall}
