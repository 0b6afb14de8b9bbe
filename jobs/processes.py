"""Starting and stopping local processes, one way for the library, the scripts, the benchmarks
and the tests: a free port for a service, waiting until it answers /healthz, and stopping
processes politely then firmly (SIGTERM, a grace period, SIGKILL).

    port = free_port()
    proc = subprocess.Popen([..., "serve", "--port", str(port)])
    wait_healthy(f"http://127.0.0.1:{port}", proc, log_file)
    ...
    stop_process(proc, grace=15)

No web framework and no HTTP client beyond the standard library, so a worker stays light.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port of `host` that nothing listens on now (the OS picks it). Another process
    may take it before the caller binds it: meant for a service started at once."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_healthy(
    url: str,
    proc: subprocess.Popen | None = None,
    log: Path | None = None,
    timeout: float = 60.0,
) -> None:
    """Return once GET `url`/healthz answers 200. RuntimeError when `proc` exits first (its
    exit code) or `timeout` seconds pass, with the text of `log` (the service's output) when
    given."""

    def failed(why: str) -> RuntimeError:
        shown = f": {Path(log).read_text(errors='replace')}" if log is not None else ""
        return RuntimeError(why + shown)

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise failed(f"the service at {url} exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (OSError, urllib.error.URLError):  # not listening yet, or not healthy yet
            pass
        time.sleep(0.2)
    raise failed(f"the service at {url} did not answer /healthz within {timeout:.0f} s")


def stop_processes(
    procs: Iterable[subprocess.Popen], grace: float = 15.0, *, group: bool = False
) -> None:
    """Stop every process of `procs` and wait for each: SIGTERM to all at once, then SIGKILL
    to any still running `grace` seconds later. `group`: signal each one's process group (a
    process started with `start_new_session=True`, and every child it started)."""
    procs = [p for p in procs if p.poll() is None]
    for proc in procs:
        _signal(proc, signal.SIGTERM, group)
    deadline = time.monotonic() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(proc, signal.SIGKILL, group)
            proc.wait()


def stop_process(proc: subprocess.Popen, grace: float = 15.0, *, group: bool = False) -> int:
    """Stop one process (`stop_processes`): SIGTERM, SIGKILL after `grace` seconds; its exit
    code (negative: the signal that ended it)."""
    stop_processes([proc], grace, group=group)
    return proc.wait()


def _signal(proc: subprocess.Popen, sig: signal.Signals, group: bool) -> None:
    try:
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    except ProcessLookupError:  # it ended meanwhile
        pass
