"""A finished run of the same config is reused, a run of another config refused.

    done = finished_or_refuse(out, cfg, "train")   # RUN/config.json["train"] vs cfg
    if done is not None:
        return done                                # RUN/metrics.json: nothing is trained

A run is finished when RUN/metrics.json exists (every run writes it last). Its config is the
`section` of RUN/config.json. The two agree when every field of the config agrees, except the
fields marked `volatile=True` on the config class (options.option): those may change between
attempts (out, device, progress, ...). A field the saved config lacks (a run written before
the field existed) agrees when the new value is how such runs behaved: the field's `absent`
value where it declares one (a new default that changes results), else its default. A
disagreement is a `RunConfigError` naming each field with its saved and its new value.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from snowfire.options import volatile_fields

from .files import CONFIG, METRICS

log = logging.getLogger(__name__)

_ABSENT = "(not saved)"


class RunConfigError(ValueError):
    """A run directory (or its checkpoint) holds a run of another config."""


def _jsonable(value: Any) -> Any:
    """`value` as it reads back from a JSON file (tuples as lists, paths as strings)."""
    from .write import _plain

    return json.loads(json.dumps(value, default=_plain))


def _default(field: dataclasses.Field) -> Any:
    if "absent" in field.metadata:
        return field.metadata["absent"]
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return _ABSENT


def config_changes(
    saved: Mapping[str, Any], config: Any, extra: Mapping[str, Any] | None = None
) -> dict[str, tuple[Any, Any]]:
    """{field: (saved value, new value)} for every field of dataclass `config` not marked
    volatile, and every key of `extra` (values that are not config fields), that differs."""
    volatile = volatile_fields(config)
    now = {
        f.name: (getattr(config, f.name), _default(f))
        for f in dataclasses.fields(config)
        if f.name not in volatile
    }
    now |= {k: (v, _ABSENT) for k, v in (extra or {}).items()}
    changes = {}
    for name, (value, default) in now.items():
        new = _jsonable(value)
        old = saved.get(name, _jsonable(default))
        if old != new:
            changes[name] = (saved.get(name, _ABSENT), new)
    return changes


def check_same_config(
    saved: Mapping[str, Any], config: Any, what: str, extra: Mapping[str, Any] | None = None
) -> None:
    """Refuse (RunConfigError) unless `saved` is the record of `config` (config_changes); the
    message starts with `what` (e.g. "RUN holds a finished run of") and names each change."""
    changes = config_changes(saved, config, extra)
    if changes:
        detail = "; ".join(f"{k}: saved {old!r}, new {new!r}" for k, (old, new) in changes.items())
        raise RunConfigError(
            f"{what} another config ({detail}): run with the saved settings, or use a new --out"
        )


def finished_or_refuse(
    out: str | Path,
    config: Any,
    section: str | tuple[str, ...],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The metrics of the finished run of `config` in `out`; None when `out` holds no
    finished run; RunConfigError when it holds one of another config.

    section: where RUN/config.json keeps the config ("train", "finetune", ("grid", "base")).
    extra: more values the run is defined by, saved beside the config's fields in `section`.
    """
    run = Path(out)
    if not (run / METRICS).is_file():
        return None
    path = run / CONFIG
    try:
        saved: Any = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise RunConfigError(f"{path}: the finished run's config is unreadable: {err}") from err
    for key in (section,) if isinstance(section, str) else section:
        saved = saved.get(key) if isinstance(saved, dict) else None
    if not isinstance(saved, dict):
        name = "/".join((section,) if isinstance(section, str) else section)
        raise RunConfigError(
            f"{run} holds a finished run of another kind ({path} has no {name!r} section): "
            "use a new --out"
        )
    check_same_config(saved, config, f"{run} holds a finished run of", extra)
    log.info("%s: already finished (use a new --out to run again)", run)
    return json.loads((run / METRICS).read_text())
