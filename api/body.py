"""Every request body checked before any route sees it, by one ASGI middleware (`BodyGuard`), so
each route, one added later included, refuses the same bodies, early and cheaply:

    413  a body larger than `max_request_bytes` (SNOWFIRE_MAX_REQUEST_BYTES): refused from its
         Content-Length before a byte of it is read, or as soon as a streamed (chunked) body
         passes the limit; a refusal costs the bytes read, never more than the limit
    400  a JSON body that is not UTF-8 JSON (named: line and column), or that nests deeper
         than the parser goes (about 1,000 levels: json's own recursion limit, so a body of a
         million brackets is refused after reading a thousand)
    422  a JSON value that breaks the text rule or is no JSON number (tasks/text_rule.py: a
         NUL or an unpaired surrogate in any string or key, NaN, Infinity, 1e400, an integer
         past 64 bits), named by its field path and character: `texts.0: character 4 is
         U+D83D, an unpaired UTF-16 surrogate, which UTF-8 cannot encode`

Why here and not in each route: FastAPI parses a body with Python's json module, which reads
NaN, 1e400 and lone surrogates; a route's model then accepts them, or echoes them back in an
error message that cannot be encoded (a 500). A size limit a route checks comes after the whole
body was received and parsed: a 60 MB text cost 23 s of CPU before its 413 (issue 45).
"""

from __future__ import annotations

import json

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from snowfire.tasks import dotted, value_fault

#: Bodies parsed off the event loop from this size on (a thread: other requests go on).
_THREAD_BYTES = 256 << 10


def error_response(status: int, detail: str, error: str | None = None):
    """Status, headers and body of an `ErrorBody` answer, as ASGI wants them."""
    body = json.dumps({"detail": detail, "error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return status, headers, body


def too_large(size: int | str, limit: int) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """413 naming the size, the limit and its setting; `RequestTooLargeError` is the name the
    REST reader (cache/remote.py) splits its request on."""
    return error_response(
        413,
        f"the request body is {size} bytes, the limit is {limit:,} "
        "(SNOWFIRE_MAX_REQUEST_BYTES): split the request",
        "RequestTooLargeError",
    )


def json_problem(body: bytes) -> tuple[int, str] | None:
    """(status, detail) when a JSON body must be refused (400: not JSON; 422: a value that
    breaks the text rule or is no JSON number), None when it may go on to its route."""
    try:
        value = json.loads(body)
    except UnicodeDecodeError as err:
        return 400, f"the body is not UTF-8 JSON: byte {err.start} is 0x{body[err.start]:02x}"
    except json.JSONDecodeError as err:
        return 400, f"the body is not JSON: {err.msg} at line {err.lineno} column {err.colno}"
    except RecursionError:
        return 400, "the body nests deeper than the service reads (about 1,000 levels)"
    except ValueError as err:  # an integer of more than 4300 digits
        return 400, f"the body holds a value the service cannot read: {err}"
    fault = value_fault(value)
    if fault is None:
        return None
    path, why = fault
    return 422, f"{dotted(path) or 'the body'}: {why}"


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").split(";")[0].strip().lower()
    return media.startswith("application/") and (
        media == "application/json" or media.endswith("+json")
    )


class BodyGuard:
    """ASGI middleware: a request body over `limit` bytes is refused (413) before it is read
    (Content-Length) or once it passes the limit (streamed); a JSON body is parsed and checked
    (`json_problem`) before the route; the route then reads the same bytes."""

    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        length = headers.get("content-length")
        streamed = "chunked" in headers.get("transfer-encoding", "").lower()
        if length is None and not streamed:  # no body
            await self.app(scope, receive, send)
            return
        if length is not None and length.isdigit() and int(length) > self.limit:
            await _answer(send, *too_large(f"{int(length):,}", self.limit))
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left; nobody to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await _answer(send, *too_large(f"more than {self.limit:,}", self.limit))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body and _is_json(headers.get("content-type")):
            problem = await _checked(body)
            if problem is not None:
                await _answer(send, *error_response(*problem))
                return
        await self.app(scope, _replay(body, receive), send)


async def _checked(body: bytes) -> tuple[int, str] | None:
    if len(body) < _THREAD_BYTES:
        return json_problem(body)
    import anyio

    return await anyio.to_thread.run_sync(json_problem, body)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body read once, then what the client sends next (its
    disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _answer(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes):
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
