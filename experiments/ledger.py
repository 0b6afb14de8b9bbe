"""WORK/ledger.jsonl: what each invocation of experiments/results.py cost, so a page made over
many interrupted runs states its whole cost (wall time, CPU time, on what machine).

Each invocation writes a line when it starts, a "beat" every BEAT seconds with its time so
far, and one when it ends (interrupted or not: the end is written by a `finally`, and SIGTERM
becomes an exit). A process killed outright (SIGKILL, a power cut, the end of a session)
leaves no end: it is counted up to its last beat (at most BEAT seconds of it lost) and the
page says how many were; one killed before its first beat is counted apart, not guessed.

CPU time is the process's own (`resource.getrusage`: every thread torch ran, children too), so
on a machine where something else ran at the same time it stays the work of these commands,
while the wall time does not. Each record also carries what other processes spent on the
same CPUs meanwhile (`others_cpu_s`, from /proc/stat: snowfire.rundir.HostLoad), so the
page states how much of the machine was not this run's.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

LEDGER = "ledger.jsonl"
#: Seconds between an invocation's beats.
BEAT = 60.0


def _cpu_seconds() -> float:
    """CPU seconds of this process and every process under it: the children it has waited
    for (getrusage), and each one still running with what it has waited for in turn (Linux
    /proc). compare's cells run in a fork server's children, which this process never waits
    for: without the walk their CPU time would count as other processes' load."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + _live_descendants()


def _live_descendants(proc: Path = Path("/proc")) -> float:
    """utime + stime + cutime + cstime of every running descendant of this process (0 where
    /proc is absent). A process that ends moves into its waiting parent's cutime/cstime."""
    parent_of, times = {}, {}
    for stat in proc.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # ended while we looked
            continue
        fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "
        pid = int(stat.parent.name)
        parent_of[pid] = int(fields[1])
        times[pid] = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    mine, found, frontier = os.getpid(), set(), [os.getpid()]
    while frontier:
        pid = frontier.pop()
        kids = [k for k, p in parent_of.items() if p == pid and k not in found]
        found.update(kids)
        frontier += kids
    found.discard(mine)
    return sum(times[k] for k in found) / os.sysconf("SC_CLK_TCK")


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
def invocation(work: Path, argv: list[str], beat: float = BEAT) -> Iterator[None]:
    """Record one invocation's start, its beats and its end (wall, CPU and others' CPU
    seconds) in WORK/ledger.jsonl."""
    from snowfire.rundir import HostLoad

    path, run = Path(work) / LEDGER, uuid.uuid4().hex[:12]
    with HostLoad(own_cpu=_cpu_seconds) as clock:  # children's CPU time counts as ours
        start = {"id": run, "event": "start", "at": time.time(), "argv": argv}
        _append(path, start | {"machine": machine()})
        stop = threading.Event()

        def so_far() -> dict:
            wall, cpu, others = clock.elapsed()
            out = {"at": time.time(), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}
            return out if others is None else out | {"others_cpu_s": round(others, 1)}

        def _beat() -> None:
            while not stop.wait(beat):
                _append(path, {"id": run, "event": "beat", **so_far()})

        beats = threading.Thread(target=_beat, daemon=True)
        beats.start()

        def _term(signum, frame):  # a polite kill ends like ^C: through the finally below
            raise SystemExit(128 + signum)

        before = signal.signal(signal.SIGTERM, _term)
        status = "interrupted"
        try:
            yield
            status = "finished"
        finally:
            stop.set()
            beats.join()
            signal.signal(signal.SIGTERM, before)
            _append(path, {"id": run, "event": "end", "status": status, **so_far()})


@dataclass(frozen=True)
class Total:
    invocations: int
    wall_s: float
    cpu_s: float
    unrecorded: int  # killed outright before their first beat: not counted
    machines: tuple[str, ...]
    killed: int = 0  # killed outright after a beat: counted up to their last one
    others_cpu_s: float | None = None  # other processes on the same CPUs meanwhile

    def sentence(self) -> str:
        """One line for the page."""
        if not self.invocations:
            return "No invocation of this script is recorded in WORK/ledger.jsonl."
        s = (
            f"Its cost over {self.invocations} invocation(s): {self.wall_s / 3600:.2f} h of wall "
            f"time, {self.cpu_s / 3600:.2f} CPU-hours, on {' and '.join(self.machines)}"
        )
        if self.killed:
            s += (
                f"; {self.killed} of them killed outright, counted up to their last record "
                f"(at most {BEAT:.0f} s each not counted)"
            )
        if self.unrecorded:
            s += f"; {self.unrecorded} more were killed before recording their time (not counted)"
        if self.others_cpu_s is not None:
            s += (
                f". Other processes used {self.others_cpu_s / 3600:.2f} CPU-hours of the same "
                "cores meanwhile"
            )
        return s + "."


def total(work: Path) -> Total:
    """Every invocation recorded in WORK/ledger.jsonl, summed; a line that is not JSON (a write
    cut short) is an error naming the file and line."""
    path = Path(work) / LEDGER
    starts: dict[str, dict] = {}
    ends: dict[str, dict] = {}  # an invocation's last record: its end, else its last beat
    if path.is_file():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                # the beats stop before the end is written, so the last record is the latest
                (starts if rec["event"] == "start" else ends)[rec["id"]] = rec
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(
                    f"{path}:{n}: expected a JSON ledger record, got {line[:80]!r} ({e})"
                ) from e
    closed = [ends[k] for k in starts if k in ends]
    others = [e["others_cpu_s"] for e in closed if "others_cpu_s" in e]
    return Total(
        invocations=len(closed),
        wall_s=sum(e["wall_s"] for e in closed),
        cpu_s=sum(e["cpu_s"] for e in closed),
        unrecorded=sum(1 for k in starts if k not in ends),
        machines=tuple(dict.fromkeys(s["machine"] for s in starts.values())),
        killed=sum(1 for e in closed if e["event"] == "beat"),
        others_cpu_s=sum(others) if closed and len(others) == len(closed) else None,
    )
