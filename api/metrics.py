"""`GET /metrics` in the Prometheus text format (prometheus-client): requests by route and
status, latency, bytes sent, requests refused by each bound (api/limits.py), and jobs by kind
and state (read from the queue when scraped).
Each app has its own registry, so several apps in one process (tests) do not collide."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .limits import EMBED_QUEUE, IN_FLIGHT

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    def __init__(self, app_state) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "snowfire_requests",
            "HTTP requests",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "snowfire_request_seconds", "request latency", ["route"], registry=self.registry
        )
        self.sent = Counter(
            "snowfire_response_bytes", "response body bytes sent", ["route"], registry=self.registry
        )
        self.embed_examples = Counter(
            "snowfire_embed_examples",
            "examples asked of /v1/embed",
            ["result"],
            registry=self.registry,
        )
        self.embed_batch = Histogram(
            "snowfire_embed_batch_examples",
            "examples the encoder computed per micro-batch",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
            registry=self.registry,
        )
        self.refused = Counter(
            "snowfire_refused",
            "requests refused at a bound (429)",
            ["limit"],
            registry=self.registry,
        )
        for limit in (IN_FLIGHT, EMBED_QUEUE):
            self.refused.labels(limit)  # shown at 0 before the first refusal
        self.registry.register(_JobStates(app_state))

    def refuse(self, limit: str) -> None:
        self.refused.labels(limit).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _JobStates:
    """snowfire_jobs{kind, status}: the queue's counts when scraped."""

    def __init__(self, app_state) -> None:
        self.state = app_state

    def collect(self):
        family = GaugeMetricFamily("snowfire_jobs", "jobs in the queue", labels=["kind", "status"])
        queue = getattr(self.state, "queue", None)
        if queue is not None:
            for (kind, status), n in queue.counts().items():
                family.add_metric([kind, status], n)
        yield family


def _route(scope: Scope) -> str:
    """The route template (/v1/jobs/{job_id}), not the raw path: bounded label values."""
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"


class MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status, sent = time.perf_counter(), [500], [0]

        async def counting(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            elif message["type"] == "http.response.body":
                sent[0] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, counting)
        finally:
            route = _route(scope)
            m = self.metrics
            m.requests.labels(route, scope["method"], str(status[0])).inc()
            m.latency.labels(route).observe(time.perf_counter() - started)
            m.sent.labels(route).inc(sent[0])
