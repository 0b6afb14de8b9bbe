"""ELMo as an `Encoder` (extractor/base.py): words in, (T, L, 2P) activations out per text.

Each text is one sentence `<S> words </S>` for the biLM; the `<S>`/`</S>` rows are dropped, so
there is one row per word. A pair is encoded one sentence at a time (`pair_encoding:
separate`) and its rows concatenated [a; b], `pair_start = len(a)`.

State policies (see `state.py`): `fixed` (default) starts every sentence from the recorded
warm-up state, so outputs are independent of batching and order (`ordered = False`);
`stateful` reproduces the reference, carrying each row's state from one batch of
`batch_size` examples to the next in input order (`ordered = True`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from ..base import EXTRACTOR_VERSION, Encoded, Prepared, TextInput
from ..config import BATCH_SIZE, STATE_POLICIES
from ..device import default_device
from .bilm import ElmoBiLM
from .chars import pad_ids, sentence_to_ids
from .lstm import LstmState
from .state import CarriedState, broadcast_state, warmup_sha256, warmup_state


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def resolve_elmo_spec(spec: str) -> tuple[Path, Path]:
    """`OPTIONS.json,WEIGHTS.hdf5` or a directory -> (options file, weight file).

    A directory must hold exactly one `.json` whose name contains `options` and one `.hdf5`
    whose name contains `weights`.
    """
    spec = spec.removeprefix("elmo:")
    if "," in spec:
        parts = [Path(p.strip()) for p in spec.split(",")]
        if len(parts) != 2:
            raise ValueError(f"ELMo spec {spec!r}: expected 'OPTIONS.json,WEIGHTS.hdf5'")
        for p in parts:
            if not p.is_file():
                raise ValueError(f"ELMo spec {spec!r}: no file {p}")
        return parts[0], parts[1]
    folder = Path(spec)
    if not folder.is_dir():
        raise ValueError(
            f"ELMo spec {spec!r}: expected 'OPTIONS.json,WEIGHTS.hdf5' or an existing directory"
        )
    options = sorted(p for p in folder.glob("*.json") if "options" in p.name)
    weights = sorted(p for p in folder.glob("*.hdf5") if "weights" in p.name)
    if len(options) != 1 or len(weights) != 1:
        raise ValueError(
            f"ELMo directory {folder}: expected one '*options*.json' and one '*weights*.hdf5', "
            f"found {[p.name for p in options]} and {[p.name for p in weights]}"
        )
    return options[0], weights[0]


def _model_name(options_file: Path) -> str:
    """`elmo_2x4096_512_2048cnn_2xhighway_options.json` -> `elmo_2x4096_..._2xhighway`;
    a plain `options.json` is named after its folder."""
    stem = options_file.stem.removesuffix("_options").removesuffix("options").rstrip("_-.")
    return stem or options_file.resolve().parent.name


class ElmoEncoder:
    """The ELMo biLM behind the extractor's `Encoder` protocol (L = 1 + n_layers, D = 2P)."""

    def __init__(
        self,
        bilm: ElmoBiLM,
        *,
        name: str,
        options_sha256: str,
        weights_sha256: str,
        state: str = "fixed",
        batch_size: int = BATCH_SIZE,
        device: str | None = None,
    ) -> None:
        if state not in STATE_POLICIES:
            raise ValueError(f"ElmoEncoder: state must be one of {STATE_POLICIES}, got {state!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"ElmoEncoder: batch_size must be a positive int, got {batch_size!r}")
        self.device = default_device(device)
        self.bilm = bilm.to(self.device).eval()
        self.state_policy = state
        self.batch_size = batch_size
        self.num_layers = bilm.num_layers
        self.dim = bilm.output_dim
        self.ordered = state == "stateful"
        self.identity: dict[str, Any] = {
            "kind": "elmo",
            "name": name,
            "options_sha256": options_sha256,
            "weights_sha256": weights_sha256,
            "state_policy": state,
            "pair_encoding": "separate",
            "precision": "float32",
            "extractor_version": EXTRACTOR_VERSION,
        }
        if state == "fixed":
            self.identity["warmup_sha256"] = warmup_sha256()
            self._fixed = warmup_state(self.bilm, self.device)  # h (2, n, 1, P), c (2, n, 1, C)
        else:
            self.identity["batch_size"] = batch_size  # the carried state depends on it
            self._carried = CarriedState(self.bilm, self.device)

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        state: str = "fixed",
        batch_size: int = BATCH_SIZE,
        device: str | None = None,
    ) -> ElmoEncoder:
        """Load from `OPTIONS.json,WEIGHTS.hdf5` or a directory holding both."""
        options_file, weight_file = resolve_elmo_spec(spec)
        bilm = ElmoBiLM.from_files(options_file, weight_file)
        return cls(
            bilm,
            name=_model_name(options_file),
            options_sha256=_file_sha256(options_file),
            weights_sha256=_file_sha256(weight_file),
            state=state,
            batch_size=batch_size,
            device=device,
        )

    def reset_state(self) -> None:
        """Stateful policy: start again from zero state (no effect for `fixed`)."""
        if self.state_policy == "stateful":
            self._carried.reset()

    def prepare(self, index: int, text: TextInput) -> Prepared:
        """Char ids of each sentence; raises ValueError naming `index` for an empty one."""
        if not isinstance(text, TextInput):
            raise TypeError(f"example {index}: expected a TextInput, got {type(text).__name__}")
        segments = (text.words_a,) if text.words_b is None else (text.words_a, text.words_b)
        max_chars = self.bilm.options.max_characters_per_token
        ids = []
        for seg, words in zip("ab", segments, strict=False):
            if len(words) == 0:
                raise ValueError(f"example {index}: text {seg} is empty; ELMo needs >= 1 word")
            ids.append(sentence_to_ids(words, max_chars))  # (T+2, C)
        return Prepared(index=index, length=sum(len(i) for i in ids), data=tuple(ids))

    @torch.inference_mode()
    def encode(self, batch: list[Prepared]) -> list[Encoded]:
        """All-layer activations of each prepared example, in the order given.

        Stateful: examples run in input order, `batch_size` rows per biLM call; the b texts of
        pairs run in a second call on the same rows (rows without a b text are padding).
        """
        if self.state_policy == "stateful":
            segments = self._encode_stateful(batch)
        else:
            segments = self._encode_fixed(batch)
        out = []
        for feats in segments:  # feats: list of (T_seg, L, 2P) arrays
            sizes = [f.shape[0] for f in feats]
            out.append(
                Encoded(
                    features=np.concatenate(feats, axis=0),  # (T, L, 2P)
                    word_ids=np.concatenate([np.arange(n, dtype=np.int32) for n in sizes]),
                    type_ids=np.concatenate(
                        [np.full(n, seg, dtype=np.int8) for seg, n in enumerate(sizes)]
                    ),
                    pair_start=sizes[0] if len(sizes) == 2 else -1,
                )
            )
        return out

    def _run(
        self, rows: list[torch.Tensor | None], state: LstmState
    ) -> tuple[list[np.ndarray | None], LstmState]:
        """One biLM call; `None` rows are all padding. Returns per-row (T, L, 2P) and state."""
        c = self.bilm.options.max_characters_per_token
        ids = pad_ids([r if r is not None else torch.zeros(0, c, dtype=torch.long) for r in rows])
        layers, _, new_state = self.bilm(ids.to(self.device), state)  # (L, B, T+2, 2P)
        layers = layers.permute(1, 2, 0, 3).float().cpu().numpy()  # (B, T+2, L, 2P)
        feats = [None if r is None else layers[b, 1 : r.shape[0] - 1] for b, r in enumerate(rows)]
        return feats, new_state

    def _encode_fixed(self, batch: list[Prepared]) -> list[list[np.ndarray]]:
        sentences = [(i, s, ids) for i, p in enumerate(batch) for s, ids in enumerate(p.data)]
        sentences.sort(key=lambda x: x[2].shape[0])  # similar lengths share a call: less padding
        feats: list[list[np.ndarray | None]] = [[None] * len(p.data) for p in batch]
        for start in range(0, len(sentences), self.batch_size):
            chunk = sentences[start : start + self.batch_size]
            state = broadcast_state(self._fixed, len(chunk))
            rows, _ = self._run([ids for _, _, ids in chunk], state)
            for (i, s, _), f in zip(chunk, rows, strict=True):
                feats[i][s] = f
        return cast(list[list[np.ndarray]], feats)  # every slot filled: each sentence ran

    def _encode_stateful(self, batch: list[Prepared]) -> list[list[np.ndarray]]:
        feats: list[list[np.ndarray]] = []
        for start in range(0, len(batch), self.batch_size):
            chunk = batch[start : start + self.batch_size]
            per_segment = []
            for seg in range(max(len(p.data) for p in chunk)):
                rows = [p.data[seg] if seg < len(p.data) else None for p in chunk]
                out, new_state = self._run(rows, self._carried.take(len(chunk)))
                self._carried.put(new_state)
                per_segment.append(out)
            feats.extend(
                [f for f in segs if f is not None] for segs in zip(*per_segment, strict=True)
            )
        return feats
