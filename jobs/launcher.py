"""`snowfire up`: the API and one worker of each kind as local processes on one data directory.

Ctrl-C or SIGTERM stops them all: each child gets SIGTERM (a worker hands its running job back
to the queue), then SIGKILL after `grace` seconds; `up` waits for every one. If a child exits
on its own, the others are stopped too and `up` returns that child's exit code.

The children split the cores (options/threads.py): each is told it is one of them
(SNOWFIRE_THREAD_SHARE), so an extract, a train and a fine-tune job running at once, with the
API's embed encoder, never start more threads between them than there are cores (one each at
least). `--threads N` / SNOWFIRE_THREADS=N is divided among them the same way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from snowfire.options import thread_budget, threads_env

from .home import Home
from .kinds import JOB_KINDS
from .processes import stop_processes


def commands(home: Home, host: str, port: int) -> dict[str, list[str]]:
    """name -> the command of each process `up` starts (the service on `host`:`port`)."""
    snowfire = [sys.executable, "-m", "snowfire.cli"]
    root = str(home.root)
    out = {"api": [*snowfire, "serve", "--home", root, "--host", host, "--port", str(port)]}
    for kind in JOB_KINDS:
        out[f"worker-{kind}"] = [*snowfire, "worker", "--kind", kind, "--home", root]
    return out


def run_up(home: str | os.PathLike | None, *, host: str, port: int, grace: float = 15.0) -> int:
    """Run until Ctrl-C/SIGTERM; `home` None reads SNOWFIRE_HOME. `snowfire up` passes the
    service's host and port as its settings resolve them (api/settings.py)."""
    where = Home.resolve(home)
    where.root.mkdir(parents=True, exist_ok=True)
    stopping: list[int] = []

    def on_signal(signum, frame) -> None:
        stopping.append(signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    children: dict[str, subprocess.Popen] = {}
    code = 0
    todo = commands(where, host, port)
    budget = thread_budget()
    env = {**os.environ, **threads_env(len(todo), budget)}
    try:
        for name, cmd in todo.items():
            children[name] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, env=env)
        print(
            f"snowfire up: API on http://{host}:{port}, workers {', '.join(JOB_KINDS)}, "
            f"data in {where.root} (Ctrl-C stops all); torch threads of each: "
            f"{budget.divided(len(todo)).why()}",
            file=sys.stderr,
        )
        while not stopping:
            ended = {n: c.returncode for n, c in children.items() if c.poll() is not None}
            if ended:
                name, code = next(iter(ended.items()))
                print(f"snowfire up: {name} exited with {code}; stopping", file=sys.stderr)
                break
            time.sleep(0.2)
    finally:
        stop_processes(children.values(), grace)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code
