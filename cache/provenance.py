"""What made an artifact: versions of everything that can change the numbers."""

from __future__ import annotations

import platform
import sys
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
    """{package: version} for the installed ones, plus the Python version and, where torch is
    loaded, the CPU kernels it runs ("torch_cpu": AVX2, AVX512, ...): a run repeated on a CPU
    with other kernels differs in the last bits, and its weights' hash with them."""
    out = {"python": platform.python_version()}
    for package in packages:
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    torch = sys.modules.get("torch")  # never imported here: nothing heavy for a record
    if torch is not None and hasattr(torch.backends, "cpu"):
        out["torch_cpu"] = torch.backends.cpu.get_cpu_capability()
    return out
