"""What a config field's type hint admits, read one way by everything that reads it: the checks
of `options.check`, the command-line flags (cli/flags.py) and the job parameter models
(jobs/params.py).

    unwrap_optional(int | None)          -> (int, True)
    unwrap_optional(str | dict | None)   -> (str | dict, True)   a path, or the object inline
    unwrap_optional(list[str])           -> (list[str], False)
"""

from __future__ import annotations

import functools
import operator
import types
import typing
from typing import Any


def is_union(hint: Any) -> bool:
    """Whether `hint` is a union (`X | Y`, `typing.Union[X, Y]`, `X | None`)."""
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def unwrap_optional(hint: Any) -> tuple[Any, bool]:
    """(`X`, True) for `X | None`, where `X` is the union of every other member (`str | dict |
    None` gives `str | dict`, never just its first member); (`hint`, False) for a hint that does
    not admit None."""
    if not is_union(hint):
        return hint, False
    args = typing.get_args(hint)
    rest = [a for a in args if a is not type(None)]
    if len(rest) == len(args):
        return hint, False
    return functools.reduce(operator.or_, rest), True
