"""A job's `params`, checked at submission: the matching command's options by name.

    extract   the fields of `extractor.ExtractConfig` (encoder, task, data, split, input, ...)
    train     the fields of `heads.TrainConfig` (encoder, task, head, data, out, epochs, ...)
    finetune  the fields of `finetune.FinetuneConfig` (encoder, task, data, out, epochs, ...)
    compare   the fields of `compare.CompareConfig`; layers those of `compare.LayersConfig`

The models are derived from those dataclasses (types, choices, bounds, defaults), and the
config is then built, so a job is refused exactly where the command would be. Unknown names,
wrong JSON types (no coercion: "3" is not an int), an unknown task, encoder spec form or head,
a head that cannot model the task, missing task data: InvalidJobError (422) with the reason.
Defaults: `store` HOME/store, `out` HOME/runs/<job id> (a layers job: HOME/layers/<its content
key>, where `GET /v1/featuresets/{id}/layers` finds the answer), `data` HOME/tasks;
relative paths are relative to HOME. A user's task: `task_spec`, a spec file (relative: HOME's)
or the spec object (its relative split paths: the data directory's; compare takes one or a
list), every path kept where a job may read. The stored params are the resolved ones.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
)

from snowfire.extractor import ENCODER_PATTERN
from snowfire.options import unwrap_optional
from snowfire.tasks import (
    INT_MAX,
    INT_MIN,
    dotted,
    integral,
    need_splits,
    value_fault,
)

from .errors import (
    InvalidJobError,
    JobConflictError,
    JobInputNotFoundError,
    JobPathForbiddenError,
)
from .home import Home
from .kinds import JOB_KINDS, LIMIT_PARAMS, JobLimits, split_limits

#: Params a job may leave out, filled from the data directory (HOME/store, HOME/tasks,
#: HOME/runs/<job id>).
_FROM_HOME = ("store", "data", "out")


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _field_type(hint: Any, choices: tuple | None, bounds: dict[str, float]) -> Any:
    """The pydantic type of a config field: its hint, with `choices` as a Literal and the
    `bounds` on the value (on each value of a list); an int is JSON Schema's integer. Every
    member of a union stays: `str | dict | None` (a task_spec: the spec file's path, or the spec
    object inline) is `str | dict | None` here too."""
    base, optional = unwrap_optional(hint)
    many = typing.get_origin(base) is list
    item = typing.get_args(base)[0] if many else base
    if choices:
        item = Literal[tuple(choices)]  # type: ignore[valid-type]
    if item is int:  # JSON Schema's integer (2.0 is 2), within int64 unless bounded tighter
        bounds = {"ge": INT_MIN, "le": INT_MAX} | bounds  # the bounds before the validator,
        item = typing.Annotated[int, Field(**bounds), BeforeValidator(integral)]  # or no schema
    elif bounds:
        item = typing.Annotated[item, Field(**bounds)]
    value = list[item] if many else item  # type: ignore[valid-type]
    return value | None if optional else value


@cache
def params_model(kind: str) -> type[BaseModel]:
    """The strict pydantic model of a `kind` job's params, derived from the fields of its
    config dataclass (type, choices, bounds, default) and of `JobLimits`, which every kind
    takes; store/data/out may be left out."""
    cls = JOB_KINDS[kind].config()
    spec: dict[str, Any] = {}
    for source in (cls, JobLimits):
        spec.update(_fields(source))
    return create_model(f"{cls.__name__}Params", __base__=_Params, **spec)


def _encoder_form(spec: str) -> str:
    from snowfire.extractor import encoder_family

    encoder_family(spec)  # its error names the forms
    return spec


#: An encoder spec: its forms as the schema's pattern, checked by the extractor's own rule.
_ENCODER = typing.Annotated[
    str,
    AfterValidator(_encoder_form),
    Field(json_schema_extra={"pattern": ENCODER_PATTERN}),
]


def _fields(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    spec: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if cls is not JobLimits and f.name in LIMIT_PARAMS:
            raise TypeError(f"{cls.__name__}.{f.name}: a job limit's name (jobs.JobLimits)")
        if f.name in _FROM_HOME:
            spec[f.name] = (str | None, None)
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = Field(default_factory=f.default_factory)
        else:
            default = ...
        bounds = f.metadata.get("bounds") or {}
        field_type = _field_type(hints[f.name], f.metadata.get("choices"), bounds)
        if f.name == "encoder" and hints[f.name] is str:  # a spec form the schema can say
            field_type = _ENCODER
        if cls is JobLimits:  # documented in the schema: the only params no command has
            default = Field(default, description=f.metadata["help"])
        spec[f.name] = (field_type, default)
    return spec


def validate_params(kind: str, params: dict[str, Any], home: Home, job_id: str) -> dict[str, Any]:
    """The resolved params of a `kind` job, or InvalidJobError naming what is wrong."""
    if kind not in JOB_KINDS:
        raise InvalidJobError(f"unknown job kind {kind!r}: expected one of {', '.join(JOB_KINDS)}")
    fault = value_fault(params)  # the text rule, numbers JSON has (the service checked them)
    if fault:
        raise InvalidJobError(f"{dotted(('params', *fault[0]))}: {fault[1]}")
    if kind == "compare" and isinstance(params.get("task_spec"), (str, dict)):
        params = {**params, "task_spec": [params["task_spec"]]}  # one spec, as for the others
    try:
        checked = params_model(kind).model_validate(params).model_dump()
    except ImportError as err:
        raise InvalidJobError(f"{kind} jobs are not available here: {err}") from err
    except ValidationError as err:
        errors = [{**e, "loc": ("params", *e["loc"])} for e in err.errors()]
        raise InvalidJobError(describe_validation(errors)) from err
    config = JOB_KINDS[kind].config()
    limits, checked = split_limits(checked)
    try:
        resolved = _RESOLVE[kind](checked, home, job_id)
        config(**resolved)  # the config's own checks, the command's too
        _RESOLVE_AFTER[kind](resolved, config)
        given = dataclasses.asdict(limits)
        return {**resolved, **{k: v for k, v in given.items() if v is not None}}
    except (ValueError, TypeError, OSError) as err:  # OSError: missing task data
        # "TrainConfig.head: ..." -> "params.head: ...", as pydantic names a field
        text = re.sub(rf"^{config.__name__}(\.|: )", lambda m: "params" + m.group(1), str(err))
        raise _refusal(err)(text if text.startswith("params") else f"params: {text}") from err


def _refusal(err: BaseException) -> type[InvalidJobError]:
    """The error (so the status) of params that fit their schema but not the command: a path
    outside the data directory (403), something named that is not there, a file or a task's
    data (404: an OSError anywhere in the chain), else a conflict among the params (409)."""
    chain, seen = [], err
    while seen is not None and len(chain) < 20:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    if any(isinstance(e, JobPathForbiddenError) for e in chain):
        return JobPathForbiddenError
    if any(isinstance(e, OSError) for e in chain):
        return JobInputNotFoundError
    return JobConflictError


def _spec_path(p: dict[str, Any], home: Home) -> None:
    """A spec file named by a relative path is HOME's; a spec object's relative split paths
    are the data directory's (HOME/tasks by default), made absolute; every path must stay
    where a job may read (`Home.path`)."""
    refs = p.get("task_spec")
    if isinstance(refs, list):
        p["task_spec"] = [_one_spec(r, p["data"], home) for r in refs]
    elif refs is not None:
        p["task_spec"] = _one_spec(refs, p["data"], home)


def _one_spec(ref, data: str | None, home: Home):
    if isinstance(ref, str):
        return home.path(ref)
    splits = ref.get("splits")
    if not isinstance(splits, dict):
        return ref  # the spec's own check names what is wrong
    base = Path(data or home.path("tasks"))
    resolved = {}
    for split, entry in splits.items():
        path = entry if isinstance(entry, str) else (entry or {}).get("path")
        if isinstance(path, str) and path:
            path = home.path(str(base / path) if not Path(path).is_absolute() else path)
            entry = path if isinstance(entry, str) else {**entry, "path": path}
        resolved[split] = entry
    return {**ref, "splits": resolved}


def _extract(p: dict[str, Any], home: Home, job_id: str) -> dict[str, Any]:
    p["store"] = home.store_param(p["store"])
    if p["input"] is not None:
        p["input"] = home.path(p["input"])
    elif p["task"] is not None or p["task_spec"] is not None:
        p["data"] = home.path(p["data"] or "tasks")
    _spec_path(p, home)
    return p


def _extract_files(p: dict[str, Any], config: type) -> None:
    config = config(**p)
    config.check_inputs()  # a job, as the command, names what to read
    if p["input"] is not None:
        if not Path(p["input"]).is_file():
            raise FileNotFoundError(f"input: no file {p['input']}")
        return
    need_splits(config.spec, p["data"], p["split"] or [])


def _run_dirs(p: dict[str, Any], home: Home, job_id: str) -> dict[str, Any]:
    if "store" in p:
        p["store"] = home.store_param(p["store"])
    p["data"] = home.path(p["data"] or "tasks")
    _spec_path(p, home)
    p["out"] = home.path(p["out"] or f"runs/{job_id}")
    if p.get("init_head"):  # finetune's LP-FT probe run: a path, kept where jobs may read
        p["init_head"] = home.path(p["init_head"])
    if p.get("intermediate"):  # compare's arm seq: a registered task, or a run directory
        from snowfire.tasks import TASK_NAMES

        if p["intermediate"] not in TASK_NAMES:
            p["intermediate"] = home.path(p["intermediate"])
    return p


def _layers(p: dict[str, Any], home: Home, job_id: str) -> dict[str, Any]:
    """A layers job's paths, and its `out` by default HOME/layers/<the sweep's content key>:
    the one place a finished sweep of those features, labels and options is looked for."""
    p["store"] = home.store_param(p["store"])
    p["data"] = home.path(p["data"] or "tasks")
    _spec_path(p, home)
    if p["out"] is None:
        from snowfire.compare import layers_key

        key = layers_key(JOB_KINDS["layers"].config()(**p))  # reads manifests, trains nothing
        p["out"] = str(home.layers / key)
    else:
        p["out"] = home.path(p["out"])
    return p


def _train_files(p: dict[str, Any], config: type) -> None:
    need_splits(config(**p).spec, p["data"])  # train and dev, as the run needs them


def _compare_files(p: dict[str, Any], config: type) -> None:
    for spec in config(**p).specs.values():
        need_splits(spec, p["data"])


_RESOLVE = {
    "extract": _extract,
    "train": _run_dirs,
    "finetune": _run_dirs,
    "compare": _run_dirs,
    "layers": _layers,
}
_RESOLVE_AFTER = {
    "extract": _extract_files,
    "train": _train_files,
    "finetune": _train_files,
    "compare": _compare_files,
    "layers": _train_files,
}


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
