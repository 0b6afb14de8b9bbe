"""ELMo's character ids: every token becomes 50 ints in 0..261 (Peters et al., 2018).

A token is its UTF-8 bytes (0..255) framed by begin-of-word / end-of-word markers and padded
with a padding symbol; sentence boundaries are tokens made of one reserved symbol:

    word   -> [BOW, b_1, ..., b_k, EOW, PAD, ..., PAD]    k <= max_chars - 2 bytes kept
    <S>    -> [BOW, BOS, EOW, PAD, ...]
    </S>   -> [BOW, EOS, EOW, PAD, ...]

Every id is then shifted by +1 so that 0 means "no token": a padding position is all zeros,
and the token mask is `any(id > 0)`. This is the scheme of bilm-tf's `UnicodeCharsVocabulary`
and AllenNLP's `ELMoCharacterMapper`; the released weights depend on it exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

MAX_CHARS = 50  # characters per token in every released model
BOS_CHAR = 256  # begin of sentence
EOS_CHAR = 257  # end of sentence
BOW_CHAR = 258  # begin of word
EOW_CHAR = 259  # end of word
PAD_CHAR = 260  # padding inside a token
BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"


def word_to_ids(word: str, max_chars: int = MAX_CHARS) -> list[int]:
    """The `max_chars` shifted character ids of one token (all > 0).

    Undecodable characters (lone surrogates) are dropped; a token longer than
    `max_chars - 2` UTF-8 bytes is cut to that many bytes, even inside a multi-byte character,
    as the reference does. The literal tokens `<S>` and `</S>` map to the sentence markers.
    """
    if not isinstance(word, str):
        raise TypeError(f"word_to_ids: expected a str token, got {type(word).__name__}")
    if max_chars < 3:
        raise ValueError(f"word_to_ids: max_chars must be >= 3, got {max_chars}")
    if word == BOS_TOKEN:
        body = [BOS_CHAR]
    elif word == EOS_TOKEN:
        body = [EOS_CHAR]
    else:
        body = list(word.encode("utf-8", "ignore")[: max_chars - 2])
    ids = [BOW_CHAR, *body, EOW_CHAR] + [PAD_CHAR] * (max_chars - 2 - len(body))
    return [i + 1 for i in ids]


def sentence_to_ids(words: Sequence[str], max_chars: int = MAX_CHARS) -> torch.Tensor:
    """Char ids of `<S> words </S>`: LongTensor (T + 2, max_chars)."""
    if isinstance(words, str):
        raise TypeError("sentence_to_ids: expected a sequence of tokens, got a str")
    tokens = [BOS_TOKEN, *words, EOS_TOKEN]
    return torch.tensor([word_to_ids(w, max_chars) for w in tokens], dtype=torch.long)


def pad_ids(rows: Sequence[torch.Tensor]) -> torch.Tensor:
    """Stack per-sentence char ids (T_i + 2, C) into (B, T + 2, C), zero rows as padding."""
    if not rows:
        raise ValueError("pad_ids: expected at least one sentence, got none")
    n_chars = rows[0].shape[1]
    t_max = max(r.shape[0] for r in rows)
    out = torch.zeros(len(rows), t_max, n_chars, dtype=torch.long)  # (B, T+2, C)
    for b, r in enumerate(rows):
        out[b, : r.shape[0]] = r
    return out


def batch_to_ids(sentences: Sequence[Sequence[str]], max_chars: int = MAX_CHARS) -> torch.Tensor:
    """Char ids of a batch of tokenised sentences, `<S>`/`</S>` added: LongTensor (B, T+2, 50).

    T is the longest sentence; shorter sentences are padded with all-zero tokens.
    """
    if isinstance(sentences, str):
        raise TypeError("batch_to_ids: expected a list of token lists, got a str")
    return pad_ids([sentence_to_ids(s, max_chars) for s in sentences])  # (B, T+2, C)
