"""The contract every encoder (BERT-family, ELMo) fulfils for the extractor.

Dimension glossary (used in shape comments across the project):
    B batch, L layers (embeddings + every layer), T words, S subword pieces (tokens),
    D hidden size, K tags / classes.

An encoder turns one `TextInput` (a list of words, or a pair of word lists) into the
activations of all L layers for every token it produces, plus the token -> word alignment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from snowfire.tasks import text_fault

#: Bump when the extraction procedure (tokenising, windows, stitching, the encoders' forward
#: passes) could store other bytes for the same model and text. Every encoder identity
#: carries it, so it is part of every content key.
EXTRACTOR_VERSION = 1


@dataclass(frozen=True)
class TextInput:
    """What an encoder reads: whitespace words of one text, or of a pair of texts."""

    words_a: tuple[str, ...]
    words_b: tuple[str, ...] | None = None

    @property
    def is_pair(self) -> bool:
        return self.words_b is not None

    def payload(self) -> dict[str, Any]:
        """Canonical JSON-able content; the cache key hashes this (never the raw string)."""
        return {"a": list(self.words_a), "b": None if self.words_b is None else list(self.words_b)}


def check_texts(texts: Sequence[TextInput]) -> None:
    """The text rule (tasks/text_rule.py) on every word before any is keyed, encoded or stored:
    ValueError naming the text (0-based), its side, the word and the character. A text that
    breaks it cannot be hashed into a content key (a surrogate) or would be stored as something
    else than it is (a NUL the tokenizer drops)."""
    for i, text in enumerate(texts):
        for side, words in (("a", text.words_a), ("b", text.words_b or ())):
            if text_fault(" ".join(words)) is None:
                continue
            for j, word in enumerate(words):
                fault = text_fault(word)
                if fault:
                    raise ValueError(f"text {i}, words_{side}[{j}]: {fault}")


@dataclass
class Encoded:
    """All-layer activations of one example.

    features:   (S, L, D) float32, one row per token the encoder produced
    word_ids:   (S,) int32, index of the word (within its segment) each token belongs to;
                -1 for special tokens ([CLS], [SEP], ...)
    type_ids:   (S,) int8, 0 for tokens of the first text, 1 for the second of a pair
    pair_start: token index where the second text's tokens begin, -1 for a single text
    """

    features: np.ndarray
    word_ids: np.ndarray
    type_ids: np.ndarray
    pair_start: int = -1

    def __post_init__(self) -> None:
        s = self.features.shape[0]
        if self.features.ndim != 3 or self.word_ids.shape != (s,) or self.type_ids.shape != (s,):
            raise ValueError(
                f"Encoded: expected features (S, L, D), word_ids (S,), type_ids (S,); got "
                f"{self.features.shape}, {self.word_ids.shape}, {self.type_ids.shape}"
            )


@dataclass(frozen=True)
class Prepared:
    """A tokenised example, ready to batch: `length` is what the token budget counts."""

    index: int  # position in the caller's list
    length: int
    data: Any = field(compare=False, repr=False)


class Encoder(Protocol):
    """What the extractor needs from an encoder.

    identity: JSON-able dict of everything that can change the output bytes (name, spec,
        revision, weights_sha256, tokenizer_sha256, pair_encoding, policies such as ELMo's
        state policy). The cache key of an example hashes it with the example's payload.
    num_layers: L, including the embedding layer.
    dim: D.
    ordered: True when batches must follow input order with a fixed number of examples
        (stateful ELMo); False allows length bucketing by token budget.
    """

    identity: dict[str, Any]
    num_layers: int
    dim: int
    ordered: bool

    def prepare(self, index: int, text: TextInput) -> Prepared: ...

    def encode(self, batch: list[Prepared]) -> list[Encoded]: ...
