"""ELMo in plain torch, loaded from the options JSON + HDF5 weights of bilm-tf / AllenNLP.

Data flow: words -> `batch_to_ids` (char ids) -> `ElmoBiLM` (char CNN, biLSTM) -> all layers;
`ElmoEncoder` wraps it in the extractor's `Encoder` protocol with a state policy.
"""

from .bilm import ElmoBiLM
from .chars import batch_to_ids, sentence_to_ids, word_to_ids
from .encoder import ElmoEncoder, resolve_elmo_spec
from .lstm import LstmState
from .options import ElmoFileError, ElmoOptions, parse_options, read_options
from .state import WARMUP_SENTENCES, warmup_state
from .weights import expected_shapes, read_weights

__all__ = [
    "WARMUP_SENTENCES",
    "ElmoBiLM",
    "ElmoEncoder",
    "ElmoFileError",
    "ElmoOptions",
    "LstmState",
    "batch_to_ids",
    "expected_shapes",
    "parse_options",
    "read_options",
    "read_weights",
    "resolve_elmo_spec",
    "sentence_to_ids",
    "warmup_state",
    "word_to_ids",
]
