"""What made an artifact: versions of everything that can change the numbers."""

from __future__ import annotations

import platform
from importlib import metadata

PACKAGES = (
    "snowfire",
    "torch",
    "transformers",
    "tokenizers",
    "zarr",
    "numpy",
    "h5py",
    "pytorch-crf",
    "safetensors",
)


def versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """{package: version} for the installed ones, plus the Python version."""
    out = {"python": platform.python_version()}
    for package in packages:
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return out
