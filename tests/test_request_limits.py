"""A refused oversize request costs the service under a second of CPU, whatever its size
(api/body.py): a real `snowfire serve` process, its CPU time read from /proc/PID/stat (user +
system, every thread) before and after each request; wall time says nothing on a shared
machine.

Before: one 60 MB text was refused with 413 after 23 s of the server's CPU (issue 45)."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import time
from pathlib import Path

import pytest

from snowfire.jobs import free_port, stop_process, wait_healthy
from tests.helpers import snowfire_cli

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc/PID/stat"),
]

LIMIT = 8 * 2**20  # the default SNOWFIRE_MAX_REQUEST_BYTES
CPU_BUDGET = 1.0  # seconds of the server's CPU a refusal may cost


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` and all its threads so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def post_raw(port: int, headers: dict[str, str], body, timeout: float = 60.0):
    """POST /v1/embed on a raw socket: send the headers, then the body's pieces until the
    service answers (or closes); (status, JSON body). A refused body is never sent whole."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(f"POST /v1/embed HTTP/1.1\r\nHost: x\r\n{head}\r\n".encode())
    try:
        for piece in body:
            if select.select([sock], [], [], 0)[0]:
                break  # the answer is there: stop sending
            sock.sendall(piece)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the service closed a connection whose body it refused
    answer = b""
    deadline = time.monotonic() + timeout
    while b"\r\n\r\n" not in answer and time.monotonic() < deadline:
        answer += sock.recv(65536)
    head, _, rest = answer.partition(b"\r\n\r\n")
    fields = dict(h.split(b":", 1) for h in head.split(b"\r\n")[1:])
    length = int({k.lower(): v for k, v in fields.items()}[b"content-length"])
    while len(rest) < length:
        rest += sock.recv(65536)
    sock.close()
    return int(head.split()[1]), json.loads(rest[:length])


def pieces(total: int, size: int = 1 << 20):
    """`total` bytes of JSON-ish text in pieces, generated as they are sent."""
    piece = b"word " * (size // 5)
    sent = 0
    while sent < total:
        yield piece[: total - sent]
        sent += len(piece)


def chunked(total: int):
    """The same bytes in HTTP/1.1 chunked framing (no Content-Length: the size is unknown
    until the body ends)."""
    for piece in pieces(total):
        yield f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    yield b"0\r\n\r\n"


@pytest.fixture(scope="module")
def service(tiny_bert_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("limits")
    port = free_port()
    log = tmp / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            snowfire_cli(
                "serve",
                "--store",
                str(tmp / "store"),
                "--port",
                str(port),
                "--encoder",
                f"hf:{tiny_bert_dir}",
            ),
            env={**os.environ, "SNOWFIRE_LOG_LEVEL": "warning"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, log)
        yield port, proc.pid
    finally:
        stop_process(proc, grace=30)


@pytest.mark.parametrize("size", [60_000_000, 600_000_000])
def test_a_body_over_the_limit_is_refused_from_its_content_length(service, size):
    port, pid = service
    before = cpu_seconds(pid)
    status, body = post_raw(
        port,
        {"Content-Type": "application/json", "Content-Length": str(size)},
        pieces(size),
    )
    spent = cpu_seconds(pid) - before
    assert (status, body["error"]) == (413, "RequestTooLargeError")
    assert body["detail"] == (
        f"the request body is {size:,} bytes, the limit is {LIMIT:,} "
        "(SNOWFIRE_MAX_REQUEST_BYTES): split the request"
    )
    print(f"{spent:.3f} s of the server's CPU")  # the outcome, for the record (pytest -s)
    assert spent < CPU_BUDGET, f"{spent:.2f} s of the server's CPU for a refusal"


@pytest.mark.parametrize("size", [60_000_000, 600_000_000])
def test_a_streamed_body_is_refused_once_it_passes_the_limit(service, size):
    port, pid = service
    before = cpu_seconds(pid)
    status, body = post_raw(
        port,
        {"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        chunked(size),
    )
    spent = cpu_seconds(pid) - before
    assert (status, body["error"]) == (413, "RequestTooLargeError")
    assert body["detail"].startswith(f"the request body is more than {LIMIT:,} bytes")
    print(f"{spent:.3f} s of the server's CPU")  # the outcome, for the record (pytest -s)
    assert spent < CPU_BUDGET, f"{spent:.2f} s of the server's CPU for a refusal"


def test_a_body_just_under_the_limit_over_the_words_is_refused_as_cheaply(service):
    """The largest body read whole: one text of ~1.7 million words. Its words are counted as
    it is split and the request refused before any per-word check or encoding."""
    port, pid = service
    text = "a " * ((LIMIT - 64) // 2)
    data = json.dumps({"texts": [text]}).encode()
    assert len(data) <= LIMIT
    before = cpu_seconds(pid)
    status, body = post_raw(
        port, {"Content-Type": "application/json", "Content-Length": str(len(data))}, [data]
    )
    spent = cpu_seconds(pid) - before
    assert status == 413 and "words in one request" in body["detail"], body
    print(f"{spent:.3f} s of the server's CPU")  # the outcome, for the record (pytest -s)
    assert spent < CPU_BUDGET, f"{spent:.2f} s of the server's CPU for a refusal"
