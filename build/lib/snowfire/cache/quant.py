"""int8 storage: symmetric quantisation with one scale per token and layer.

For the D values x of one token at one layer:

    scale = max|x| / 127          (float32; 0 for an all-zero vector)
    q     = round(x / scale)      int8 in [-127, 127], round half to even (np.rint)
    x'    = q * scale             what a read gives back; |x' - x| <= scale / 2

Why per token (and layer) rather than per channel: an example's stored bytes must depend on
the example alone, because the store keeps each text once per pool whatever feature set lists
it (content keys); a per-channel scale would be fitted on some data set and make the same text
store differently in two sets. The cost: a token with an outlier dimension (BERT-family models
have a few) gets a coarser step for its other dimensions. The measured effect on dev scores is
in docs/int8.md. Storage: D bytes + 4 per token and layer, about 1.01 bytes per value at D=384.
"""

from __future__ import annotations

import numpy as np

LEVELS = 127
#: What the manifest and the pool record about the scheme.
QUANTIZATION = {
    "name": "symmetric-absmax-int8",
    "scale": "one per token and layer: max|x| / 127",
    "scale_dtype": "float32",
    "rounding": "half to even",
}


def quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(..., D) floats -> (..., D) int8 values and (...,) float32 scales."""
    x = np.asarray(x, dtype=np.float32)
    peak = np.max(np.abs(x), axis=-1) if x.shape[-1] else np.zeros(x.shape[:-1], np.float32)
    if not np.all(np.isfinite(peak)):
        raise ValueError("int8 storage: the activations hold NaN or infinity")
    scale = (peak / LEVELS).astype(np.float32)  # (...,)
    safe = np.where(scale > 0, scale, 1).astype(np.float32)
    q = np.rint(x / safe[..., None])
    return np.clip(q, -LEVELS, LEVELS).astype(np.int8), scale


def dequantize(q: np.ndarray, scale: np.ndarray, dtype="float32", out=None) -> np.ndarray:
    """(..., D) int8 and (...,) scales -> (..., D) `dtype` (computed in float32)."""
    if out is None:
        out = np.empty(q.shape, dtype=dtype)
    np.multiply(q, scale[..., None], out=out, dtype=np.float32, casting="unsafe")
    return out
