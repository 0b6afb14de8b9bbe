"""Text -> all-layer activations of a frozen encoder, written once into the store."""

from .base import Encoded, Encoder, Prepared, TextInput
from .encoders import MINILM_NAME, encoder_name, load_encoder, minilm_dir
from .inputs import InputSet, gather_inputs, run_extract
from .run import EXTRACTOR_VERSION, ExtractConfig, extract

__all__ = [
    "EXTRACTOR_VERSION",
    "MINILM_NAME",
    "Encoded",
    "InputSet",
    "Encoder",
    "ExtractConfig",
    "Prepared",
    "TextInput",
    "encoder_name",
    "extract",
    "gather_inputs",
    "run_extract",
    "load_encoder",
    "minilm_dir",
]
