"""ELMo character ids: the pins of AllenNLP's elmo_indexer_test and bilm-tf's batcher."""

import pytest
import torch

from snowfire.extractor.elmo import batch_to_ids, word_to_ids

BOS = [259, 257, 260] + [261] * 47
EOS = [259, 258, 260] + [261] * 47


def test_sentence_markers_and_literal_tokens():
    assert word_to_ids("<S>") == BOS
    assert word_to_ids("</S>") == EOS


def test_utf8_bytes_shifted_by_one():
    assert word_to_ids(chr(256) + "t") == [259, 197, 129, 117, 260] + [261] * 45
    assert word_to_ids("a") == [259, 98, 260] + [261] * 47


def test_long_token_cut_to_48_bytes():
    word = "abcdefghij" * 6  # 60 characters
    ids = word_to_ids(word)
    assert len(ids) == 50
    assert ids == [259] + [ord(ch) + 1 for ch in word[:48]] + [260]


def test_cut_inside_a_multibyte_character_keeps_bytes():
    word = "a" + "é" * 30  # 61 UTF-8 bytes; the 48th byte is half of an "é"
    raw = word.encode("utf-8")[:48]
    assert word_to_ids(word) == [259] + [b + 1 for b in raw] + [260]


def test_undecodable_characters_dropped():
    assert word_to_ids("a\ud800b") == word_to_ids("ab")


def test_batch_adds_boundaries_and_zero_padding():
    ids = batch_to_ids([["a", "b", "c"], ["d"]])
    assert ids.shape == (2, 5, 50) and ids.dtype == torch.long
    assert ids[0, 0].tolist() == BOS and ids[0, 4].tolist() == EOS
    assert ids[1, 0].tolist() == BOS and ids[1, 2].tolist() == EOS
    assert ids[1, 3:].eq(0).all()  # padding tokens are 50 zeros
    assert ids[1, 1].tolist() == word_to_ids("d")


def test_bad_inputs():
    with pytest.raises(TypeError, match="expected a list of token lists, got a str"):
        batch_to_ids("a b c")
    with pytest.raises(TypeError, match="expected a str token, got int"):
        word_to_ids(3)
    with pytest.raises(ValueError, match="expected at least one sentence"):
        batch_to_ids([])
