"""Back-pressure: the service refuses early instead of queueing without bound.

Two bounds, both `Settings` fields:

    max_in_flight     requests being handled at once (every route but `UNBOUNDED`); one more
                      is answered 429 at once, before routing, without reading its body
    embed_max_queue   POST /v1/embed requests waiting for the encoder thread (cache hits do
                      not wait); one more is answered 429 (extractor.EmbedBusyError)

A refusal carries `Retry-After: <retry_after>` (seconds) and an `ErrorBody` naming the bound
and its setting, and is counted in `/metrics` as `snowfire_refused_total{limit}`. Health and
metrics are never refused: they are how an operator sees the overload.

Why refuse rather than queue: a request accepted beyond what the cores can serve waits behind
the others and makes every answer slower (issue 29: the features p50 6.7x its unloaded value
under 16 clients); refused at once, the client backs off and retries, and what is accepted is
answered at about the unloaded latency (benchmarks/load.py --overload).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from .body import error_response

#: Paths never refused: the operator's view of an overloaded service.
UNBOUNDED = frozenset({"/healthz", "/metrics"})
#: The `limit` label of snowfire_refused_total for each bound.
IN_FLIGHT, EMBED_QUEUE = "in_flight", "embed_queue"


def too_many(detail: str, retry_after: int) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Status, headers and body of a refusal (429 with Retry-After, an ErrorBody)."""
    status, headers, body = error_response(429, detail, "TooManyRequests")
    return status, [*headers, (b"retry-after", str(retry_after).encode())], body


class InFlightLimit:
    """ASGI middleware: at most `limit` requests handled at once, 429 beyond it.

    The count is kept on the event loop (one thread), so it needs no lock; a request counts
    until its last body byte is sent (a streamed safetensors answer included)."""

    def __init__(self, app: ASGIApp, *, limit: int, retry_after: int, on_refused) -> None:
        self.app, self.limit, self.retry_after = app, limit, retry_after
        self.on_refused = on_refused  # called with the limit's label
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in UNBOUNDED:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            self.on_refused(IN_FLIGHT)
            status, headers, body = too_many(
                f"the service is handling {self.limit} requests, its limit "
                f"(SNOWFIRE_MAX_IN_FLIGHT): retry after {self.retry_after} s",
                self.retry_after,
            )
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
