"""Names a package exports but loads on first use (PEP 562), so importing the package stays
light: the CLI reads a config without loading torch, a worker starts without pydantic, `import
snowfire` loads none of the heavy libraries.

    _WHERE = {"TrainConfig": ".config:TrainConfig", "train": ".trainer:train"}
    __all__ = sorted(_WHERE)
    __getattr__ = lazy_exports(__name__, _WHERE)

Each value is an entry-point reference: "module:attr" names an attribute, "module" alone the
module itself; a module starting with "." is relative to the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package` that loads each name of `where` (name -> "module:attr"
    or "module") on first use and binds it on the package, so later uses are plain attribute
    reads; any other name is an AttributeError, as for a module without `__getattr__`."""
    bad = sorted(name for name, ref in where.items() if not ref or ref.endswith(":"))
    if bad:
        raise ValueError(f"{package}: expected 'module:attr' or 'module' for {bad}")

    def __getattr__(name: str) -> Any:
        ref = where.get(name)
        if ref is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = ref.partition(":")
        loaded = importlib.import_module(module, package)
        value = getattr(loaded, attr) if attr else loaded
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
