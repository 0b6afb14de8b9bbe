"""A job's `params`, checked at submission: the matching command's options by name.

    extract   the options of `snowfire extract` (encoder, task, data, split, input, ...)
    train     the options of `snowfire train` (encoder, task, head, data, out, epochs, ...)
    finetune  the fields of `finetune.FinetuneConfig` (encoder, task, data, out, epochs, ...)

Unknown names, wrong JSON types (no coercion: "3" is not an int), an unknown task, encoder
spec form or head, a head that cannot model the task, missing task data: InvalidJobError (422)
with the reason. Defaults: `store` HOME/store, `out` HOME/runs/<job id>, `data` HOME/tasks;
relative paths are relative to HOME. The stored params are the resolved ones.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from .errors import InvalidJobError
from .home import Home
from .kinds import JOB_KINDS

_ENCODER_FORMS = "'minilm', 'hf:NAME_OR_DIR', 'elmo:OPTIONS.json,WEIGHTS.hdf5' or 'elmo:DIR'"


def check_encoder(spec: str) -> str:
    kind, sep, rest = spec.partition(":")
    if spec == "minilm" or (sep and kind in ("hf", "elmo") and rest.strip()):
        return spec
    raise ValueError(f"unknown encoder spec {spec!r}: expected {_ENCODER_FORMS}")


def check_task(name: str) -> str:
    from tasks import TASKS

    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}: expected one of {', '.join(TASKS)}")
    return name


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    _encoder = field_validator("encoder", check_fields=False)(check_encoder)
    _task = field_validator("task", check_fields=False)(lambda v: v if v is None else check_task(v))


class ExtractParams(_Params):
    """`snowfire extract`: either `task` (+ `data`, `split`) or `input`."""

    encoder: str
    store: str | None = None
    task: str | None = None
    data: str | None = None
    split: list[Literal["train", "dev", "test"]] | None = None
    input: str | None = None
    name: str | None = None
    pair_encoding: Literal["joint", "separate"] = "joint"
    dtype: Literal["float16", "float32"] = "float16"
    token_budget: int = Field(8192, gt=0)
    segment_tokens: int | None = Field(None, gt=0)
    max_length: int | None = Field(None, gt=0)
    device: str | None = None
    elmo_state: Literal["fixed", "stateful"] = "fixed"
    batch_size: int = Field(32, gt=0)


class TrainParams(_Params):
    """`snowfire train` (`hparams` is a JSON object here, not a string)."""

    encoder: str
    task: str
    head: str
    store: str | None = None
    data: str | None = None
    out: str | None = None
    seed: int = 0
    epochs: int = Field(20, gt=0)
    batch_size: int = Field(32, gt=0)
    lr: float = Field(1e-3, gt=0)
    weight_decay: float = Field(0.01, ge=0)
    patience: int = Field(3, gt=0)
    pair_encoding: Literal["joint", "separate"] | None = None
    featureset: str | None = None
    layer: int | None = Field(None, ge=0)
    hparams: dict[str, Any] = Field(default_factory=dict)


def _finetune_model() -> type[BaseModel]:
    """FinetuneConfig's fields as a strict pydantic model (`out` optional: HOME/runs/<id>)."""
    from finetune import FinetuneConfig

    hints = typing.get_type_hints(FinetuneConfig)
    spec = {}
    for f in dataclasses.fields(FinetuneConfig):
        default = f.default if f.default is not dataclasses.MISSING else ...
        if f.name in ("out", "data"):
            spec[f.name] = (str | None, None)
        else:
            spec[f.name] = (hints[f.name], default)
    return create_model("FinetuneParams", __base__=_Params, **spec)


def validate_params(kind: str, params: dict[str, Any], home: Home, job_id: str) -> dict[str, Any]:
    """The resolved params of a `kind` job, or InvalidJobError naming what is wrong."""
    if kind not in JOB_KINDS:
        raise InvalidJobError(f"unknown job kind {kind!r}: expected one of {', '.join(JOB_KINDS)}")
    try:
        model = {"extract": ExtractParams, "train": TrainParams}.get(kind)
        if model is None:
            model = _finetune_model()
        checked = model.model_validate(params).model_dump()
    except ImportError as err:
        raise InvalidJobError(f"{kind} jobs are not available here: {err}") from err
    except ValidationError as err:
        errors = [{**e, "loc": ("params", *e["loc"])} for e in err.errors()]
        raise InvalidJobError(describe_validation(errors)) from err
    try:
        return _RESOLVE[kind](checked, home, job_id)
    except (ValueError, TypeError, OSError) as err:  # OSError: missing task data
        raise InvalidJobError(f"params: {err}") from err


def _splits(task: str, data: str, needed: list[str]) -> None:
    from tasks import available_splits, get_task

    present = available_splits(task, data)
    missing = [s for s in needed if s not in present]
    if missing:
        spec = get_task(task)
        where = ", ".join(str(Path(data) / spec.folder / spec.files.get(s, "?")) for s in missing)
        raise ValueError(f"no {'/'.join(missing)} split of {task} in {data} (expected {where})")


def _extract(p: dict[str, Any], home: Home, job_id: str) -> dict[str, Any]:
    if (p["task"] is None) == (p["input"] is None):
        raise ValueError("give either 'task' (task data in 'data') or 'input' (a text file)")
    p["store"] = home.path(p["store"] or "store")
    if p["input"] is not None:
        p["input"] = home.path(p["input"])
        if not Path(p["input"]).is_file():
            raise ValueError(f"input: no file {p['input']}")
        return p
    p["data"] = home.path(p["data"] or "tasks")
    _splits(p["task"], p["data"], p["split"] or [])
    from tasks import available_splits

    if not available_splits(p["task"], p["data"]):
        raise ValueError(f"no split of {p['task']} in {p['data']}")
    return p


def _train(p: dict[str, Any], home: Home, job_id: str) -> dict[str, Any]:
    from heads import HEADS
    from tasks import get_task

    spec, head = get_task(p["task"]), HEADS.get(p["head"])
    if head is None:
        raise ValueError(f"unknown head {p['head']!r}: expected one of {', '.join(HEADS)}")
    texts = "pair" if spec.pair else "single"
    if spec.kind not in head.kinds or head.texts not in ("any", texts):
        suited = [n for n, h in HEADS.items() if spec.kind in h.kinds and h.texts in ("any", texts)]
        raise ValueError(
            f"head {p['head']!r} cannot model {p['task']} ({spec.kind} on {texts} texts); "
            f"heads that can: {', '.join(suited)}"
        )
    unknown = sorted(set(p["hparams"]) - set(head.hparams()))
    if unknown:
        raise ValueError(
            f"unknown hparams {unknown} for head {p['head']!r}; it takes: "
            f"{', '.join(head.hparams()) or 'none'}"
        )
    p["store"] = home.path(p["store"] or "store")
    p["data"] = home.path(p["data"] or "tasks")
    p["out"] = home.path(p["out"] or f"runs/{job_id}")
    _splits(p["task"], p["data"], ["train", "dev"])
    return p


def _finetune(p: dict[str, Any], home: Home, job_id: str) -> dict[str, Any]:
    from finetune import FinetuneConfig

    p["data"] = home.path(p["data"] or "tasks")
    p["out"] = home.path(p["out"] or f"runs/{job_id}")
    FinetuneConfig(**p)  # its own range checks, before looking for data
    _splits(p["task"], p["data"], ["train", "dev"])
    return p


_RESOLVE = {"extract": _extract, "train": _train, "finetune": _finetune}


def describe_validation(errors) -> str:
    """pydantic's list of validation errors as one sentence, e.g.
    `indices.1: Input should be a valid integer (got 'x')`."""
    parts = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ()) if p != "body"]
        if err.get("type") == "value_error" and "error" in err.get("ctx", {}):
            message = str(err["ctx"]["error"])  # our own validator's text, without "Value error, "
        else:
            message = err.get("msg", "invalid")
            if err.get("type") not in ("missing", "json_invalid") and "input" in err:
                message += f" (got {err['input']!r})"
        parts.append(f"{'.'.join(loc)}: {message}" if loc else message)
    return "; ".join(parts) or "invalid request"
