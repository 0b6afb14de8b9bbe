"""The tiny random BERT of the tests (2 layers, 32 wide, a WordPiece vocabulary of WORDS), built
the same way by the `tiny_bert_dir` fixture and by tests/fixtures/make_format1_store.py, so a
store made by the script is made by the fixture's encoder (the same weights' bytes)."""

from __future__ import annotations

from pathlib import Path

from . import WORDS


def build_tiny_bert(root: Path, seed: int = 0) -> Path:
    """Save the tiny BERT (weights from torch seed `seed`) and its tokenizer in `root`."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + ["##s", "##ing", "##ed"]
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
    tok.save_pretrained(root)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).eval().save_pretrained(root)
    return root
