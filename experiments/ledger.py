"""WORK/ledger.jsonl: what each invocation of experiments/results.py cost, so a page made over
many interrupted runs states its whole cost (wall time, CPU time, on what machine).

Each invocation writes a line when it starts and one when it ends (interrupted or not: the end
is written by a `finally`, and SIGTERM becomes an exit). A process killed outright (SIGKILL, a
power cut) leaves a start without an end; the page counts those apart and says how many there
were, rather than guessing their time.

CPU time is the process's own (`resource.getrusage`: every thread torch ran, children too), so
on a machine where something else ran at the same time it stays the work of these commands,
while the wall time does not: `--note` on the page says so.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import signal
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

LEDGER = "ledger.jsonl"


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _append(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def machine() -> str:
    """The machine the time was spent on: its processor, the cores this process may use."""
    cores = cores_usable()
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [
            ln.split(":", 1)[1].strip()
            for ln in cpuinfo.read_text().splitlines()
            if ln.startswith("model name")
        ]
        model = names[0] if names else model
    return f"{model}, {cores} CPU cores"


def cores_usable() -> int:
    """The CPU cores this process may use: its affinity within its cgroup's quota (the count
    the thread budget divides, snowfire.options.thread_budget)."""
    from snowfire.options import thread_budget

    return thread_budget().cores


@contextmanager
def invocation(work: Path, argv: list[str]) -> Iterator[None]:
    """Record one invocation's start and end (its wall and CPU seconds) in WORK/ledger.jsonl."""
    path, run = Path(work) / LEDGER, uuid.uuid4().hex[:12]
    start, cpu0 = time.time(), _cpu_seconds()
    _append(path, {"id": run, "event": "start", "at": start, "argv": argv, "machine": machine()})

    def _term(signum, frame):  # a polite kill ends like ^C: through the finally below
        raise SystemExit(128 + signum)

    before = signal.signal(signal.SIGTERM, _term)
    status = "interrupted"
    try:
        yield
        status = "finished"
    finally:
        signal.signal(signal.SIGTERM, before)
        end = time.time()
        _append(
            path,
            {
                "id": run,
                "event": "end",
                "at": end,
                "status": status,
                "wall_s": round(end - start, 1),
                "cpu_s": round(_cpu_seconds() - cpu0, 1),
            },
        )


@dataclass(frozen=True)
class Total:
    invocations: int
    wall_s: float
    cpu_s: float
    unrecorded: int  # invocations that started and never wrote their end (killed outright)
    machines: tuple[str, ...]

    def sentence(self) -> str:
        """One line for the page."""
        if not self.invocations:
            return "No invocation of this script is recorded in WORK/ledger.jsonl."
        s = (
            f"Its cost over {self.invocations} invocation(s): {self.wall_s / 3600:.2f} h of wall "
            f"time, {self.cpu_s / 3600:.2f} CPU-hours, on {'; '.join(self.machines)}"
        )
        if self.unrecorded:
            s += f"; {self.unrecorded} more were killed before recording their time (not counted)"
        return s + "."


def total(work: Path) -> Total:
    """Every invocation recorded in WORK/ledger.jsonl, summed; a line that is not JSON (a write
    cut short) is an error naming the file and line."""
    path = Path(work) / LEDGER
    starts: dict[str, dict] = {}
    ends: dict[str, dict] = {}
    if path.is_file():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                (starts if rec["event"] == "start" else ends)[rec["id"]] = rec
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(
                    f"{path}:{n}: expected a JSON ledger record, got {line[:80]!r} ({e})"
                ) from e
    closed = [ends[k] for k in starts if k in ends]
    return Total(
        invocations=len(closed),
        wall_s=sum(e["wall_s"] for e in closed),
        cpu_s=sum(e["cpu_s"] for e in closed),
        unrecorded=sum(1 for k in starts if k not in ends),
        machines=tuple(dict.fromkeys(s["machine"] for s in starts.values())),
    )
