"""`GET /metrics` in the Prometheus text format (prometheus-client): requests by route and
status, latency, bytes sent, requests refused by each bound (api/limits.py), jobs by kind
and state (read from the queue when scraped), the encoder's micro-batches, and per served run
its predictions (requests, examples, latency, cache hits) and the bytes it holds.
Each app has its own registry, so several apps in one process (tests) do not collide."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .limits import EMBED_QUEUE, IN_FLIGHT

#: The `limit` label of a POST /v1/predict refused at the compute thread's queue (errors.py).
PREDICT_QUEUE = "predict_queue"

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
        self.encoder_rounds = Counter(
            "snowfire_encoder_rounds",
            "micro-batches the encoder thread computed (for /v1/embed and /v1/predict alike)",
            registry=self.registry,
        )
        self.predict_requests = Counter(
            "snowfire_predict_requests",
            "POST /v1/predict requests per run",
            ["run"],
            registry=self.registry,
        )
        self.predict_examples = Counter(
            "snowfire_predict_examples",
            "examples predicted per run",
            ["run"],
            registry=self.registry,
        )
        self.predict_latency = Histogram(
            "snowfire_predict_seconds",
            "latency of the POST /v1/predict requests naming the run",
            ["run"],
            registry=self.registry,
        )
        self.predict_cache = Counter(
            "snowfire_predict_cache_examples",
            "❄️ runs' examples whose features the store held (hit) or the encoder computed (miss)",
            ["run", "result"],
            registry=self.registry,
        )
        self.refused = Counter(
            "snowfire_refused",
            "requests refused at a bound (429)",
            ["limit"],
            registry=self.registry,
        )
        for limit in (IN_FLIGHT, EMBED_QUEUE, PREDICT_QUEUE):
            self.refused.labels(limit)  # shown at 0 before the first refusal
        self.registry.register(_JobStates(app_state))
        self.registry.register(_ModelBytes(app_state))

    def refuse(self, limit: str) -> None:
        self.refused.labels(limit).inc()

    def encoded(self, examples: int) -> None:
        """One micro-batch of the encoder thread (its `on_batch`)."""
        self.embed_batch.observe(examples)
        self.encoder_rounds.inc()

    def predicted(self, run: str, examples: int, hits: int | None, seconds: float) -> None:
        """One request's predictions with `run` (serving.Observer)."""
        self.predict_requests.labels(run).inc()
        self.predict_examples.labels(run).inc(examples)
        self.predict_latency.labels(run).observe(seconds)
        if hits is not None:
            self.predict_cache.labels(run, "hit").inc(hits)
            self.predict_cache.labels(run, "miss").inc(examples - hits)

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


class _ModelBytes:
    """snowfire_predict_model_bytes{run}: what each loaded run holds (the shared encoder of the
    adapter, LoRA and BitFit runs once, as run="(shared encoder)"), when scraped."""

    def __init__(self, app_state) -> None:
        self.state = app_state

    def collect(self):
        family = GaugeMetricFamily(
            "snowfire_predict_model_bytes", "bytes each loaded run holds", labels=["run"]
        )
        predictor = getattr(self.state, "predictor", None)
        if predictor is not None:
            for run, n in predictor.models.memory().items():
                family.add_metric([run], n)
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
