"""Config fields that carry their own help, choices and range, so every config checks itself.

    lr: float = option(1e-3, "peak learning rate (AdamW)", gt=0)

`option(...)` is a `dataclasses.field` whose metadata holds the help text, the allowed values
(`choices`) and the bounds (`ge`, `gt`, `le`, `lt`); for a list, of each of its values.
`check(config)` (called from a config's `__post_init__`) refuses a value of the wrong type or
outside them with an error naming the config, the field, what was expected and what was given.
The command-line flags (cli/flags.py) and the job parameter models (jobs/params.py) are derived
from the same fields.

A `volatile=True` field may change between attempts of one run (where it runs, how it reports,
where it writes): a run directory made with another value of it is still the same run
(`rundir.finished_or_refuse` reuses it; any other field changed is refused).

The ground floor of the data flow, so every package may use it: type hints read one way
(hints.py: `unwrap_optional`), names a package loads on first use (lazy.py: `lazy_exports`),
and the thread budget of a process that runs torch (threads.py).
"""

from __future__ import annotations

import dataclasses
import os
import typing
from typing import Any

from .hints import is_union, unwrap_optional
from .lazy import lazy_exports
from .threads import (
    SHARE_ENV,
    THREADS_ENV,
    ThreadBudget,
    apply_threads,
    thread_budget,
    threads_env,
    threads_in_use,
    threads_record,
    use_threads,
)

__all__ = [
    "SHARE_ENV",
    "THREADS_ENV",
    "ThreadBudget",
    "check",
    "is_union",
    "lazy_exports",
    "option",
    "thread_budget",
    "apply_threads",
    "threads_env",
    "threads_in_use",
    "threads_record",
    "unwrap_optional",
    "use_threads",
    "volatile_fields",
]

_BOUNDS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


def option(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    choices: tuple | None = None,
    factory: Any = dataclasses.MISSING,
    volatile: bool = False,
    absent: Any = dataclasses.MISSING,
    kw_only: bool = False,
    **bounds: float,
) -> Any:
    """A dataclass field with `help`, optional `choices` and bounds (ge, gt, le, lt);
    `volatile`: the field may change between attempts of the same run; `absent`: the value a
    run saved before the field existed behaved as (default: the field's default); `kw_only`:
    a keyword-only argument (the fields of a mixin, which precede the config's own required
    ones)."""
    unknown = set(bounds) - set(_BOUNDS)
    if unknown:
        raise TypeError(f"option: unknown bounds {sorted(unknown)}; expected {sorted(_BOUNDS)}")
    if not help:
        raise TypeError("option: every field needs a help text")
    metadata = {"help": help, "choices": choices, "bounds": bounds, "volatile": volatile}
    if absent is not dataclasses.MISSING:
        metadata["absent"] = absent
    return dataclasses.field(
        default=default, default_factory=factory, metadata=metadata, kw_only=kw_only
    )


def volatile_fields(config: Any) -> frozenset[str]:
    """The fields of dataclass `config` (a class or an instance) marked `volatile=True`."""
    return frozenset(f.name for f in dataclasses.fields(config) if f.metadata.get("volatile"))


def _type_ok(value: Any, base: Any) -> bool:
    origin = typing.get_origin(base) or base
    if is_union(base):  # e.g. str | dict: a path, or the object
        return any(_type_ok(value, arg) for arg in typing.get_args(base))
    if base is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is list:
        (item,) = typing.get_args(base) or (Any,)
        return isinstance(value, list) and (item is Any or all(_type_ok(v, item) for v in value))
    if origin is dict:
        return isinstance(value, dict)
    if base is Any:
        return True
    return isinstance(value, origin)


def check(config: Any) -> None:
    """Refuse any field of dataclass `config` with the wrong type, outside its choices or
    outside its bounds: ValueError (TypeError for a wrong type) naming `Config.field`. A
    `pathlib.Path` given for a str field is taken as its string."""
    cls = type(config)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        value = getattr(config, f.name)
        base, optional = unwrap_optional(hints[f.name])
        where = f"{cls.__name__}.{f.name}"
        if value is None:
            if optional:
                continue
            raise TypeError(f"{where}: expected a value, got None")
        if base is str and isinstance(value, os.PathLike):  # a Path where a path is asked for
            value = os.fspath(value)
            object.__setattr__(config, f.name, value)
        if not _type_ok(value, base):
            shown = str(base) if typing.get_origin(base) else getattr(base, "__name__", base)
            raise TypeError(f"{where}: expected {shown}, got {value!r} ({type(value).__name__})")
        choices = f.metadata.get("choices")
        values = value if isinstance(value, list) else [value]
        if choices is not None and any(v not in choices for v in values):
            raise ValueError(
                f"{where}: expected one of {', '.join(map(str, choices))}, got {value!r}"
            )
        for name, bound in (f.metadata.get("bounds") or {}).items():
            for v in values:  # a list: each of its values
                ok = {"ge": v >= bound, "gt": v > bound, "le": v <= bound, "lt": v < bound}
                if not ok[name]:
                    got = f"{v!r} in {value!r}" if isinstance(value, list) else repr(v)
                    raise ValueError(f"{where}: expected {_BOUNDS[name]} {bound}, got {got}")
