"""Writing a (fine-tuned) `ElmoBiLM` back to the files it was read from: the options JSON and
the weights HDF5 in the bilm-tf / AllenNLP layout, TensorFlow orientation (`y = x @ W + b`).

The inverse of `CharCNN.load_tf` / `ElmoLstm.load_tf` (see `extractor/elmo/weights.py` for
the keys): torch Linear weights (out, in) are transposed to (in, out); Conv1d (n, E, width)
becomes (1, width, E, n); the LSTM's input and state matrices are stacked back into
`W_0` (P + P, 4C); the char embedding loses its all-zero padding row 0. Reading the files with
`ElmoBiLM.from_files` gives back the same parameters bit for bit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from snowfire.extractor import ElmoBiLM

OPTIONS_FILE = "options.json"
WEIGHTS_FILE = "weights.hdf5"


def _np(t) -> np.ndarray:
    return np.ascontiguousarray(t.detach().float().cpu().numpy())


def tf_arrays(bilm: ElmoBiLM) -> dict[str, np.ndarray]:
    """Every weight of the biLM as the HDF5 file stores it, keyed like the file."""
    from snowfire.extractor import expected_shapes

    cnn = bilm.token_embedder
    out = {"char_embed": _np(cnn.char_embedding.weight[1:])}  # (n_characters - 1, E)
    for i, conv in enumerate(cnn.convs):
        out[f"CNN/W_cnn_{i}"] = _np(conv.weight.permute(2, 1, 0).unsqueeze(0))  # (1, w, E, n)
        out[f"CNN/b_cnn_{i}"] = _np(conv.bias)
    for k, (carry, transform) in enumerate(
        zip(cnn.highway_carry, cnn.highway_transform, strict=True)
    ):
        out[f"CNN_high_{k}/W_carry"] = _np(carry.weight.T)  # (F, F)
        out[f"CNN_high_{k}/b_carry"] = _np(carry.bias)
        out[f"CNN_high_{k}/W_transform"] = _np(transform.weight.T)
        out[f"CNN_high_{k}/b_transform"] = _np(transform.bias)
    if cnn.projection is not None:
        out["CNN_proj/W_proj"] = _np(cnn.projection.weight.T)  # (F, P)
        out["CNN_proj/b_proj"] = _np(cnn.projection.bias)
    lstm = bilm.lstm
    for d, stack in enumerate((lstm.forward_layers, lstm.backward_layers)):
        for layer, cell in enumerate(stack):
            prefix = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
            stacked = np.concatenate(
                [_np(cell.input_linearity.weight), _np(cell.state_linearity.weight)], axis=1
            )  # (4C, in + P)
            out[f"{prefix}/W_0"] = np.ascontiguousarray(stacked.T)  # (in + P, 4C)
            out[f"{prefix}/B"] = _np(cell.input_linearity.bias)  # (4C,)
            out[f"{prefix}/W_P_0"] = _np(cell.state_projection.weight.T)  # (C, P)
    expected = expected_shapes(bilm.options)
    assert {k: v.shape for k, v in out.items()} == expected, "layout differs from the reader's"
    return out


def save_bilm(bilm: ElmoBiLM, folder: str | os.PathLike) -> tuple[Path, Path]:
    """Write `options.json` and `weights.hdf5` into `folder` (created); returns both paths.

    `extractor.load_encoder("elmo:FOLDER")` loads them (it looks for one `*options*.json` and
    one `*weights*.hdf5`). Each file is written whole or not at all (cache.atomic_write).
    """
    import h5py

    from snowfire.cache import atomic_write

    def write_weights(f) -> None:
        with h5py.File(f, "w") as h5:
            for key, array in tf_arrays(bilm).items():
                h5.create_dataset(key, data=array.astype(np.float32))

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    options, weights = folder / OPTIONS_FILE, folder / WEIGHTS_FILE
    atomic_write(options, json.dumps(bilm.options.to_json(), indent=2))
    atomic_write(weights, write_weights)
    return options, weights
