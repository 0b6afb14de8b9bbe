"""Text -> all-layer activations of a frozen encoder, written once into the store."""

from .base import EXTRACTOR_VERSION, Encoded, Encoder, Prepared, TextInput
from .encoders import MINILM_NAME, encoder_name, load_encoder, minilm_dir
from .inputs import InputSet, gather_inputs, run_extract
from .options import ExtractOptions, encoder_family
from .run import ExtractConfig, extract

__all__ = [
    "EXTRACTOR_VERSION",
    "MINILM_NAME",
    "Encoded",
    "InputSet",
    "Encoder",
    "ExtractConfig",
    "ExtractOptions",
    "encoder_family",
    "Prepared",
    "TextInput",
    "encoder_name",
    "extract",
    "gather_inputs",
    "run_extract",
    "load_encoder",
    "minilm_dir",
]
