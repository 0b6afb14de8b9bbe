"""One try of a request of the REST client (remote.py): sent, its answer read or turned into
the store's exception the service names, or a failure that may pass (`TryFailed`) for the
retry loop around it.

What may pass: the connection refused, reset or timed out before an answer; a body cut short
(a features body keeps the examples it delivered whole: `TryFailed.whole`, paging.py); HTTP
502/503/504; 429 with a Retry-After. Everything else is an answer: a 2xx body, read by the
caller's `read`, or an error naming the store's exception class (`"error"`) or, when it names
none, the one its status means.
"""

from __future__ import annotations

import json as json_lib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import numpy as np

from . import errors
from .errors import FeatureSetNotFoundError, InvalidSelectionError, RequestTooLargeError, StoreError
from .retry import RATE_LIMITED, RETRY_STATUSES, retry_after

#: Store errors by class name, as the service reports them in `"error"`.
_ERRORS = {
    name: cls
    for name, cls in vars(errors).items()
    if isinstance(cls, type) and issubclass(cls, StoreError)
}
#: When the body names no class: what each status means.
_BY_STATUS: dict[int, type[StoreError]] = {
    404: FeatureSetNotFoundError,
    413: RequestTooLargeError,
    422: InvalidSelectionError,
}


class TryFailed(Exception):
    """A try that failed for a reason that may pass: `cause` for the give-up message, the
    server's Retry-After (`after`), and for a 2xx body cut short (`cut`) how many of the
    examples asked for arrived whole (`whole`, a features body read by paging.Assembly)."""

    def __init__(self, cause: str, after: float | None = None, whole: int = 0, cut: bool = False):
        super().__init__(cause)
        self.cause, self.after, self.whole, self.cut = cause, after, whole, cut


def target(base_url: str, method: str, path: str, params: dict | None = None) -> str:
    """ "METHOD URL": what a try and its give-up message name."""
    return f"{method} {base_url}{path}" + (f"?{urlencode(params)}" if params else "")


def exchange(
    send: Callable[[str, str, bytes | None, dict[str, str]], Any],
    base_url: str,
    method: str,
    path: str,
    *,
    params: dict | None = None,
    json: Any = None,
    headers: dict[str, str] | None = None,
    read: Callable[[Any], Any] | None = None,
):
    """One try through `send(method, url, body, headers)` (a urllib3 response, its body not
    read): the 2xx answer read by `read` (default: its body, whole); TryFailed for a failure
    that may pass; the store's exception the service names for any other answer."""
    url = base_url + path + (f"?{urlencode(params)}" if params else "")
    headers = dict(headers or {})
    body = None
    if json is not None:
        body = json_lib.dumps(json).encode()
        headers["Content-Type"] = "application/json"
    network = transient()
    try:
        response = send(method, url, body, headers)
    except network as err:  # refused, reset before an answer, connect timeout
        raise TryFailed(f"cannot reach the snowfire service at {base_url}: {cause(err)}") from err
    status = response.status
    if 200 <= status < 300:
        try:
            return (read or whole_body)(response)
        except network as err:  # reset or closed mid-body: never returned short
            discard(response)
            why = f"HTTP {status}, the body cut short: {cause(err)}"
            raise TryFailed(why, whole=getattr(err, "whole", 0), cut=True) from err
        except BaseException:
            discard(response)  # a body not read to its end: its connection is not reused
            raise
    try:
        text = response.data.decode("utf-8", "replace")
    except network as err:
        discard(response)
        raise TryFailed(f"HTTP {status}, the body cut short: {cause(err)}") from err
    try:
        payload = json_lib.loads(text)
        detail, name = str(payload.get("detail")), payload.get("error")
    except (ValueError, AttributeError):
        detail, name = text.strip()[:300], None
    after = retry_after(response.headers.get("Retry-After"))
    if status in RETRY_STATUSES or (status == RATE_LIMITED and after is not None):
        raise TryFailed(f"HTTP {status}: {detail}", after)
    cls = _ERRORS.get(name) or _BY_STATUS.get(status)
    if cls is None:
        raise StoreError(f"{method} {base_url}{path}: HTTP {status}: {detail}")
    raise cls(detail)


def transient() -> tuple[type[BaseException], ...]:
    """What a failed exchange raises when the network, not the request, was at fault."""
    import http.client

    import urllib3

    return (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)


def cause(err: BaseException) -> str:
    """One line for a network failure: urllib3 nests the socket's error in its reason."""
    reason = getattr(err, "reason", None) or err
    return f"{type(reason).__name__}: {reason}"


def discard(response) -> None:
    """Close a response whose connection broke, so the pool opens a new one."""
    try:
        response.close()
    finally:
        response.release_conn()


def whole_body(response) -> bytes:
    """The body; urllib3 raises (ProtocolError) when fewer bytes than Content-Length or a
    broken chunked framing came, rather than return them."""
    data = response.data
    response.release_conn()
    return data


def read_into(response) -> Callable[[memoryview], int]:
    """`readinto` of the http.client response under urllib3's: it reads into the buffer
    itself, where urllib3's own reads into a temporary and copies (the body is never
    content-encoded here); 0 at the body's end, a failure raised as an OSError."""
    raw = getattr(response, "_fp", None)
    readinto = getattr(raw, "readinto", None) or response.readinto
    network = transient()

    def into(view: memoryview) -> int:
        try:
            return readinto(view)
        except OSError:
            raise
        except network as err:  # http.client's IncompleteRead of broken chunking, urllib3's
            raise ConnectionError(cause(err)) from err

    return into


def body_into_buffer(response) -> memoryview | bytes:
    """The body read straight into one writable buffer of its Content-Length, which
    `wire.decode` then views without copying; `.data` when the length is not given. The buffer
    is not zero-filled first (np.empty, not bytearray): for a large body that fill cost as
    much as receiving it."""
    length = response.headers.get("Content-Length")
    if length is None:
        return response.data
    buf = np.empty(int(length), dtype=np.uint8).data  # a memoryview of it
    into, got = read_into(response), 0
    while got < len(buf):
        n = into(buf[got:])
        if not n:
            raise ConnectionError(f"the service sent {got} of {len(buf)} body bytes, then closed")
        got += n
    response.release_conn()
    return buf
