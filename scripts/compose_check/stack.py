"""One compose project of the check: up, health, down, and the REST API it publishes.

A service that cannot start is named: `up -d` failing, a container that exits or restarts,
or a healthcheck reported unhealthy all raise StepFailed with the step, the service and the
container's last log lines.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from .engine import Engine
from .steps import StepFailed, run, tail

PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"


class Stack:
    """The project `project` of compose `files` (relative paths against `directory`), with
    `env` (the compose file's ${...} settings) on `engine`."""

    def __init__(
        self,
        engine: Engine,
        compose: list[str],
        files: list[Path],
        project: str,
        env: dict[str, str],
        directory: Path,
    ) -> None:
        self.engine, self.project, self.directory = engine, project, directory
        self.env = {**engine.env, **env}
        self.base = [*compose, "--project-directory", str(directory), "-p", project]
        for f in files:
            self.base += ["-f", str(f)]

    def compose(self, *args: str, step: str, **kw) -> Any:
        return run([*self.base, *args], step, env=self.env, cwd=str(self.directory), **kw)

    def up(self, scale: dict[str, int], step: str) -> None:
        """`up -d` without building (the image is there); StepFailed naming the service whose
        container did not start when compose fails."""
        flags = [f"--scale={name}={n}" for name, n in scale.items()]
        done = self.compose("up", "-d", "--no-build", *flags, step=step, check=False, timeout=900)
        if done.returncode != 0:
            output = tail(done.stdout + done.stderr)
            down = [s for s, cs in self.containers().items() if any(_broken(c) for c in cs)]
            raise StepFailed(step, output, service=", ".join(down) or _named(output, scale))

    def down(self, *, volumes: bool, step: str) -> None:
        args = ["down", "--remove-orphans"] + (["--volumes"] if volumes else [])
        self.compose(*args, step=step, timeout=300)

    def containers(self) -> dict[str, list[dict]]:
        """service -> `docker inspect` of each of its containers (running or not)."""
        ids = self.engine.docker(
            "ps", "-aq", "--filter", f"label={PROJECT_LABEL}={self.project}", step="inspect"
        ).stdout.split()
        if not ids:
            return {}
        out: dict[str, list[dict]] = {}
        for c in json.loads(self.engine.docker("inspect", *ids, step="inspect").stdout):
            out.setdefault(c["Config"]["Labels"][SERVICE_LABEL], []).append(c)
        return out

    def wait_healthy(self, expected: dict[str, int], step: str, timeout: float = 600) -> None:
        """Until every service has its `expected` number of containers, all healthy.
        StepFailed naming the service at once when one of its containers exits, restarts or
        is unhealthy, or at `timeout` naming those still not healthy."""
        deadline = time.monotonic() + timeout
        while True:
            now = self.containers()
            waiting = []
            for service, count in expected.items():
                found = now.get(service, [])
                for c in found:
                    if _broken(c):
                        raise StepFailed(step, self._why(c), service)
                healthy = [c for c in found if _health(c) == "healthy"]
                if len(healthy) < count:
                    waiting.append(f"{service} ({len(healthy)}/{count} healthy)")
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise StepFailed(
                    step,
                    f"not healthy after {timeout:.0f} s: {', '.join(waiting)}",
                    service=", ".join(w.split()[0] for w in waiting),
                )
            time.sleep(1.0)

    def _why(self, c: dict) -> str:
        state = c["State"]
        health = state.get("Health") or {}
        probes = [p.get("Output", "").strip() for p in health.get("Log", [])[-1:]]
        logs = self.engine.docker("logs", "--tail", "15", c["Id"], step="logs", check=False)
        status = state["Status"]
        if status in ("exited", "dead"):
            status += f" with exit code {state.get('ExitCode')}"
        probe = f": {probes[0]}" if probes and probes[0] else ""
        return (
            f"container {c['Name'].lstrip('/')} is {status}, restarted "
            f"{c.get('RestartCount', 0)} times, health {health.get('Status', '-')}{probe}; "
            f"its last log lines:\n{tail(logs.stdout + logs.stderr, 15)}"
        )

    def exec(self, service: str, *cmd: str, step: str, input: str | None = None) -> str:
        """`docker exec` in the service's first running container (what `compose exec` does,
        without starting Compose); its stdout."""
        running = [c for c in self.containers().get(service, []) if c["State"]["Running"]]
        if not running:
            raise StepFailed(step, "no running container", service)
        flags = ["-i"] if input is not None else []
        done = self.engine.docker("exec", *flags, running[0]["Id"], *cmd, step=step, input=input)
        return done.stdout


def _health(c: dict) -> str | None:
    return (c["State"].get("Health") or {}).get("Status")


def _broken(c: dict) -> bool:
    """Exited, dead, restarting, restarted or unhealthy (one killed on purpose is "exited" too,
    so checks that kill one look only before the kill)."""
    state = c["State"]
    return (
        state["Status"] in ("exited", "dead", "restarting")
        or c.get("RestartCount", 0) > 0
        or _health(c) == "unhealthy"
    )


def _named(output: str, services: dict[str, int]) -> str | None:
    """The service a compose error message names ("Cannot start service X", "for X")."""
    for word in output.replace(":", " ").split():
        if word in services:
            return word
    return None


class Api:
    """The REST API through the published port, with a write key."""

    def __init__(self, url: str, key: str) -> None:
        self.url, self.key = url, key

    def request(self, method: str, path: str, body: Any = None, *, key: bool = True):
        """(status, decoded JSON or text)."""
        headers = {"accept": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {self.key}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        req = urllib.request.Request(self.url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, raw, kind = r.status, r.read(), r.headers.get("content-type", "")
        except urllib.error.HTTPError as err:
            status, raw, kind = err.code, err.read(), err.headers.get("content-type", "")
        text = raw.decode("utf-8", errors="replace")
        return status, json.loads(text) if "json" in kind else text

    def get(self, path: str, step: str) -> Any:
        status, body = self.request("GET", path)
        if status != 200:
            raise StepFailed(step, f"GET {path}: {status} {body}", "api")
        return body

    def submit(self, kind: str, params: dict[str, Any], step: str) -> dict:
        status, job = self.request("POST", "/v1/jobs", {"kind": kind, "params": params})
        if status != 202:
            raise StepFailed(step, f"POST /v1/jobs ({kind}): {status} {job}", "api")
        return job

    def wait(self, job_id: str, step: str, service: str, timeout: float = 1800) -> dict:
        """The job once done; StepFailed with its error and log tail when it fails."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.get(f"/v1/jobs/{job_id}?tail=30", step)
            if job["status"] == "done":
                return job
            if job["status"] in ("failed", "cancelled"):
                log = "\n".join(job["log"])
                raise StepFailed(
                    step, f"job {job_id} {job['status']}: {job['error']}\n{log}", service
                )
            if time.monotonic() > deadline:
                raise StepFailed(
                    step, f"job {job_id} still {job['status']} after {timeout} s", service
                )
            time.sleep(1.0)


def break_command(text: str, service: str) -> str:
    """Compose file `text` with `service`'s one-line `command:` replaced by a command the CLI
    refuses (the negative test: the check must name that service)."""
    lines, inside = text.splitlines(keepends=True), False
    for i, line in enumerate(lines):
        if line.rstrip() == f"  {service}:":
            inside = True
        elif inside and line.startswith("  ") and not line.startswith("   "):
            break  # the next service: this one has no command line
        elif inside and line.startswith("    command:"):
            lines[i] = '    command: ["snowfire", "no-such-command"]\n'
            return "".join(lines)
    raise ValueError(f"no one-line `command:` under service {service!r} in the compose file")
