"""BERT-family encoders from Hugging Face transformers: all hidden states for every word piece.

Pairs are encoded jointly (`[CLS] a [SEP] b [SEP]`, the paper's choice for BERT) or separately
(`[CLS] a [SEP]` and `[CLS] b [SEP]`, concatenated). Inputs longer than the model's limit are
split into overlapping windows and stitched (see windows.py), never truncated.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from .base import EXTRACTOR_VERSION, Encoded, Prepared, TextInput
from .config import check_pair_encoding
from .device import default_device
from .windows import plan_windows, stitch

log = logging.getLogger(__name__)

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack")
_TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
)


class HFEncoderError(RuntimeError):
    """A Hugging Face model could not be loaded."""


def resolve_model_dir(name_or_dir: str, revision: str | None = None) -> Path:
    """A local model folder, or a hub name downloaded (only when online) to the local cache."""
    path = Path(name_or_dir).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise HFEncoderError(f"{path} is a folder but holds no config.json: not a HF model")
        return path
    if path.suffix or name_or_dir.startswith((".", "/", "~")):
        raise HFEncoderError(f"model folder {name_or_dir!r} does not exist")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name_or_dir, revision=revision))
    except Exception as err:  # offline, unknown repo, auth: one clear message
        raise HFEncoderError(
            f"could not fetch {name_or_dir!r} from the Hugging Face hub "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}). "
            "The hub is unreachable or the name is wrong. Offline, pass a local model folder: "
            "--encoder hf:/path/to/model, or use the bundled --encoder minilm."
        ) from err


def _hash_files(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths, key=lambda p: p.name):
        h.update(p.name.encode() + b"\0")
        with open(p, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
    return h.hexdigest()


def weights_sha256(model_dir: str | os.PathLike) -> str:
    """The hash of a model folder's weight files (what `hf_identity` records as
    `weights_sha256`), without loading the model."""
    return _hash_files([p for p in Path(model_dir).iterdir() if p.suffix in _WEIGHT_SUFFIXES])


def hf_identity(
    model_dir: Path,
    config,
    *,
    name: str,
    spec: str,
    revision: str | None = None,
    pair_encoding: str | None = None,
    max_length: int | None = None,
    precision: str = "float32",
) -> dict[str, Any]:
    """What a BERT-family encoder is, for content keys and run records: the hashes of its
    weight files, tokenizer files and config.json (never its path), how pairs are encoded, the
    window length, the precision policy ("float32", or "float16-autocast" on a GPU) and the
    extractor version. `name` and `spec` are labels (cache.keys.LABEL_FIELDS), not hashed."""
    model_dir = Path(model_dir)
    tok_files = [model_dir / f for f in _TOKENIZER_FILES if (model_dir / f).is_file()]
    return {
        "kind": "hf",
        "name": name,
        "spec": spec,
        "revision": revision or getattr(config, "_commit_hash", None),
        "model_type": config.model_type,
        "weights_sha256": weights_sha256(model_dir),
        "tokenizer_sha256": _hash_files(tok_files),
        "config_sha256": _hash_files([model_dir / "config.json"]),
        "num_layers": config.num_hidden_layers + 1,
        "dim": config.hidden_size,
        "pair_encoding": pair_encoding,
        "max_length": max_length,
        "precision": precision,
        "extractor_version": EXTRACTOR_VERSION,
    }


class HFEncoder:
    """An encoder over any transformers `AutoModel` that returns hidden states."""

    ordered = False

    def __init__(
        self,
        model_dir: str | os.PathLike,
        *,
        name: str,
        spec: str,
        pair_encoding: str = "joint",
        max_length: int | None = None,
        device: str | None = None,
        revision: str | None = None,
    ):
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        check_pair_encoding(pair_encoding)
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        model_dir = Path(model_dir)
        config = AutoConfig.from_pretrained(model_dir)
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir, add_prefix_space=True)
        if not self.tokenizer.is_fast:
            raise HFEncoderError(f"{model_dir}: a fast tokenizer is needed for word alignment")
        self.model = AutoModel.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.device = default_device(device)
        self.model.to(self.device)
        limit = getattr(config, "max_position_embeddings", 512)
        if getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
            limit -= 2  # position ids start after the padding index
        self.max_length = min(max_length or limit, limit)
        self.pair_encoding = pair_encoding
        self.num_layers = config.num_hidden_layers + 1
        self.dim = config.hidden_size
        self.uses_types = getattr(config, "type_vocab_size", 0) > 1
        self.identity = hf_identity(
            model_dir,
            config,
            name=name,
            spec=spec,
            revision=revision,
            pair_encoding=pair_encoding,
            max_length=self.max_length,
            precision="float16-autocast" if self.device.type == "cuda" else "float32",
        )

    # ------------------------------------------------------------------ tokenising
    def _sequence(self, words_a, words_b) -> dict[str, Any]:
        enc = self.tokenizer(
            list(words_a),
            None if words_b is None else list(words_b),
            is_split_into_words=True,
            add_special_tokens=True,
            verbose=False,
        )
        ids = np.asarray(enc["input_ids"], dtype=np.int64)
        seq_ids = enc.sequence_ids()
        word_ids = np.array([-1 if w is None else w for w in enc.word_ids()], dtype=np.int32)
        if "token_type_ids" in enc:
            types = np.asarray(enc["token_type_ids"], dtype=np.int8)
        else:  # derive: specials take the segment of the token before them
            types, seg = np.zeros(len(ids), dtype=np.int8), 0
            for i, s in enumerate(seq_ids):
                seg = s if s is not None else seg
                types[i] = seg
        if len(ids) < 2 or word_ids[0] != -1 or word_ids[-1] != -1:
            raise HFEncoderError("expected the tokenizer to wrap inputs in special tokens")
        spans = plan_windows(len(ids) - 2, self.max_length)
        return {
            "ids": ids,
            "types": types,
            "word_ids": word_ids,
            "seq_ids": seq_ids,
            "spans": spans,
        }

    def prepare(self, index: int, text: TextInput) -> Prepared:
        if not text.words_a or (text.words_b is not None and not text.words_b):
            raise ValueError(f"example {index}: empty text")
        if text.words_b is None or self.pair_encoding == "joint":
            seqs = [self._sequence(text.words_a, text.words_b)]
        else:
            seqs = [self._sequence(text.words_a, None), self._sequence(text.words_b, None)]
        length = sum(e - s + 2 for seq in seqs for s, e in seq["spans"])
        return Prepared(index=index, length=length, data=(seqs, text.is_pair))

    # ------------------------------------------------------------------ encoding
    def encode(self, batch: list[Prepared]) -> list[Encoded]:
        import torch

        rows = []  # (ids, types) per window
        for item in batch:
            for seq in item.data[0]:
                ids, types = seq["ids"], seq["types"]
                for s, e in seq["spans"]:
                    rows.append(
                        (
                            np.concatenate([ids[:1], ids[1 + s : 1 + e], ids[-1:]]),
                            np.concatenate([types[:1], types[1 + s : 1 + e], types[-1:]]),
                        )
                    )
        width = max(len(r[0]) for r in rows)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)  # (B, S)
        type_ids = torch.zeros((len(rows), width), dtype=torch.long)  # (B, S)
        mask = torch.zeros((len(rows), width), dtype=torch.long)  # (B, S)
        for r, (ids, types) in enumerate(rows):
            input_ids[r, : len(ids)] = torch.from_numpy(ids)
            type_ids[r, : len(ids)] = torch.from_numpy(types.astype(np.int64))
            mask[r, : len(ids)] = 1
        inputs = {"input_ids": input_ids, "attention_mask": mask}
        if self.uses_types:
            inputs["token_type_ids"] = type_ids
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        with (
            torch.inference_mode(),
            torch.autocast("cuda", dtype=torch.float16, enabled=self.device.type == "cuda"),
        ):
            out = self.model(**inputs, output_hidden_states=True)
        states = torch.stack(out.hidden_states, dim=2).float().cpu().numpy()  # (B, S, L, D)
        results, r = [], 0
        for item in batch:
            seqs, is_pair = item.data
            feats, words, types = [], [], []
            for seq in seqs:
                n = len(seq["spans"])
                windows = [states[r + w, : len(rows[r + w][0])] for w in range(n)]
                r += n
                feats.append(stitch(windows, seq["spans"]))  # (S_seq, L, D)
                words.append(seq["word_ids"])
                types.append(seq["types"])
            if len(seqs) == 2:  # separate pair encoding: b's tokens are segment 1
                types[1] = np.ones_like(types[1])
                pair_start = len(words[0])
            elif is_pair:  # b's first token; none when its words give none (a lone U+0012,
                # which the tokenizer drops): where it would start, at the closing special token
                seq_ids = seqs[0]["seq_ids"]
                pair_start = seq_ids.index(1) if 1 in seq_ids else len(seq_ids) - 1
            else:
                pair_start = -1
            results.append(
                Encoded(
                    features=np.concatenate(feats, axis=0),
                    word_ids=np.concatenate(words),
                    type_ids=np.concatenate(types).astype(np.int8),
                    pair_start=pair_start,
                )
            )
        return results
