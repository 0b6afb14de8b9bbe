"""Text -> all-layer activations of a frozen encoder, written once into the store."""

from .base import Encoded, Encoder, Prepared, TextInput
from .encoders import MINILM_NAME, encoder_name, load_encoder, minilm_dir
from .run import EXTRACTOR_VERSION, ExtractConfig, extract

__all__ = [
    "EXTRACTOR_VERSION",
    "MINILM_NAME",
    "Encoded",
    "Encoder",
    "ExtractConfig",
    "Prepared",
    "TextInput",
    "encoder_name",
    "extract",
    "load_encoder",
    "minilm_dir",
]
