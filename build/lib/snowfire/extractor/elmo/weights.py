"""Reading the biLM weights HDF5 (bilm-tf / AllenNLP layout), every key and shape checked.

All arrays are float32 in TensorFlow orientation (`y = x @ W + b`). With F = sum of filter
counts, P = projection_dim, C = cell size, d = 0 forward / 1 backward, l = layer:

    char_embed                                   (n_characters - 1, char_dim)  no padding row
    CNN/W_cnn_{i}, CNN/b_cnn_{i}                 (1, width_i, char_dim, n_i), (n_i,)
    CNN_high_{k}/W_carry|W_transform             (F, F), with b_carry|b_transform (F,)
    CNN_proj/W_proj, CNN_proj/b_proj             (F, P), (P,)
    RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_0   (P + P, 4C)  rows: input, then state
                                             .../B     (4C,)      gate blocks i, j, f, o
                                             .../W_P_0 (C, P)
Keys the biLM does not use (e.g. softmax weights) are ignored.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .options import ElmoFileError, ElmoOptions


def lstm_prefix(direction: int, layer: int) -> str:
    """HDF5 group of one LSTM cell; direction 0 is forward, 1 backward."""
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"


def expected_shapes(opt: ElmoOptions) -> dict[str, tuple[int, ...]]:
    """Every key the biLM reads, with the shape the options imply."""
    f, p, c = opt.n_filters, opt.projection_dim, opt.cell_dim
    shapes: dict[str, tuple[int, ...]] = {"char_embed": (opt.n_characters - 1, opt.char_dim)}
    for i, (width, n) in enumerate(opt.filters):
        shapes[f"CNN/W_cnn_{i}"] = (1, width, opt.char_dim, n)
        shapes[f"CNN/b_cnn_{i}"] = (n,)
    for k in range(opt.n_highway):
        for part in ("carry", "transform"):
            shapes[f"CNN_high_{k}/W_{part}"] = (f, f)
            shapes[f"CNN_high_{k}/b_{part}"] = (f,)
    if f != p:  # bilm-tf skips the projection when the CNN is already P wide
        shapes["CNN_proj/W_proj"] = (f, p)
        shapes["CNN_proj/b_proj"] = (p,)
    for d in range(2):
        for layer in range(opt.n_layers):
            prefix = lstm_prefix(d, layer)
            shapes[f"{prefix}/W_0"] = (p + p, 4 * c)
            shapes[f"{prefix}/B"] = (4 * c,)
            shapes[f"{prefix}/W_P_0"] = (c, p)
    return shapes


def read_weights(path: str | Path, opt: ElmoOptions) -> dict[str, np.ndarray]:
    """Load every weight the options call for, as float32 arrays keyed like the file.

    Raises `ElmoFileError` naming the file and key when a key is missing, is not a dataset,
    or has another shape than the options imply (expected and found shapes in the message).
    """
    import h5py

    path = Path(path)
    if not path.is_file():
        raise ElmoFileError(f"{path}: weight file not found")
    out: dict[str, np.ndarray] = {}
    try:
        fin = h5py.File(path, "r")
    except OSError as e:
        raise ElmoFileError(f"{path}: not a readable HDF5 file ({e})") from e
    with fin:
        for key, shape in expected_shapes(opt).items():
            if key not in fin:
                raise ElmoFileError(f"{path}: missing weight '{key}' (expected shape {shape})")
            ds = fin[key]
            if not isinstance(ds, h5py.Dataset):
                raise ElmoFileError(f"{path}: '{key}' is a group, expected a dataset {shape}")
            if tuple(ds.shape) != shape:
                raise ElmoFileError(
                    f"{path}: weight '{key}' has shape {tuple(ds.shape)}, expected {shape}"
                )
            if ds.dtype.kind != "f":
                raise ElmoFileError(f"{path}: weight '{key}' has dtype {ds.dtype}, expected float")
            out[key] = np.asarray(ds[...], dtype=np.float32)
    return out
