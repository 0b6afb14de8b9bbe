"""How the check runs commands and reports: each step is timed and printed, and a failure names
the step and the service it concerns."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


class StepFailed(Exception):
    """A step of the check failed; `service` is the compose service it concerns, if one."""

    def __init__(self, step: str, message: str, service: str | None = None) -> None:
        self.step, self.service, self.message = step, service, message
        where = f"service {service}, " if service else ""
        super().__init__(f"compose check failed ({where}step: {step}): {message}")


class Log:
    """Prints each step with the time since the check began, and keeps their durations."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.durations: list[tuple[str, float]] = []
        self.step = "start"

    def say(self, text: str) -> None:
        elapsed = time.monotonic() - self.started
        tenths = round(elapsed * 10)
        stamp = f"[{tenths // 600:02d}:{tenths % 600 / 10:04.1f}]"
        print(f"{stamp} {text}", file=sys.stderr, flush=True)

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        """Run a step: printed when it starts and ends, its duration kept; the step's name is the
        one a StepFailed raised without a step of its own gets."""
        self.step, begun = step, time.monotonic()
        self.say(f"{step} ...")
        yield
        seconds = time.monotonic() - begun
        self.durations.append((step, seconds))
        self.say(f"{step}: done in {seconds:.1f} s")

    def summary(self) -> str:
        total = time.monotonic() - self.started
        rows = [f"  {seconds:7.1f} s  {step}" for step, seconds in self.durations]
        return "\n".join(["steps:", *rows, f"  {total:7.1f} s  in all"])


def run(
    cmd: Sequence[str],
    step: str,
    *,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float | None = 600,
    check: bool = True,
    service: str | None = None,
    cwd: str | None = None,
) -> subprocess.CompletedProcess:
    """Run `cmd` and capture its output; StepFailed naming `step` (and the command's last output
    lines) when it fails and `check`."""
    try:
        done = subprocess.run(
            list(cmd),
            env=env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
        )
    except FileNotFoundError as err:
        raise StepFailed(step, f"{cmd[0]}: not found ({err})", service) from None
    except subprocess.TimeoutExpired:
        raise StepFailed(step, f"`{' '.join(cmd)}` took more than {timeout} s", service) from None
    if check and done.returncode != 0:
        raise StepFailed(
            step,
            f"`{' '.join(cmd)}` exited with {done.returncode}:\n{tail(done.stdout + done.stderr)}",
            service,
        )
    return done


def tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


class OneAtATime:
    """One check at a time on a machine (they would share ports, bridges and the cache)."""

    def __init__(self, path: Path, log: Log) -> None:
        self.path, self.log = path, log

    def __enter__(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.log.say(f"another compose check holds {self.path}: waiting for it")
            fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc) -> None:
        os.close(self.fd)
