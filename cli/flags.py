"""Command-line flags derived from a config dataclass, so a default or a help text lives once.

Every field of the config (see `options.option`) becomes `--field-name` (underscores as
dashes), with the field's type, help and choices; a field without a default is a
required flag. Flags not given stay out of the parsed namespace (argparse.SUPPRESS), so
`config_from_args` leaves the dataclass's own defaults in place and its `__post_init__`
checks every value. By type:

    bool                 --flag / --no-flag
    int, float, str      --flag VALUE (X | None: the same, None when not given; a Path: a str)
    list[X]              --flag V1,V2 or --flag V1 --flag V2 (repeatable)
    dict                 --flag JSON (an object)
    str | dict           --flag VALUE (a path; the object form is for job params)

`progress: bool = True` is shown as `--quiet` (sets it False), as every command spells it.
The service's settings (pydantic-settings, api/settings.py) become flags the same way
(`add_settings_arguments`), added only when `serve` or `up` is parsed (`DeferredParser`):
the other commands never import pydantic.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only to name the type: pydantic loads when a command needs it
    from pydantic_settings import BaseSettings

from snowfire.options import is_union, unwrap_optional

#: Fields shown under another flag: field -> (flag, action, help).
_ALIASES = {"progress": ("--quiet", "store_false", "no progress bar")}
#: How several values of a list flag are written, for its error message.
_EXAMPLES = {int: "2,3,4", float: "2e-5,3e-5"}


def _path_or_object(hint: Any) -> bool:
    """`str | dict`: on the command line a path to a file holding the object."""
    return is_union(hint) and set(typing.get_args(hint)) - {type(None)} == {str, dict}


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
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        flag = (flags or {}).get(f.name, "--" + f.name.replace("_", "-"))
        where = f"{cls.__name__}.{f.name}"
        _add_flag(
            parser,
            flag,
            f.name,
            hints[f.name],
            help_text,
            required=required,
            choices=f.metadata.get("choices"),
            where=where,
        )


def add_settings_arguments(
    parser: argparse.ArgumentParser, cls: type[BaseSettings], *, skip: tuple[str, ...] = ()
) -> None:
    """Add one flag per field of pydantic-settings class `cls` (except `skip`) to `parser`,
    its description as the help, with the default and the environment variable it reads."""
    prefix = cls.model_config.get("env_prefix", "")
    for name, field in cls.model_fields.items():
        if name in skip:
            continue
        if not field.description:
            raise TypeError(f"{cls.__name__}.{name}: no description to show in --help")
        default = "" if field.default is None else f"default: {field.default}; "
        help_text = f"{field.description} ({default}env {prefix}{name.upper()})"
        _add_flag(
            parser,
            "--" + name.replace("_", "-"),
            name,
            field.annotation,
            help_text,
            required=field.is_required(),
            where=f"{cls.__name__}.{name}",
        )


def _add_flag(
    parser: argparse.ArgumentParser,
    flag: str,
    dest: str,
    hint: Any,
    help_text: str,
    *,
    required: bool,
    where: str,
    choices: tuple | None = None,
) -> None:
    """One flag for a field of type `hint`; not given, it stays out of the namespace."""
    kw: dict[str, Any] = {"dest": dest, "help": help_text.replace("%", "%%")}
    kw["default"] = argparse.SUPPRESS
    if required:
        kw["required"] = True
    if dest in _ALIASES:
        flag, action, extra = _ALIASES[dest]
        parser.add_argument(flag, action=action, dest=dest, default=argparse.SUPPRESS, help=extra)
        return
    base, _ = unwrap_optional(hint)
    origin = typing.get_origin(base)
    if base is bool:
        kw["action"] = argparse.BooleanOptionalAction
    elif origin is list:
        (item,) = typing.get_args(base)
        item = str if _path_or_object(item) else item
        kw.update(action="extend", type=_items(item, choices), metavar=dest.upper())
        choices = None  # checked per value by the type
    elif base is dict or origin is dict:
        kw.update(type=_json_object, metavar="JSON")
    elif _path_or_object(base):
        kw["type"] = str
    elif base in (int, float, str):
        kw["type"] = base
    elif base is Path:  # the config takes the path as given (a str), as from a job's params
        kw["type"] = str
    elif origin is typing.Literal:
        kw["choices"] = typing.get_args(base)
    else:
        raise TypeError(f"{where}: no flag for type {hint!r}")
    if choices:
        kw["choices"] = tuple(choices)
    parser.add_argument(flag, **kw)


def _items(kind: type, choices: tuple | None):
    """A list flag's values: repeat the flag, or give several at once, comma-separated."""

    def parse(text: str) -> list:
        try:
            values = [kind(v) for v in text.split(",") if v]
        except ValueError as err:
            raise argparse.ArgumentTypeError(
                f"expected {kind.__name__} values like {_EXAMPLES.get(kind, 'a,b')}: {err}"
            ) from err
        wrong = [v for v in values if choices and v not in choices]
        if wrong:
            raise argparse.ArgumentTypeError(
                f"expected one of {', '.join(map(str, choices or ()))}, got {wrong[0]!r}"
            )
        return values

    parse.__name__ = kind.__name__  # argparse names the type in its error message
    return parse


def config_from_args(cls: type, args: argparse.Namespace, **extra: Any):
    """The config from parsed flags: the given ones, `extra`, dataclass defaults for the rest."""
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    given = {k: v for k, v in vars(args).items() if k in names}
    return cls(**given, **extra)


class DeferredParser(argparse.ArgumentParser):
    """A command's parser whose flags are added when it is first used (its arguments parsed or
    its help shown), by `add_flags(parser)`: building the whole command line then imports
    nothing a command derives its flags from (e.g. serve's pydantic settings)."""

    def __init__(self, *args: Any, add_flags=None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._add_flags = add_flags

    def with_flags(self) -> DeferredParser:
        """This parser with its flags added (once)."""
        add, self._add_flags = self._add_flags, None
        if add is not None:
            add(self)
        return self

    def parse_known_args(self, args=None, namespace=None):
        return super(DeferredParser, self.with_flags()).parse_known_args(args, namespace)

    def format_usage(self) -> str:
        return super(DeferredParser, self.with_flags()).format_usage()

    def format_help(self) -> str:
        return super(DeferredParser, self.with_flags()).format_help()
