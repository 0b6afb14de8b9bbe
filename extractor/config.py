"""The one config of an extraction, `ExtractConfig`: each field with its help, choices and range.

`snowfire extract`'s flags and an extract job's params are derived from it; `run_extract` runs
it; `extract` reads how to batch and store from it; the embed service (`EmbedWorker`), `snowfire
predict --input` and `fsck --repair` build one too. `ExtractConfig.from_identity` rebuilds the
encoder options from a stored encoder identity (a manifest's or head.json's `encoder`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from snowfire.cache import DEFAULT_TILES, STORED_DTYPES, TILES
from snowfire.options import check, option
from snowfire.tasks import SPLITS, WORDS_PATTERN, TaskFields

from .device import DEVICE_HELP

ENCODER_FORMS = "'minilm', 'hf:NAME_OR_DIR', 'elmo:OPTIONS.json,WEIGHTS.hdf5' or 'elmo:DIR'"
#: The same forms as a JSON-Schema pattern (what `encoder_family` accepts, and the text rule):
#: minilm, or hf:/elmo: and something not blank.
ENCODER_PATTERN = "^(minilm|(hf|elmo):" + WORDS_PATTERN.removeprefix("^").removesuffix("$") + ")$"
#: How the two texts of a pair are encoded: one joint input, or each text alone.
PAIR_ENCODINGS = ("joint", "separate")
#: ELMo's LSTM state between batches: a fixed warm-up state, or carried in input order.
STATE_POLICIES = ("fixed", "stateful")
#: Defaults the embed service's settings share (api/settings.py).
DTYPE, TOKEN_BUDGET, BATCH_SIZE = "float16", 8192, 32


def encoder_family(spec: str) -> str:
    """ "hf" (the BERT family, the bundled minilm included) or "elmo", from the spec's form
    alone (nothing loaded); ValueError naming the forms otherwise."""
    kind, sep, rest = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if spec == "minilm":
        return "hf"
    if sep and kind in ("hf", "elmo") and rest.strip():
        return kind
    raise ValueError(f"unknown encoder spec {spec!r}: expected {ENCODER_FORMS}")


def check_pair_encoding(value: str) -> None:
    """ValueError unless `value` is one of PAIR_ENCODINGS (for encoders built without a config)."""
    if value not in PAIR_ENCODINGS:
        raise ValueError(
            f"pair_encoding: expected one of {', '.join(PAIR_ENCODINGS)}, got {value!r}"
        )


@dataclass(frozen=True)
class ExtractConfig(TaskFields):
    """One extraction: an encoder and a store, and what to read, a task's splits (`task` or
    `task_spec`, and `data`: tasks.TaskFields) or a raw text file (`input`). Without either,
    the config says how to encode and store texts its user hands over (`extract`, the embed
    service, `fsck --repair`); `run_extract` needs one (`check_inputs`)."""

    encoder: str = option(help=f"the encoder: {ENCODER_FORMS}")
    store: str = option(help="store directory or s3://bucket/prefix")
    split: list[str] | None = option(
        None, "split to extract (repeatable; default: every split present)", choices=SPLITS
    )
    input: str | None = option(None, "raw text: one sentence per line, or JSONL")
    name: str | None = option(None, "name of a raw-text feature set (default: the file's stem)")
    pair_encoding: str = option(
        "joint", "sentence pairs: one joint input, or each text alone", choices=PAIR_ENCODINGS
    )
    dtype: str = option(
        DTYPE,
        "storage dtype (int8: a scale per token and layer, see docs/int8.md)",
        choices=STORED_DTYPES,
    )
    tiles: str = option(
        DEFAULT_TILES,
        "features tiles of new segments: every layer of 32 tokens (token: an "
        "example is one contiguous read), or one layer (a one-layer read from object storage "
        "fetches only that layer)",
        choices=TILES,
    )
    token_budget: int = option(TOKEN_BUDGET, "padded tokens per forward batch", ge=1)
    segment_tokens: int | None = option(
        None, "tokens per committed segment (default: about 64 MB of features)", ge=1
    )
    max_length: int | None = option(
        None, "window length in pieces (<= the model's maximum; longer texts are windowed)", ge=1
    )
    device: str | None = option(None, DEVICE_HELP)
    elmo_state: str = option(
        "fixed", "ELMo's LSTM state between batches (see docs)", choices=STATE_POLICIES
    )
    batch_size: int = option(BATCH_SIZE, "sentences per batch (ELMo)", ge=1)
    progress: bool = option(True, "show a progress bar")
    ray: str | None = option(
        None,
        "encode on Ray: a cluster address (auto, ray://HOST:10001) or 'local' to start "
        "one here; the store must be reachable from every node (shared directory or s3://)",
    )
    actors: int | None = option(
        None, "Ray actors, one encoder each (default: one per GPU, else 2)", ge=1
    )
    gpus_per_actor: float | None = option(
        None, "GPUs per Ray actor (default: 1 when the cluster has GPUs, else 0)", ge=0
    )

    def __post_init__(self) -> None:
        check(self)
        try:
            encoder_family(self.encoder)
        except ValueError as err:
            raise ValueError(f"ExtractConfig.encoder: {err}") from err
        if self.names_task and self.input is not None:
            raise ValueError(_EITHER)
        self.resolve_spec(required=False)  # None: a raw text file, or texts handed over

    def check_inputs(self) -> None:
        """ValueError unless the config names what to read (a task, or an input file)."""
        if not self.names_task and self.input is None:
            raise ValueError(_EITHER)

    def encoder_options(self) -> dict[str, Any]:
        """The keyword arguments of `load_encoder(self.encoder, ...)` this config names."""
        return {name: getattr(self, name) for name in _ENCODER_OPTIONS}

    @classmethod
    def from_identity(cls, identity: dict[str, Any], **fields: Any) -> ExtractConfig:
        """The config that loads the encoder a stored identity describes (the `encoder` of a
        manifest or a head.json: its spec, pair encoding, window length, ELMo state policy and,
        for the stateful policy, batch size), with `fields` for the rest (store, input, dtype,
        device, ...). ValueError when the identity names no spec to load."""
        spec = identity.get("spec")
        if not spec:
            raise ValueError(
                f"the encoder identity names no spec to load it from (kind "
                f"{identity.get('kind')!r}, name {identity.get('name')!r})"
            )
        rebuilt = {"encoder": spec, "max_length": identity.get("max_length")}
        for field, key in (
            ("pair_encoding", "pair_encoding"),
            ("elmo_state", "state_policy"),
            ("batch_size", "batch_size"),
        ):
            if identity.get(key) is not None:  # absent: the option did not change the encoder
                rebuilt[field] = identity[key]
        return cls(**(rebuilt | fields))


#: The fields that are `load_encoder`'s keyword arguments.
_ENCODER_OPTIONS = ("pair_encoding", "max_length", "device", "elmo_state", "batch_size")
_EITHER = (
    "ExtractConfig: give either 'task' (task data in 'data') or 'task_spec' (your own task), or "
    "'input' (a text file)"
)
