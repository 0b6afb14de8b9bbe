"""Text -> all-layer activations of a frozen encoder, written once into the store."""

from snowfire.options import lazy_exports

from .base import EXTRACTOR_VERSION, Encoded, Encoder, Prepared, TextInput
from .batching import bucket_batches
from .config import (
    BATCH_SIZE,
    DTYPE,
    ENCODER_FORMS,
    ENCODER_PATTERN,
    PAIR_ENCODINGS,
    STATE_POLICIES,
    TOKEN_BUDGET,
    ExtractConfig,
    encoder_family,
)
from .device import DEVICE_HELP, default_device
from .embed import EmbedBusyError, EmbedWorker
from .encoders import MINILM_NAME, encoder_name, load_encoder, minilm_dir
from .hf import hf_identity, resolve_model_dir, weights_sha256
from .inputs import InputSet, gather_inputs, run_extract
from .lookup import current_featureset
from .migrate import MigrateConfig, migrate_store
from .ray_run import cluster_gpus, connect_ray
from .repair import repair
from .run import encode_segment, extract, plan_segments

#: ELMo's parts the 🔥 ELMo model reuses; they load torch, so on first use only (PEP 562).
_ELMO = {
    "ElmoBiLM": ".elmo:ElmoBiLM",
    "LstmState": ".elmo:LstmState",
    "batch_to_ids": ".elmo:batch_to_ids",
    "expected_shapes": ".elmo:expected_shapes",
    "resolve_elmo_spec": ".elmo:resolve_elmo_spec",
    "warmup_state": ".elmo:warmup_state",
}

__all__ = [
    "BATCH_SIZE",
    "DEVICE_HELP",
    "DTYPE",
    "ENCODER_FORMS",
    "ENCODER_PATTERN",
    "EXTRACTOR_VERSION",
    "MINILM_NAME",
    "PAIR_ENCODINGS",
    "STATE_POLICIES",
    "TOKEN_BUDGET",
    "ElmoBiLM",
    "EmbedBusyError",
    "EmbedWorker",
    "Encoded",
    "Encoder",
    "ExtractConfig",
    "InputSet",
    "MigrateConfig",
    "LstmState",
    "Prepared",
    "TextInput",
    "batch_to_ids",
    "bucket_batches",
    "cluster_gpus",
    "connect_ray",
    "current_featureset",
    "default_device",
    "encode_segment",
    "encoder_family",
    "encoder_name",
    "expected_shapes",
    "extract",
    "gather_inputs",
    "hf_identity",
    "load_encoder",
    "migrate_store",
    "minilm_dir",
    "plan_segments",
    "repair",
    "resolve_elmo_spec",
    "resolve_model_dir",
    "run_extract",
    "warmup_state",
    "weights_sha256",
]

__getattr__ = lazy_exports(__name__, _ELMO)
