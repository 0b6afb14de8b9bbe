"""A fault-injecting HTTP/1.1 proxy for tests: asyncio, in a thread of its own, between a
client and a server on loopback (the REST client and the service, obstore and moto).

It reads each request and each answer whole (Content-Length or chunked framing), so it can
misbehave at a chosen place in the exchange, counted by connection or by request:

    latency        seconds added before each answer is sent on
    reset_every    every Nth connection is reset (RST) as soon as it is accepted
    cut_every      every Nth answer is cut after half its body: `cut="close"` ends the
                   connection there (a short read), `cut="reset"` resets it (RST)
    cut_after      every answer is cut after N bytes of its body (those no longer pass
                   whole), as a proxy or load balancer with a response-size limit does
    chunked        answers are sent on in chunked framing (so a cut one is broken chunking)
    status_every   every Nth request starts a burst of `burst` answers `status` with
                   Retry-After `retry_after`, made here (the server never sees them)
    status_first   every distinct request (method, target, Range, body) is answered
                   `status` its first N times; cut_first: its first N answers are cut;
                   drop_first: its first N tries are read and the connection reset with no
                   answer (the server never sees them). These
                   hold for clients that send many requests at once (obstore): which request
                   fails does not depend on the order they arrive in
    refuse_every   at every Nth request: that connection is reset and the proxy stops listening
                   for `refuse_seconds` (connections refused, as while a server restarts)
    on_request     called in a thread with each request's number as it arrives (e.g. to
                   restart the server behind the proxy)
    one_per_connection  every answer carries "Connection: close": each request a new
                   connection (so "every Nth connection" means every Nth request)

A server that cannot be reached is answered with 502, as nginx does. `counts` says what was
done ("connections", "requests", "reset", "cut", "dropped", "status", "refused", "502"), so a
test can check that the fault it names happened; `answers` lists each answer the server gave:
(request line, its Range header or None, body bytes as the server sent them). Fault positions
are request numbers, not times: a client that sends its requests one at a time meets them at
the same places each run.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Faults:
    latency: float = 0.0
    reset_every: int = 0
    cut_every: int = 0
    cut_after: int = 0
    cut: str = "close"
    chunked: bool = False
    status_every: int = 0
    status: int = 503
    burst: int = 2
    retry_after: str | None = "0"
    status_first: int = 0
    cut_first: int = 0
    drop_first: int = 0
    refuse_every: int = 0
    refuse_seconds: float = 0.5
    one_per_connection: bool = False
    on_request: Callable[[int], None] | None = None


class Message:
    """One request or answer: its head (start line and headers) and its body, decoded."""

    def __init__(self, head: bytes, body: bytes):
        self.head, self.body = head, body
        lines = head.decode("latin-1").split("\r\n")
        self.start = lines[0]
        self.headers = [tuple(x.strip() for x in line.split(":", 1)) for line in lines[1:] if line]

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def encode(self, *, chunked: bool = False, close: bool = False) -> bytes:
        """The message framed again: chunked (4 KiB chunks) or with its Content-Length."""
        drop = {"content-length", "transfer-encoding"} | ({"connection"} if close else set())
        headers = [(k, v) for k, v in self.headers if k.lower() not in drop]
        if chunked:
            headers.append(("Transfer-Encoding", "chunked"))
            pieces = [self.body[i : i + 4096] for i in range(0, len(self.body), 4096)]
            body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
        else:
            if self.body or self.header("content-length") is not None:
                headers.append(("Content-Length", str(len(self.body))))
            body = self.body
        if close:
            headers.append(("Connection", "close"))
        head = "\r\n".join([self.start] + [f"{k}: {v}" for k, v in headers]) + "\r\n\r\n"
        return head.encode("latin-1") + body


async def read_message(reader: asyncio.StreamReader, *, request: bool, method: str = "GET"):
    """The next message on the stream, its body decoded; None at a clean end of stream."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as err:
        if not err.partial:
            return None
        raise
    msg = Message(head, b"")
    status = 0 if request else int(msg.start.split()[1])
    if not request and (method == "HEAD" or status in (204, 304) or 100 <= status < 200):
        return msg
    if (msg.header("transfer-encoding") or "").lower() == "chunked":
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                break
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        msg.body = b"".join(parts)
    elif msg.header("content-length") is not None:
        msg.body = await reader.readexactly(int(msg.header("content-length")))
    elif not request:
        msg.body = await reader.read()  # delimited by the end of the connection
    return msg


def canned(status: int, retry_after: str | None, close: bool) -> bytes:
    """An answer made by the proxy itself: JSON naming it."""
    body = json.dumps({"detail": f"{status} from the test's fault proxy"}).encode()
    head = [
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
    ]
    if retry_after is not None:
        head.append(f"Retry-After: {retry_after}")
    if close:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a RST: SO_LINGER 0 drops the connection instead of ending it."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class FaultProxy:
    """`with FaultProxy("http://127.0.0.1:PORT", Faults(...)) as proxy:` then use proxy.url."""

    def __init__(self, upstream: str, faults: Faults | None = None):
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port)
        self.faults = faults or Faults()
        self.counts: Counter[str] = Counter()
        self.answers: list[tuple[str, str | None, int]] = []
        self._burst_left = 0
        self._seen: Counter[tuple] = Counter()  # tries of each distinct request
        self._lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._sock = sock
        self._server: asyncio.AbstractServer | None = None

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        self._call(self._listen(self._sock))
        return self

    def __exit__(self, *exc) -> None:
        async def stop():
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()

        self._call(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    def _call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    async def _listen(self, sock: socket.socket | None = None) -> None:
        if sock is None:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", self.port))
        self._server = await asyncio.start_server(self._serve, sock=sock)

    async def _refuse(self) -> None:
        """Stop listening for a while (connects are refused), then listen again."""
        self.counts["refused"] += 1
        self._server.close()
        await asyncio.sleep(self.faults.refuse_seconds)
        await self._listen()

    def _number(self, name: str) -> int:
        with self._lock:
            self.counts[name] += 1
            return self.counts[name]

    async def _serve(self, reader, writer) -> None:
        f = self.faults
        if f.reset_every and self._number("connections") % f.reset_every == 0:
            self.counts["reset"] += 1
            _reset(writer)
            return
        up_reader = up_writer = None
        try:
            while True:
                request = await read_message(reader, request=True)
                if request is None:
                    return
                n = self._number("requests")
                if f.on_request is not None:
                    self.loop.run_in_executor(None, f.on_request, n)
                if f.refuse_every and n % f.refuse_every == 0:
                    _reset(writer)
                    await self._refuse()
                    return
                if f.status_every and n % f.status_every == 0:
                    self._burst_left = f.burst
                key = (request.start, request.header("range"), hash(request.body))
                self._seen[key] += 1
                tries = self._seen[key]
                if tries <= f.drop_first:
                    self.counts["dropped"] += 1
                    _reset(writer)
                    return
                if self._burst_left > 0 or tries <= f.status_first:
                    self._burst_left = max(0, self._burst_left - 1)
                    self.counts["status"] += 1
                    writer.write(canned(f.status, f.retry_after, f.one_per_connection))
                    await writer.drain()
                    if f.one_per_connection:
                        return
                    continue
                if up_writer is None:
                    try:
                        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
                    except OSError:
                        self.counts["502"] += 1
                        writer.write(canned(502, None, True))
                        await writer.drain()
                        return
                up_writer.write(request.encode())
                await up_writer.drain()
                method = request.start.split()[0]
                answer = await read_message(up_reader, request=False, method=method)
                if answer is None:  # the server went away mid-exchange: so does the client's
                    _reset(writer)
                    return
                self.answers.append((request.start, request.header("range"), len(answer.body)))
                if f.latency:
                    await asyncio.sleep(f.latency)
                chunked = f.chunked and bool(answer.body)
                data = answer.encode(chunked=chunked, close=f.one_per_connection)
                cut = (f.cut_every and n % f.cut_every == 0) or tries <= f.cut_first
                keep = len(data) - len(answer.body) // 2  # bytes sent of a cut answer
                head = data.index(b"\r\n\r\n") + 4
                if f.cut_after and len(data) - head > f.cut_after:
                    cut, keep = True, head + f.cut_after
                if cut and answer.body:
                    self.counts["cut"] += 1
                    writer.write(data[:keep])
                    await writer.drain()
                    if f.cut == "reset":
                        await asyncio.sleep(0.05)  # let the client take the first half
                        _reset(writer)
                    else:
                        writer.close()
                    return
                writer.write(data)
                await writer.drain()
                if f.one_per_connection or (answer.header("connection") or "") == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            _reset(writer)
        except asyncio.CancelledError:
            pass  # the proxy is closing: its connections end with it
        finally:
            if up_writer is not None:
                up_writer.close()
            if not writer.transport.is_closing():
                writer.close()
