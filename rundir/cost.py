"""What a run costs besides wall time: the peak memory and CPU time while it trained, the
threads torch had for it, and the bytes it keeps.

Peak memory is the process's resident set sampled every 50 ms (Linux /proc/self/statm; else
the process's lifetime maximum from getrusage), and on a GPU the allocator's peak. A process
that runs many cells (compare) resets the GPU peak per cell; the resident peak is per cell
only in the sampled form.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from pathlib import Path
from typing import Any

from snowfire.options import threads_record

_STATM = Path("/proc/self/statm")


def _rss() -> int:
    """Resident bytes now (or the lifetime peak where /proc is absent)."""
    if _STATM.is_file():
        return int(_STATM.read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


class PeakMemory:
    """`with PeakMemory(device) as peak: ...` (or start() ... stop()), then `peak.record()`:
    {"peak_rss_mb", "cpu_seconds" (the process's CPU time over every thread meanwhile),
    "peak_gpu_mb" (GPU only), "threads" (torch's intra-op and inter-op threads and the budget
    that set them: options.threads_record)}."""

    def __init__(self, device, interval: float = 0.05) -> None:
        self.device, self.interval = device, interval
        self.peak = 0
        self._stop = threading.Event()

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, _rss())

    def __enter__(self) -> PeakMemory:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> PeakMemory:
        import torch

        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        self.peak = _rss()
        self.cpu = time.process_time()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> PeakMemory:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())
        self.cpu = time.process_time() - self.cpu
        return self

    def record(self) -> dict[str, Any]:
        import torch

        out = {"peak_rss_mb": round(self.peak / 2**20, 1), "cpu_seconds": round(self.cpu, 1)}
        if self.device.type == "cuda":
            out["peak_gpu_mb"] = round(torch.cuda.max_memory_allocated(self.device) / 2**20, 1)
        return out | {"threads": threads_record()}


def saved_bytes(run: Path, files: list[str]) -> int:
    """Bytes of these files and folders of a run directory (what reloads it)."""
    total = 0
    for name in files:
        path = Path(run) / name
        if path.is_dir():
            total += sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            total += path.stat().st_size
    return total
