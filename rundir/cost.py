"""What a run costs besides wall time: the peak memory and CPU time while it trained, the
threads torch had for it, the bytes it keeps, and whether anything else used its cores.

Peak memory is the process's resident set sampled every 50 ms (Linux /proc/self/statm; else
the process's lifetime maximum from getrusage), and on a GPU the allocator's peak. The resident
set is the whole process's: what an earlier run in the same process left (memory the allocator
kept, feature shards still mapped) counts too. So a record says whether the run was the first
measured in its process (`peak_rss_own`); compare trains each cell in a process of its own
(compare/cellproc.py) so that its cells' peaks are their own.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from snowfire.options import threads_record

_STATM = Path("/proc/self/statm")
_STAT = Path("/proc/stat")
#: Fields of a /proc/stat cpu line that count as busy: user nice system (idle iowait) irq
#: softirq steal; guest time is inside user already.
_BUSY = (0, 1, 2, 5, 6, 7)
#: Above this share of its cores' time used by other processes, an attempt shared its cores.
SHARED = 0.1


def _rss() -> int:
    """Resident bytes now (or the lifetime peak where /proc is absent)."""
    if _STATM.is_file():
        return int(_STATM.read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


#: How many PeakMemory measures this process has started: only its first one's resident set
#: holds nothing an earlier run left.
_started = {"count": 0}


class PeakMemory:
    """`with PeakMemory(device) as peak: ...` (or start() ... stop()), then `peak.record()`:
    {"peak_rss_mb", "peak_rss_own" (no earlier measure in this process: the peak is this run's
    alone; else an upper bound), "cpu_seconds" (the process's CPU time over every thread
    meanwhile), "peak_gpu_mb" (GPU only), "threads" (torch's intra-op and inter-op threads and
    the budget that set them: options.threads_record)}.

    A run trained in pieces (paused at a race's rung, or killed, then resumed) keeps
    `carried()` in its checkpoint and passes it back as `earlier` with `resumed=True`: its
    record is then the highest piece's peak, own only if every piece's was (a resumed run
    without one: its earlier pieces' peaks are unknown, so not own)."""

    def __init__(
        self,
        device,
        interval: float = 0.05,
        *,
        earlier: dict[str, Any] | None = None,
        resumed: bool = False,
    ) -> None:
        self.device, self.interval = device, interval
        self.earlier, self.resumed = earlier, resumed
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
        self.own = _started["count"] == 0
        _started["count"] += 1
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

    def carried(self) -> dict[str, Any]:
        """The peak of the pieces so far, this one's up to now included: what a checkpoint
        keeps for the next piece ({"peak_rss_mb", "peak_rss_own"})."""
        running = not self._stop.is_set()
        mb, own = round(max(self.peak, _rss() if running else 0) / 2**20, 1), self.own
        if self.resumed:
            before = self.earlier or {"peak_rss_mb": 0.0, "peak_rss_own": False}
            mb, own = max(mb, before["peak_rss_mb"]), own and before["peak_rss_own"]
        return {"peak_rss_mb": mb, "peak_rss_own": own}

    def record(self) -> dict[str, Any]:
        import torch

        out = self.carried() | {"cpu_seconds": round(self.cpu, 3)}
        if self.device.type == "cuda":
            out["peak_gpu_mb"] = round(torch.cuda.max_memory_allocated(self.device) / 2**20, 1)
        return out | {"threads": threads_record()}


def busy_seconds(cpus: set[int] | None, stat: Path = _STAT) -> float | None:
    """Seconds the CPUs in `cpus` (every CPU for None) have been busy since boot, by anyone
    (Linux /proc/stat); None where the file is absent."""
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return None
    ticks = 0
    for line in lines:
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu":
            continue
        if cpus is None or int(name[3:]) in cpus:
            ticks += sum(int(fields[i]) for i in _BUSY if i < len(fields))
    return ticks / os.sysconf("SC_CLK_TCK")


class HostLoad:
    """`with HostLoad() as load: ...`, then `load.record()`: the wall and CPU seconds of this
    process meanwhile and those other processes spent on the same CPUs (its affinity set), so
    a cost measured beside other work says so: {"cores", "wall_seconds", "cpu_seconds",
    "others_cpu_seconds", "others_share" (of the cores' time), "shared" (share > SHARED)}, or
    {} where the OS does not say (no /proc/stat). `elapsed()` reads the same while still
    inside; `own_cpu` is the clock of this process's CPU time (its threads by default)."""

    def __init__(self, stat: Path = _STAT, own_cpu: Callable[[], float] = time.process_time):
        self.stat, self.own_cpu = stat, own_cpu
        self.cpus = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        self._end: tuple[float, float, float | None] | None = None

    def _now(self) -> tuple[float, float, float | None]:
        return time.perf_counter(), self.own_cpu(), busy_seconds(self.cpus, self.stat)

    def __enter__(self) -> HostLoad:
        self._start, self._end = self._now(), None
        return self

    def __exit__(self, *exc) -> None:
        self._end = self._now()

    def elapsed(self) -> tuple[float, float, float | None]:
        """(wall, own CPU, others' CPU seconds: None where the OS does not say) since the
        start, up to the end once it is over."""
        (w0, c0, b0), (w1, c1, b1) = self._start, self._end or self._now()
        others = None if b0 is None or b1 is None else max(0.0, b1 - b0 - (c1 - c0))
        return w1 - w0, c1 - c0, others  # the ticks' rounding can dip below zero: 0 then

    def record(self) -> dict[str, Any]:
        wall, cpu, others = self.elapsed()
        if others is None:
            return {}
        cores = len(self.cpus) if self.cpus is not None else (os.cpu_count() or 1)
        share = others / (wall * cores) if wall > 0 else 0.0
        return {
            "cores": cores,
            "wall_seconds": round(wall, 2),
            "cpu_seconds": round(cpu, 2),
            "others_cpu_seconds": round(others, 2),
            "others_share": round(share, 3),
            "shared": share > SHARED,
        }


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
