"""The ELMo options file (bilm-tf / AllenNLP JSON) as a frozen, validated dataclass.

The file has two sections, both required with every field:

    {"lstm": {"dim", "projection_dim", "n_layers", "cell_clip", "proj_clip",
              "use_skip_connections"},
     "char_cnn": {"embedding": {"dim"}, "filters", "n_highway", "n_characters",
                  "max_characters_per_token", "activation"}}

Options files written by bilm-tf's training script also carry training settings at the top
level (`dropout`, `batch_size`, ...); those listed in `TRAINING_FIELDS` are accepted and
ignored because they do not change inference. Any other field is an error naming it, and so
is a missing one.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


class ElmoFileError(ValueError):
    """An ELMo options or weight file does not match what the biLM needs."""


# Top-level fields of bilm-tf training options that do not affect inference.
TRAINING_FIELDS = frozenset(
    {
        "bidirectional",
        "dropout",
        "all_clip_norm_val",
        "n_epochs",
        "n_train_tokens",
        "batch_size",
        "n_tokens_vocab",
        "unroll_steps",
        "n_negative_samples_batch",
        "sample_softmax",
        "share_embedding_softmax",
    }
)

# JSON layout: section -> field -> kind ("int", "number", "bool", "str", "filters", or a
# nested dict for `embedding`).
_SCHEMA: dict[str, Any] = {
    "lstm": {
        "dim": "int",
        "projection_dim": "int",
        "n_layers": "int",
        "cell_clip": "number",
        "proj_clip": "number",
        "use_skip_connections": "bool",
    },
    "char_cnn": {
        "embedding": {"dim": "int"},
        "filters": "filters",
        "n_highway": "int",
        "n_characters": "int",
        "max_characters_per_token": "int",
        "activation": "str",
    },
}

ACTIVATIONS = ("relu", "tanh")
N_CHARACTERS = 262  # 256 bytes + 5 markers + the padding id 0


@dataclass(frozen=True)
class ElmoOptions:
    """Hyper-parameters of a biLM; names follow the JSON (`lstm.dim` is `cell_dim`)."""

    char_dim: int  # char_cnn.embedding.dim: width of one character embedding
    filters: tuple[tuple[int, int], ...]  # char_cnn.filters: (width, n_filters) per CNN filter
    n_highway: int  # char_cnn.n_highway: highway layers after the CNN (0 = none)
    n_characters: int  # char_cnn.n_characters: char-id vocabulary, 262 for inference
    max_characters_per_token: int  # char_cnn.max_characters_per_token: 50 in every release
    activation: str  # char_cnn.activation: after the max-pool, "relu" or "tanh"
    cell_dim: int  # lstm.dim: C, LSTM memory cell size
    projection_dim: int  # lstm.projection_dim: P, token embedding and LSTM output size
    n_layers: int  # lstm.n_layers: biLSTM layers per direction
    cell_clip: float  # lstm.cell_clip: the cell is clipped to +-cell_clip
    proj_clip: float  # lstm.proj_clip: the projected output is clipped to +-proj_clip
    use_skip_connections: bool  # lstm.use_skip_connections: residual for layers >= 1

    def __post_init__(self) -> None:
        for name in ("char_dim", "cell_dim", "projection_dim", "n_layers"):
            if getattr(self, name) < 1:
                raise ValueError(f"ElmoOptions.{name}: expected >= 1, got {getattr(self, name)}")
        if self.n_highway < 0:
            raise ValueError(f"ElmoOptions.n_highway: expected >= 0, got {self.n_highway}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"ElmoOptions.activation: expected one of {ACTIVATIONS}, got {self.activation!r}"
            )
        if self.n_characters != N_CHARACTERS:
            raise ValueError(
                f"ElmoOptions.n_characters: expected {N_CHARACTERS} (bilm-tf trains with 261; "
                f"set 262 for inference), got {self.n_characters}"
            )
        if not self.filters:
            raise ValueError("ElmoOptions.filters: expected at least one [width, n] filter")
        for width, n in self.filters:
            if not 1 <= width <= self.max_characters_per_token or n < 1:
                raise ValueError(
                    f"ElmoOptions.filters: expected 1 <= width <= "
                    f"{self.max_characters_per_token} and n >= 1, got [{width}, {n}]"
                )
        if self.max_characters_per_token < 3:
            raise ValueError(
                f"ElmoOptions.max_characters_per_token: expected >= 3, "
                f"got {self.max_characters_per_token}"
            )
        if self.projection_dim >= self.cell_dim:
            raise ValueError(
                f"ElmoOptions: expected projection_dim < dim (an LSTM with projection), "
                f"got {self.projection_dim} >= {self.cell_dim}"
            )
        if self.cell_clip <= 0 or self.proj_clip <= 0:
            raise ValueError(
                f"ElmoOptions: expected positive clips, got cell_clip={self.cell_clip}, "
                f"proj_clip={self.proj_clip}"
            )

    @property
    def n_filters(self) -> int:
        """Width of the concatenated CNN features (2048 in the released models)."""
        return sum(n for _, n in self.filters)

    def to_json(self) -> dict[str, Any]:
        """The options in the file layout (read back by `parse_options`)."""
        d = asdict(self)
        return {
            "lstm": {
                "dim": d["cell_dim"],
                "projection_dim": d["projection_dim"],
                "n_layers": d["n_layers"],
                "cell_clip": d["cell_clip"],
                "proj_clip": d["proj_clip"],
                "use_skip_connections": d["use_skip_connections"],
            },
            "char_cnn": {
                "embedding": {"dim": d["char_dim"]},
                "filters": [list(f) for f in self.filters],
                "n_highway": d["n_highway"],
                "n_characters": d["n_characters"],
                "max_characters_per_token": d["max_characters_per_token"],
                "activation": d["activation"],
            },
        }


def _check(value: Any, kind: Any, where: str, source: str) -> Any:
    """Check one JSON value against its schema kind; return it normalised."""
    if isinstance(kind, dict):
        if not isinstance(value, dict):
            raise ElmoFileError(f"{source}: field '{where}' must be an object, got {value!r}")
        for key in value:
            if key not in kind:
                raise ElmoFileError(
                    f"{source}: unknown field '{where}.{key}'; expected fields of '{where}': "
                    f"{sorted(kind)}"
                )
        for key in kind:
            if key not in value:
                raise ElmoFileError(f"{source}: missing field '{where}.{key}'")
        return {k: _check(value[k], kind[k], f"{where}.{k}", source) for k in kind}
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "str": isinstance(value, str),
        "filters": isinstance(value, list)
        and all(
            isinstance(f, list)
            and len(f) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in f)
            for f in value
        ),
    }[kind]
    if not ok:
        expected = {
            "int": "an int",
            "number": "a number",
            "bool": "true or false",
            "str": "a string",
            "filters": "a list of [width, n] int pairs",
        }[kind]
        raise ElmoFileError(f"{source}: field '{where}' must be {expected}, got {value!r}")
    return tuple(tuple(f) for f in value) if kind == "filters" else value


def parse_options(raw: Any, source: str = "options") -> ElmoOptions:
    """Validate a decoded options JSON and build `ElmoOptions`; `source` names it in errors."""
    if not isinstance(raw, dict):
        raise ElmoFileError(f"{source}: expected a JSON object, got {type(raw).__name__}")
    for key in raw:
        if key not in _SCHEMA and key not in TRAINING_FIELDS:
            raise ElmoFileError(
                f"{source}: unknown field '{key}'; expected 'lstm' and 'char_cnn' "
                f"(plus optional training fields {sorted(TRAINING_FIELDS)})"
            )
    for key in _SCHEMA:
        if key not in raw:
            raise ElmoFileError(f"{source}: missing field '{key}'")
    if raw.get("bidirectional", True) is not True:
        raise ElmoFileError(f"{source}: field 'bidirectional' must be true for ELMo")
    lstm = _check(raw["lstm"], _SCHEMA["lstm"], "lstm", source)
    cnn = _check(raw["char_cnn"], _SCHEMA["char_cnn"], "char_cnn", source)
    try:
        return ElmoOptions(
            char_dim=cnn["embedding"]["dim"],
            filters=cnn["filters"],
            n_highway=cnn["n_highway"],
            n_characters=cnn["n_characters"],
            max_characters_per_token=cnn["max_characters_per_token"],
            activation=cnn["activation"],
            cell_dim=lstm["dim"],
            projection_dim=lstm["projection_dim"],
            n_layers=lstm["n_layers"],
            cell_clip=float(lstm["cell_clip"]),
            proj_clip=float(lstm["proj_clip"]),
            use_skip_connections=lstm["use_skip_connections"],
        )
    except ValueError as e:
        raise ElmoFileError(f"{source}: {e}") from e


def read_options(path: str | Path) -> ElmoOptions:
    """Read and validate an options JSON file; errors name the file and the field."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ElmoFileError(f"{path}: options file not found") from e
    except json.JSONDecodeError as e:
        raise ElmoFileError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from e
    return parse_options(raw, str(path))
