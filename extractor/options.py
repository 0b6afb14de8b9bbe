"""The options of `snowfire extract` (and of an extract job), each with its help, choices and
range: the CLI flags and the job's params are derived from `ExtractOptions`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from cache.segment import DEFAULT_TILES, TILES
from options import check, option
from tasks.registry import TASK_NAMES

ENCODER_FORMS = "'minilm', 'hf:NAME_OR_DIR', 'elmo:OPTIONS.json,WEIGHTS.hdf5' or 'elmo:DIR'"
#: Defaults shared with `ExtractConfig` (extractor/run.py).
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


@dataclass(frozen=True)
class ExtractOptions:
    """One `snowfire extract`: a task's splits (`task` + `data`) or a raw text file (`input`)."""

    encoder: str = option(help=f"the encoder: {ENCODER_FORMS}")
    store: str = option(help="store directory or s3://bucket/prefix")
    task: str | None = option(None, "task name", choices=TASK_NAMES)
    data: str | None = option(None, "task data directory (one folder per task)")
    split: list[str] | None = option(
        None, "split to extract (repeatable; default: every split present)",
        choices=("train", "dev", "test"),
    )  # fmt: skip
    input: str | None = option(None, "raw text: one sentence per line, or JSONL")
    name: str | None = option(None, "name of a raw-text feature set (default: the file's stem)")
    pair_encoding: str = option(
        "joint", "sentence pairs: one joint input, or each text alone",
        choices=("joint", "separate"),
    )  # fmt: skip
    dtype: str = option(
        DTYPE, "storage dtype (int8: a scale per token and layer, see docs/int8.md)",
        choices=("float16", "float32", "int8"),
    )  # fmt: skip
    tiles: str = option(
        DEFAULT_TILES, "features tiles of new segments: every layer of 32 tokens (token: an "
        "example is one contiguous read), or one layer (a one-layer read from object storage "
        "fetches only that layer)", choices=TILES,
    )  # fmt: skip
    token_budget: int = option(TOKEN_BUDGET, "padded tokens per forward batch", ge=1)
    segment_tokens: int | None = option(
        None, "tokens per committed segment (default: about 64 MB of features)", ge=1
    )
    max_length: int | None = option(
        None, "window length in pieces (<= the model's maximum; longer texts are windowed)", ge=1
    )
    device: str | None = option(None, "cpu, cuda, cuda:1 (default: the GPU when present)")
    elmo_state: str = option(
        "fixed", "ELMo's LSTM state between batches (see docs)", choices=("fixed", "stateful")
    )
    batch_size: int = option(BATCH_SIZE, "sentences per batch (ELMo)", ge=1)
    progress: bool = option(True, "show a progress bar")
    ray: str | None = option(
        None, "encode on Ray: a cluster address (auto, ray://HOST:10001) or 'local' to start "
        "one here; the store must be reachable from every node (shared directory or s3://)",
    )  # fmt: skip
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
            raise ValueError(f"ExtractOptions.encoder: {err}") from err
        if (self.task is None) == (self.input is None):
            raise ValueError(
                "ExtractOptions: give either 'task' (task data in 'data') or 'input' (a text file)"
            )
        if self.task is not None:
            from tasks import get_task

            try:
                get_task(self.task)
            except ValueError as err:
                raise ValueError(f"ExtractOptions.task: {err}") from err
            if self.data is None:
                raise ValueError(
                    f"ExtractOptions.data: task {self.task!r} needs its data directory"
                )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
