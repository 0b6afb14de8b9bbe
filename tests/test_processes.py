"""The process helpers every service-starting caller shares (snowfire.jobs: jobs/processes.py):
a free port, waiting for /healthz, SIGTERM then SIGKILL after a grace period."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import pytest

from snowfire.jobs import free_port, stop_process, stop_processes, wait_healthy

pytestmark = pytest.mark.subprocess  # starts, stops and kills real processes

#: A tiny service: /healthz answers `CODE` (argv[2]) on port argv[1], anything else 404.
SERVICE = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        code = int(sys.argv[2]) if self.path == "/healthz" else 404
        self.send_response(code)
        self.end_headers()

    def log_message(self, *args):
        pass

print("listening", flush=True)
HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""
#: Ignores SIGTERM (and says so once it does): only SIGKILL ends it.
STUBBORN = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ignoring", flush=True)
time.sleep(600)
"""


def _python(code: str, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], **kw)


def test_a_free_port_can_be_bound_at_once():
    port = free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # nothing holds it


def test_wait_healthy_returns_once_the_service_answers_200(tmp_path):
    port = free_port()
    proc = _python(SERVICE, str(port), "200")
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, timeout=30)
        assert proc.poll() is None
    finally:
        assert stop_process(proc, grace=10) == -signal.SIGTERM


def test_wait_healthy_names_the_exit_code_and_shows_the_log(tmp_path):
    log = tmp_path / "service.log"
    log.write_text("Traceback: no such store\n")
    proc = _python("raise SystemExit(3)")
    with pytest.raises(RuntimeError, match=r"exited with code 3: Traceback: no such store"):
        wait_healthy(f"http://127.0.0.1:{free_port()}", proc, log, timeout=30)


def test_wait_healthy_gives_up_on_a_service_that_never_answers_200():
    port = free_port()
    proc = _python(SERVICE, str(port), "503")
    try:
        started = time.monotonic()
        with pytest.raises(RuntimeError, match=rf":{port} did not answer /healthz within 2 s"):
            wait_healthy(f"http://127.0.0.1:{port}", proc, timeout=2)
        assert 2 <= time.monotonic() - started < 10
    finally:
        stop_process(proc, grace=10)


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace():
    proc = _python(STUBBORN, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ignoring\n"  # its handler is in place
    started = time.monotonic()
    assert stop_process(proc, grace=1) == -signal.SIGKILL
    assert 1 <= time.monotonic() - started < 10


def test_stopping_many_shares_one_grace_and_skips_the_ended():
    done = _python("pass")
    done.wait(30)
    stubborn = [_python(STUBBORN, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in stubborn:
        assert proc.stdout.readline() == "ignoring\n"
    started = time.monotonic()
    stop_processes([done, *stubborn], grace=1)
    assert time.monotonic() - started < 1 + 5  # one grace for all, not one each
    assert done.returncode == 0 and [p.returncode for p in stubborn] == [-signal.SIGKILL] * 2


def test_group_reaches_the_children_of_a_session_leader():
    """`group`: the signal goes to the process group, so a child the process started (a
    worker's job and what it runs) ends with it."""
    parent = _python(
        "import subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, '-c', {STUBBORN!r}])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(600)\n",
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    child = int(parent.stdout.readline())
    stop_process(parent, grace=1, group=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.1)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, ended but not yet reaped by init, counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False
