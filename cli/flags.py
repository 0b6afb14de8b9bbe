"""Command-line flags derived from a config dataclass, so a default or a help text lives once.

Every field of the config (see `options.option`) becomes `--field-name` (underscores as
dashes), with the field's type, help and choices; a field without a default is a
required flag. Flags not given stay out of the parsed namespace (argparse.SUPPRESS), so
`config_from_args` leaves the dataclass's own defaults in place and its `__post_init__`
checks every value. By type:

    bool                 --flag / --no-flag
    int, float, str      --flag VALUE (X | None: the same, None when not given)
    list[str]            --flag VALUE, repeatable
    dict                 --flag JSON (an object)

`progress: bool = True` is shown as `--quiet` (sets it False), as every command spells it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from typing import Any

#: Fields shown under another flag: field -> (flag, action, constant stored).
_ALIASES = {"progress": ("--quiet", "store_false", "no progress bar")}


def _unwrap(hint: Any) -> Any:
    """`X | None` -> X; other hints unchanged."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r} ({err})") from err
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def add_config_arguments(
    parser: argparse.ArgumentParser,
    cls: type,
    *,
    skip: tuple[str, ...] = (),
    flags: dict[str, str] | None = None,
) -> None:
    """Add one flag per field of dataclass `cls` (except `skip`) to `parser`.

    flags: field -> flag name where the flag is spelled otherwise (e.g. a shorter name).
    """
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip or not f.init:
            continue
        help_text = f.metadata.get("help")
        if help_text is None:
            raise TypeError(f"{cls.__name__}.{f.name}: no metadata['help'] to show in --help")
        if f.default not in (dataclasses.MISSING, None) and not isinstance(f.default, bool):
            help_text += f" (default: {f.default})"
        help_text = help_text.replace("%", "%%")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        kw: dict[str, Any] = {"dest": f.name, "help": help_text, "default": argparse.SUPPRESS}
        if required:
            kw["required"] = True
        if f.name in _ALIASES:
            flag, action, extra = _ALIASES[f.name]
            parser.add_argument(flag, action=action, dest=f.name, default=argparse.SUPPRESS,
                                help=extra)  # fmt: skip
            continue
        flag = (flags or {}).get(f.name, "--" + f.name.replace("_", "-"))
        base = _unwrap(hints[f.name])
        origin = typing.get_origin(base)
        if base is bool:
            kw["action"] = argparse.BooleanOptionalAction
        elif origin is list:
            (item,) = typing.get_args(base)
            kw.update(action="append", type=item, metavar=f.name.upper())
        elif base is dict or origin is dict:
            kw.update(type=_json_object, metavar="JSON")
        elif base in (int, float, str):
            kw["type"] = base
        elif typing.get_origin(base) is typing.Literal:
            kw["choices"] = typing.get_args(base)
        else:
            raise TypeError(f"{cls.__name__}.{f.name}: no flag for type {hints[f.name]!r}")
        if f.metadata.get("choices"):
            kw["choices"] = tuple(f.metadata["choices"])
        parser.add_argument(flag, **kw)


def config_from_args(cls: type, args: argparse.Namespace, **extra: Any):
    """The config from parsed flags: the given ones, `extra`, dataclass defaults for the rest."""
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    given = {k: v for k, v in vars(args).items() if k in names}
    return cls(**given, **extra)
