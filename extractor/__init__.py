"""Text -> all-layer activations of a frozen encoder, written once into the store."""

from .base import EXTRACTOR_VERSION, Encoded, Encoder, Prepared, TextInput
from .config import (
    BATCH_SIZE,
    DTYPE,
    ENCODER_FORMS,
    PAIR_ENCODINGS,
    STATE_POLICIES,
    TOKEN_BUDGET,
    ExtractConfig,
    encoder_family,
)
from .embed import EmbedWorker
from .encoders import MINILM_NAME, encoder_name, load_encoder, minilm_dir
from .inputs import InputSet, gather_inputs, run_extract
from .run import encode_segment, extract

__all__ = [
    "BATCH_SIZE",
    "DTYPE",
    "ENCODER_FORMS",
    "EXTRACTOR_VERSION",
    "MINILM_NAME",
    "PAIR_ENCODINGS",
    "STATE_POLICIES",
    "TOKEN_BUDGET",
    "EmbedWorker",
    "Encoded",
    "Encoder",
    "ExtractConfig",
    "InputSet",
    "Prepared",
    "TextInput",
    "encode_segment",
    "encoder_family",
    "encoder_name",
    "extract",
    "gather_inputs",
    "load_encoder",
    "minilm_dir",
    "run_extract",
]
