"""Export a feature set in the layout of AllenNLP's `allennlp elmo --all` HDF5 output.

One dataset per sentence, named by its line index ("0", "1", ...), shape (L, T, D) float32,
plus a `sentence_to_index` dataset holding a JSON string {sentence: index}. Existing probing
tools read it unchanged, whichever encoder made the features.

Word-piece encoders give several tokens per word: `words="first"` keeps each word's first
piece (special tokens dropped), `"mean"` averages its pieces, `"pieces"` keeps every token as
stored. For ELMo tokens are words, so all three give the same arrays.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .store import Store


def _pool_words(feats: np.ndarray, word_ids: np.ndarray, type_ids: np.ndarray, how: str):
    """(S, L, D) tokens -> (T, L, D) words, segment a's words then b's."""
    if how == "pieces":
        return feats
    rows = []
    for seg in (0, 1):
        in_seg = (type_ids == seg) & (word_ids >= 0)
        for w in np.unique(word_ids[in_seg]):
            pieces = feats[in_seg & (word_ids == w)]  # (pieces, L, D)
            rows.append(pieces[0] if how == "first" else pieces.mean(axis=0))
    return np.stack(rows)


def export_hdf5(
    store: Store, fs_id: str, out: str | Path, words: str = "first", batch: int = 256
) -> int:
    """Write feature set `fs_id` to `out`; return the number of sentences written."""
    import h5py

    if words not in ("first", "mean", "pieces"):
        raise ValueError(f"words must be 'first', 'mean' or 'pieces', got {words!r}")
    info = store.get_featureset(fs_id)
    texts = store.featureset_texts(fs_id)
    sentence_to_index: dict[str, str] = {}
    out = Path(out)
    tmp = out.with_name(f".tmp-{out.name}")
    with h5py.File(tmp, "w") as f:
        for start in range(0, info.num_examples, batch):
            idx = list(range(start, min(start + batch, info.num_examples)))
            eb = store.read(fs_id, indices=idx)
            for j, i in enumerate(idx):
                s, e = eb.offsets[j], eb.offsets[j + 1]
                x = _pool_words(
                    eb.features[s:e].astype(np.float32), eb.word_ids[s:e], eb.type_ids[s:e], words
                )  # (T, L, D)
                f.create_dataset(str(i), data=np.ascontiguousarray(x.transpose(1, 0, 2)))
                words_i = texts[i]["a"] + (texts[i]["b"] or [])
                sentence_to_index.setdefault(" ".join(words_i), str(i))
        f.create_dataset(
            "sentence_to_index",
            data=np.array([json.dumps(sentence_to_index)], dtype=h5py.string_dtype()),
        )
        f.attrs["snowfire_featureset"] = json.dumps(info.summary())
    tmp.replace(out)
    return info.num_examples
