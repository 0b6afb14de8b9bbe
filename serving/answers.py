"""What one prediction says, per task kind, as the service sends it and `snowfire.Predictor`
returns it:

    classification  {"label": "1", "probabilities": {"0": 0.03, "1": 0.97}}
    regression      {"score": 3.84}
    tagging         {"tags": ["B-PER", "I-PER", "O"],
                     "spans": [{"type": "PER", "start": 0, "end": 2, "text": "Ada Lovelace"}]}

The label, score and tags are `tasks.decode`'s, the values `snowfire predict` writes; the
probabilities are softmax(z) of the logits the label is the argmax of; spans are conlleval's
chunks of the tags (tasks.tag_spans, end exclusive), given when the tags are BIO (O, B-X, I-X).
"""

from __future__ import annotations

from typing import Any

from snowfire.tasks import Example, decode, tag_spans


def answers(spec, examples: list[Example], preds: list, probs: list | None) -> list[dict[str, Any]]:
    """One answer per example (see the module docstring)."""
    decoded = decode(spec, preds)
    if spec.kind == "regression":
        return [{"score": score} for score in decoded]
    if spec.kind == "classification":
        labels = list(spec.labels)
        rows = probs or [None] * len(decoded)
        return [
            {"label": label}
            | ({} if row is None else {"probabilities": dict(zip(labels, row, strict=True))})
            for label, row in zip(decoded, rows, strict=True)
        ]
    out = []
    for example, tags in zip(examples, decoded, strict=True):
        answer: dict[str, Any] = {"tags": tags}
        spans = _spans(tags)
        if spans is not None:
            answer["spans"] = [
                {"type": kind, "start": s, "end": e, "text": " ".join(example.words_a[s:e])}
                for kind, s, e in spans
            ]
        out.append(answer)
    return out


def _spans(tags: list[str]) -> list[tuple[str, int, int]] | None:
    """conlleval's chunks; None when the tags are not BIO (a POS tagger's, say)."""
    try:
        return tag_spans(tags)
    except ValueError:
        return None
