"""The Docker engine the check uses: the one that answers, else a dockerd of its own.

Its own engine (root only) keeps everything under one temporary directory: data root, exec
root (with the containerd it manages), pid file and socket, so it touches no other engine's
state. That directory is a tmpfs of its own when the machine has the memory to spare (image
layers are written and removed at memory speed, and unmounting it removes them all). It runs
without iptables rules: published ports go through docker-proxy, and containers have no route
out (nothing they install comes from a network). `stop` ends it and removes the directory,
whatever state the check left it in.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .steps import Log, StepFailed, run, tail

#: Commands the check needs -> the Debian package that has them.
TOOLS = {"docker": "docker.io", "dockerd": "docker.io", "debootstrap": "debootstrap"}
COMPOSE_PACKAGE = "docker-compose"
#: The engine's tmpfs: its size, and the memory that must be available to use one.
TMPFS_SIZE_GB, TMPFS_MIN_AVAILABLE_GB = 8, 12


def install_missing(tools: dict[str, str], log: Log) -> None:
    """apt-get install the packages of missing commands (root only). Services a package would
    start are not started (a policy-rc.d saying no, for the install's time)."""
    missing = sorted({pkg for tool, pkg in tools.items() if shutil.which(tool) is None})
    if not missing:
        return
    step = f"install {', '.join(missing)}"
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise StepFailed(step, f"missing commands; install {' '.join(missing)} (root, apt-get)")
    policy = Path("/usr/sbin/policy-rc.d")
    ours = not policy.exists()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]
    with log.timed(step):
        try:
            if ours:
                policy.write_text("#!/bin/sh\nexit 101\n")
                policy.chmod(0o755)
            if run(cmd, step, env=env, check=False).returncode != 0:
                run(["apt-get", "update", "-q"], step, env=env)
                run(cmd, step, env=env)
        finally:
            if ours:
                policy.unlink(missing_ok=True)


def compose_command() -> list[str]:
    """`docker compose` (v2) when the plugin is there, else `docker-compose` (1.29)."""
    v2 = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    if v2.returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"]


class Engine:
    """A Docker engine answering on `env["DOCKER_HOST"]` (or the default socket)."""

    def __init__(self, work: Path, log: Log, storage_driver: str = "", tmpfs: bool = True) -> None:
        self.work, self.log, self.storage_driver, self.tmpfs = work, log, storage_driver, tmpfs
        self.env = dict(os.environ)
        self.proc: subprocess.Popen | None = None
        self.root = work / "engine"
        self.mounted = False

    @property
    def started(self) -> bool:
        """Whether the check started this engine (and so stops it)."""
        return self.proc is not None

    def docker(self, *args: str, step: str, **kw) -> subprocess.CompletedProcess:
        return run(["docker", *args], step, env=self.env, **kw)

    def answers(self) -> bool:
        done = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        return done.returncode == 0 and bool(done.stdout.strip())

    def start(self) -> None:
        """Use the engine that answers, else start one (root only)."""
        step = "start a Docker engine"
        if self.answers():
            self.log.say("using the Docker engine that answers (DOCKER_HOST or the default socket)")
            return
        if os.geteuid() != 0:
            raise StepFailed(step, "no Docker engine answers, and starting one needs root")
        with self.log.timed(step):
            self.root.mkdir(parents=True)
            if self.tmpfs and _available_gb() >= TMPFS_MIN_AVAILABLE_GB:
                size = f"size={TMPFS_SIZE_GB}g,mode=0700"
                run(["mount", "-t", "tmpfs", "-o", size, "snowfire-engine", str(self.root)], step)
                self.mounted = True
            sock = self.root / "docker.sock"
            cmd = [
                "dockerd",
                "--data-root",
                str(self.root / "data"),
                "--exec-root",
                str(self.root / "exec"),
                "--pidfile",
                str(self.root / "dockerd.pid"),
                "-H",
                f"unix://{sock}",
                "--iptables=false",
                "--ip-masq=false",
            ]
            if self.storage_driver:
                cmd += ["--storage-driver", self.storage_driver]
            with open(self.root / "dockerd.log", "wb") as out:
                self.proc = subprocess.Popen(
                    cmd,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            self.env["DOCKER_HOST"] = f"unix://{sock}"
            deadline = time.monotonic() + 90
            while not self.answers():
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise StepFailed(step, f"dockerd did not answer:\n{self.daemon_log()}")
                time.sleep(0.5)
            driver = self.docker("info", "--format", "{{.Driver}}", step=step).stdout.strip()
            where = f"a {TMPFS_SIZE_GB} GB tmpfs" if self.mounted else "disk"
            self.log.say(
                f"dockerd {self.proc.pid} answers on {sock} (storage driver {driver}, on {where})"
            )

    def daemon_log(self) -> str:
        path = self.root / "dockerd.log"
        return tail(path.read_text(errors="replace")) if path.is_file() else ""

    def stop(self) -> None:
        """Stop the engine the check started (SIGTERM, then SIGKILL) and remove its directory
        (unmounting what it left mounted there)."""
        if self.proc is None:
            self._unmount()
            return
        if self.proc.poll() is None:
            left = run(["docker", "ps", "-aq"], "stop", env=self.env, check=False).stdout.split()
            if left:  # whatever a failed step left running in this engine
                run(["docker", "rm", "-f", *left], "stop", env=self.env, check=False)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # dockerd stops the containerd it manages; whatever still runs from its directory (a
        # containerd or shim after a SIGKILL) is killed
        for pid in _processes_using(self.root):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._unmount()
        self.log.say(f"dockerd {self.proc.pid} stopped; {self.root} removed")
        self.proc = None

    def _unmount(self) -> None:
        for mount in reversed(_mounts_under(self.root)):
            subprocess.run(["umount", "-l", mount], capture_output=True, check=False)
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.root)], capture_output=True, check=False)
            self.mounted = False
        shutil.rmtree(self.root, ignore_errors=True)


def _mounts_under(root: Path) -> list[str]:
    prefix = str(root.resolve()) + "/"
    with open("/proc/self/mounts") as f:
        points = [line.split()[1] for line in f]
    return [p.replace("\\040", " ") for p in points if p.startswith(prefix)]


def _processes_using(root: Path) -> list[int]:
    """Processes whose command line names a path under `root` (the engine's own)."""
    mark, pids = str(root).encode(), []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if mark in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _available_gb() -> float:
    with open("/proc/meminfo") as f:
        fields = dict(line.split(":", 1) for line in f)
    return int(fields["MemAvailable"].split()[0]) / 2**20
