"""How many threads torch may use in this process: one budget, decided here.

Two jobs on two cores, each with torch's default thread count, ran more than 20x slower than
alone instead of 2x: each process starts one OpenMP thread per core of the host, and the threads
of one spin at their barriers while the other's hold the cores. So every process that runs
torch takes its threads from a budget:

    cores   = min(affinity, floor(quota)), at least 1
    threads = the override, when one is given; else max(1, cores // share)

affinity  the CPUs this process may run on (os.sched_getaffinity: taskset, a cpuset)
quota     the CPU bandwidth its cgroup may use, in CPUs (docker --cpus, compose `cpus:`, systemd
          CPUQuota): cgroup v2 `cpu.max` "QUOTA PERIOD" ("max QUOTA": none), cgroup v1
          `cpu.cfs_quota_us` / `cpu.cfs_period_us` (-1: none); the tightest of the process's
          cgroup and its ancestors. torch counts the host's cores and knows neither: in a
          container given 2 CPUs of a 64-core host it would start 64 threads.
share     how many torch processes one launcher starts side by side on these cores: it sets
          SNOWFIRE_THREAD_SHARE for each (`snowfire up`, the compose stack, a worker for its
          runner; nested launchers multiply)
override  --threads / SNOWFIRE_THREADS; a Ray task's num_cpus; OMP_NUM_THREADS set outside
          (torch honours it, so do we) unless a launcher gave a share

Floor, not ceiling: a thread beyond the quota is throttled, and a throttled thread holds every
other one at the next barrier. At least one thread: single-threaded processes share the cores
fairly (the kernel time-slices them; there is no barrier to spin at).

`use_threads()` applies the budget (torch.set_num_threads; set_num_interop_threads once per
process, as torch allows it only before inter-op work; OMP_NUM_THREADS and MKL_NUM_THREADS for
the processes this one starts) and logs why. `threads_env(n)` is what a launcher adds to the
environment of each of `n` children; `threads_record()` what a run records. No torch import at
module level: a launcher decides without loading it.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

log = logging.getLogger(__name__)

#: The override (the `--threads` flag sets it for the process and its children).
THREADS_ENV = "SNOWFIRE_THREADS"
#: How many torch processes share the cores: set by a launcher for each child.
SHARE_ENV = "SNOWFIRE_THREAD_SHARE"
#: The thread counts of the libraries under torch, set for children.
LIBRARY_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
#: The cgroup files, under the cgroup's directory.
CPU_MAX = "cpu.max"
CFS_QUOTA, CFS_PERIOD = "cpu.cfs_quota_us", "cpu.cfs_period_us"


@dataclass(frozen=True)
class ThreadBudget:
    """The threads of one process and why (see the module's docstring for the rule)."""

    threads: int  # torch's intra-op (and inter-op) threads
    cores: int  # the cores available to the process: min(affinity, floor(quota))
    affinity: int | None  # CPUs in its affinity mask (None: the OS does not say)
    quota: float | None  # its cgroup's CPU quota in CPUs (None: no limit found)
    share: int = 1  # torch processes its launcher started on these cores
    override: str | None = None  # what fixed `threads`, e.g. "SNOWFIRE_THREADS=2"

    def why(self) -> str:
        """One line: the count and where it came from."""
        n = f"{self.threads} thread{'s' if self.threads != 1 else ''}"
        found = f"affinity {self.affinity if self.affinity is not None else 'unknown'}, "
        found += f"cgroup quota {self.quota:g} CPUs" if self.quota else "no cgroup quota"
        available = f"{self.cores} cores available ({found})"
        if self.override is not None:
            return f"{n}: {self.override} ({available})"
        return f"{n}: {available}" + (f", split among {self.share}" if self.share > 1 else "")

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"why": self.why()}

    def divided(self, n: int) -> ThreadBudget:
        """The budget of each of `n` processes started side by side on these cores."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"divided: expected a number of processes >= 1, got {n!r}")
        if self.override is not None:
            each = max(1, self.threads // n)
            return replace(
                self, threads=each, share=self.share * n, override=f"{THREADS_ENV}={each}"
            )
        return replace(self, threads=max(1, self.cores // (self.share * n)), share=self.share * n)


def affinity_cpus() -> int | None:
    """CPUs this process may run on (None where the OS has no sched_getaffinity)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return None


def cgroup_quota(root: str | os.PathLike = "/") -> float | None:
    """The CPU quota, in CPUs, of this process's cgroup and each ancestor, the tightest (cgroup
    v2 and v1 alike: a hybrid host has both); None when no level sets one or nothing is
    readable. `root`: where /proc and /sys are (a fixture tree in tests)."""
    root = Path(root)
    paths = _own_cgroups(root)
    quotas = []
    for mount_root, mountpoint, version in _cpu_mounts(root):
        path = paths.get(version)
        if path is None:
            continue
        for folder in _levels(root, mount_root, mountpoint, path):
            quota = _read_v2(folder / CPU_MAX) if version == 2 else _read_v1(folder)
            if quota is not None:
                quotas.append(quota)
    return min(quotas, default=None)


def _own_cgroups(root: Path) -> dict[int, str]:
    """{2: the process's v2 cgroup path, 1: its v1 `cpu` controller's path} from
    /proc/self/cgroup ("ID:CONTROLLERS:PATH" lines; v2's is "0::PATH"); {2: "/"} where the
    file is unreadable (a namespaced container's own cgroup)."""
    try:
        text = (root / "proc/self/cgroup").read_text()
    except OSError:
        return {2: "/", 1: "/"}
    out: dict[int, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        ident, controllers, path = parts
        if ident == "0" and controllers == "":
            out[2] = path
        elif "cpu" in controllers.split(","):
            out[1] = path
    return out


def _cpu_mounts(root: Path) -> list[tuple[str, str, int]]:
    """(mount root, mount point, cgroup version) of the cgroup2 mount and the v1 mount holding
    the `cpu` controller, from /proc/self/mountinfo ("ID PARENT DEV ROOT POINT OPTIONS ... -
    FSTYPE SOURCE SUPER"); the usual mount points where it is unreadable."""
    try:
        text = (root / "proc/self/mountinfo").read_text()
    except OSError:
        usual = ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct")
        return [("/", "/sys/fs/cgroup", 2)] + [("/", point, 1) for point in usual]
    out = []
    for line in text.splitlines():
        before, sep, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if not sep or len(fields) < 5 or len(tail) < 3:
            continue
        mount_root, point = _unescape(fields[3]), _unescape(fields[4])
        if tail[0] == "cgroup2":
            out.append((mount_root, point, 2))
        elif tail[0] == "cgroup" and "cpu" in tail[2].split(","):
            out.append((mount_root, point, 1))
    return out


def _unescape(field: str) -> str:
    """mountinfo writes a space, tab, newline and backslash in a path as octal (\\040)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def _levels(root: Path, mount_root: str, mountpoint: str, path: str) -> list[Path]:
    """The directory of cgroup `path` under a mount of `mount_root` at `mountpoint`, then each
    ancestor up to the mount. A path outside the mount's root (a namespaced view) is the
    mount's own directory."""
    here, top = PurePosixPath(path), PurePosixPath(mount_root)
    rel = here.relative_to(top) if here.is_relative_to(top) else PurePosixPath(".")
    base = root / mountpoint.lstrip("/")
    return [base / rel, *(base / parent for parent in rel.parents)]


def _read_v2(file: Path) -> float | None:
    """cgroup v2 cpu.max: "QUOTA PERIOD" in microseconds, QUOTA "max" for none."""
    try:
        text = file.read_text().strip()
    except OSError:
        return None
    parts = text.split()
    if len(parts) == 2 and parts[0] == "max":
        return None
    return _ratio(file, text, *parts) if len(parts) == 2 else _malformed(file, text)


def _read_v1(folder: Path) -> float | None:
    """cgroup v1 cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us."""
    try:
        quota = (folder / CFS_QUOTA).read_text().strip()
        period = (folder / CFS_PERIOD).read_text().strip()
    except OSError:
        return None
    if quota == "-1":
        return None
    return _ratio(folder / CFS_QUOTA, f"{quota} / {period}", quota, period)


def _ratio(file: Path, text: str, quota: str, period: str) -> float | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return _malformed(file, text)
    return q / p if q > 0 and p > 0 else _malformed(file, text)


def _malformed(file: Path, text: str) -> float | None:
    """A cgroup file we cannot read as a quota: said, and read as no limit, None (the kernel's
    files; nothing the user could fix should stop a command)."""
    log.warning("%s: expected a CPU quota and period in microseconds, got %r; ignored", file, text)
    return None


def _count(env: Mapping[str, str], name: str, *, strict: bool = True) -> int | None:
    """The positive integer in environment variable `name` (None: unset). OMP_NUM_THREADS may
    be a list ("4,2": the outer level first); a value that is not one is ValueError for our
    own variables and ignored for the libraries' (strict=False)."""
    raw = env.get(name)
    if raw is None or not raw.strip():
        return None
    first = raw.split(",")[0].strip() if not strict else raw.strip()
    if first.isdigit() and int(first) >= 1:
        return int(first)
    if strict:
        raise ValueError(f"{name}: expected a whole number of threads >= 1, got {raw!r}")
    log.warning("%s=%r is not a number of threads; ignored", name, raw)
    return None


def thread_budget(
    override: int | None = None,
    *,
    source: str = "--threads",
    env: Mapping[str, str] | None = None,
    root: str | os.PathLike = "/",
    affinity: int | None = None,
) -> ThreadBudget:
    """The budget of this process (nothing applied; see use_threads). `override` (named by
    `source`) wins over SNOWFIRE_THREADS, which wins over a share (SNOWFIRE_THREAD_SHARE), which
    wins over OMP_NUM_THREADS; `env` (default os.environ), `root` and `affinity` (default: this
    process's) are for tests."""
    env = os.environ if env is None else env
    affinity = affinity_cpus() if affinity is None else affinity
    quota = cgroup_quota(root)
    cores = affinity or os.cpu_count() or 1
    if quota is not None:
        cores = min(cores, max(1, math.floor(quota)))
    share = _count(env, SHARE_ENV) or 1
    budget = ThreadBudget(threads=1, cores=cores, affinity=affinity, quota=quota, share=share)
    if override is not None:
        if isinstance(override, bool) or not isinstance(override, int) or override < 1:
            raise ValueError(f"{source}: expected a whole number of threads >= 1, got {override!r}")
        return replace(budget, threads=override, override=f"{source}={override}")
    count = _count(env, THREADS_ENV)
    if count is not None:
        return replace(budget, threads=count, override=f"{THREADS_ENV}={count}")
    if SHARE_ENV not in env:  # with a share, the OMP_NUM_THREADS its launcher set says the same
        count = _count(env, "OMP_NUM_THREADS", strict=False)
        if count is not None:
            return replace(budget, threads=count, override=f"OMP_NUM_THREADS={count}")
    return replace(budget, threads=max(1, cores // share))


def threads_env(n: int, budget: ThreadBudget | None = None) -> dict[str, str]:
    """What a launcher adds to the environment of each of the `n` torch processes it starts
    side by side: their share (and an override divided among them, where this process has
    one), and OMP_NUM_THREADS/MKL_NUM_THREADS for what they start in turn."""
    each = (budget or thread_budget()).divided(n)
    out = {SHARE_ENV: str(each.share)} | {name: str(each.threads) for name in LIBRARY_ENV}
    if each.override is not None:
        out[THREADS_ENV] = str(each.threads)
    return out


_applied: dict[str, Any] = {"budget": None, "interop": False}


def use_threads(override: int | None = None, *, source: str = "--threads") -> ThreadBudget:
    """Decide this process's budget (thread_budget) and apply it to torch, once: a later call
    without an override returns the budget applied, one with an override applies that (a Ray
    worker process runs many tasks). Logs the count and why.

    Call it before the threads that run torch start: torch (OpenMP) keeps the count per thread,
    and a thread takes the last count set when it first runs torch (the API's lifespan calls
    it before its embed thread starts; the CLI in its main thread, before any work)."""
    if override is None and _applied["budget"] is not None:
        return _applied["budget"]
    return apply_threads(thread_budget(override, source=source))


def apply_threads(budget: ThreadBudget) -> ThreadBudget:
    """Apply `budget` as it is (use_threads decides one first): a process started to do one
    piece of its parent's work (compare's cell processes) takes the parent's, so its runs
    record the same threads and why."""
    import torch

    torch.set_num_threads(budget.threads)
    if not _applied["interop"]:
        _applied["interop"] = True
        try:  # torch allows it once, before any inter-op work
            torch.set_num_interop_threads(budget.threads)
        except RuntimeError as err:
            log.warning("inter-op threads left at %d: %s", torch.get_num_interop_threads(), err)
    for name in LIBRARY_ENV:  # processes this one starts (a DataLoader's, a service's)
        os.environ[name] = str(budget.threads)
    _applied["budget"] = budget
    log.info("torch threads: %s", budget.why())
    return budget


def threads_in_use() -> ThreadBudget | None:
    """The budget use_threads applied in this process (None: none yet)."""
    return _applied["budget"]


def threads_record() -> dict[str, Any]:
    """What a run records about its threads: torch's intra-op and inter-op counts as they are,
    and the budget that set them (None: none was applied, torch's own defaults)."""
    import torch

    budget = _applied["budget"]
    return {
        "intra_op": torch.get_num_threads(),
        "inter_op": torch.get_num_interop_threads(),
        "budget": budget.to_json() if budget is not None else None,
    }
