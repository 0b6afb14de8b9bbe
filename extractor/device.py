"""Where models run when the user names no device: the GPU when there is one, else the CPU.
One default for the encoders of an extraction, the ❄️ trainer and the 🔥 trainer and its
predictions, so the two sides of a comparison never run on different devices by accident."""

from __future__ import annotations

#: The help of every config's `device` field: what it takes, and the default below.
DEVICE_HELP = "cpu, cuda, cuda:1 (default: the GPU when present)"


def default_device(device: str | None = None):
    """`torch.device(device)` for a device the user named (cpu, cuda, cuda:1, mps), else cuda
    when torch sees a GPU, else cpu. torch is imported here, on first use."""
    import torch

    if device:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
