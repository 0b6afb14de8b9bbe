"""The app factory: settings at build time, the store opened in `lifespan`."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

from snowfire.cache import is_bucket, open_store
from snowfire.jobs import Home, JobQueue
from snowfire.options import thread_budget, threads_in_use, use_threads

from .body import BodyGuard
from .embed_routes import router as embed_router
from .errors import install_error_handlers
from .job_routes import router as job_router
from .layers_page import router as layers_page_router
from .layers_routes import router as layers_router
from .limits import InFlightLimit
from .metrics import CONTENT_TYPE as METRICS_TYPE
from .metrics import Metrics, MetricsMiddleware
from .openapi import install as install_openapi
from .page import router as page_router
from .predict_routes import router as predict_router
from .routes import router, snowfire_version
from .security import APIKeys, KeyRing, load_keys
from .settings import Settings

log = logging.getLogger(__name__)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    bucket = settings.store if is_bucket(settings.store) else None
    if bucket is None and not Path(settings.store).is_dir():
        log.warning(
            "store %s does not exist yet: serving no feature sets until one is written",
            settings.store,
        )
    app.state.store = open_store(settings.store)
    app.state.home = Home(settings.home.resolve(), store_url=bucket) if settings.home else None
    app.state.queue = JobQueue(app.state.home.queue) if app.state.home else None
    app.state.ray = None
    if settings.ray:
        if app.state.home is None:
            raise ValueError("--ray runs the jobs of a data directory: give --home too")
        from snowfire.jobs import RayDispatch

        log.info("jobs of %s run on Ray (%s)", app.state.home.root, settings.ray)
        app.state.ray = RayDispatch(app.state.home, settings.ray, slots=settings.ray_slots)
    app.state.embedder = app.state.predictor = None
    # the embed encoder's torch threads (options/threads.py), before it loads; without an
    # encoder this process runs no torch: the budget it would have, shown by /healthz
    app.state.threads = use_threads() if settings.encoder else threads_in_use() or thread_budget()
    log.info("torch threads: %s", app.state.threads.why())
    if settings.encoder:
        from snowfire.extractor import EmbedWorker, ExtractConfig

        log.info("loading encoder %s for /v1/embed", settings.encoder)
        config = ExtractConfig(
            encoder=settings.encoder,
            store=settings.store,
            device=settings.device,
            token_budget=settings.embed_token_budget,
            progress=False,
        )
        app.state.embedder = EmbedWorker(
            app.state.store,
            config,
            max_wait_ms=settings.embed_max_wait_ms,
            max_queue=settings.embed_max_queue,
            on_batch=app.state.metrics.encoded,
        )
        from snowfire.serving import Predictor, RunRegistry

        app.state.predictor = Predictor(
            RunRegistry(settings.runs),
            app.state.store,
            app.state.embedder,
            device=settings.device,
            max_queue=settings.predict_max_queue,
            timeout=settings.predict_timeout,
            observer=app.state.metrics,
        )
    yield
    if app.state.ray is not None:
        app.state.ray.close()
    if app.state.predictor is not None:
        app.state.predictor.close()
    if app.state.embedder is not None:
        app.state.embedder.close()
    app.state.store = app.state.queue = app.state.embedder = app.state.predictor = None


def create_app(
    store_dir: str | os.PathLike | None = None, *, settings: Settings | None = None
) -> FastAPI:
    """The snowfire service for a store directory (default: SNOWFIRE_STORE), with the job
    endpoints when `settings.home` names a data directory (SNOWFIRE_HOME)."""
    settings = settings or Settings()
    if store_dir is not None:
        settings = settings.model_copy(update={"store": str(store_dir)})
    app = FastAPI(
        title="snowfire",
        version=snowfire_version(),
        description="All-layer encoder activations from a snowfire store. Features come as "
        "application/x-safetensors (default) or, for small requests, application/json; "
        f"caps: {settings.max_json_values:,} feature values per JSON response, "
        f"{settings.max_body_bytes:,} bytes per safetensors response, "
        f"{settings.max_request_bytes:,} bytes per request body (413 above).",
        lifespan=lifespan,
    )
    app.state.settings = settings
    install_error_handlers(app)
    install_openapi(app)
    app.include_router(router)
    app.include_router(embed_router)
    app.include_router(predict_router)
    app.include_router(job_router)
    app.include_router(layers_router)
    app.include_router(page_router)
    app.include_router(layers_page_router)
    metrics = app.state.metrics = Metrics(app.state)

    @app.get(
        "/metrics",
        include_in_schema=True,
        tags=["service"],
        response_class=PlainTextResponse,
        summary="Prometheus metrics",
    )
    def prometheus_metrics() -> PlainTextResponse:
        return PlainTextResponse(metrics.render(), media_type=METRICS_TYPE)

    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        origins = [o.strip() for o in settings.cors_origins.split(",") if o.strip()]
        headers = ["Authorization", "Content-Type", "Idempotency-Key"]
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST"],
            allow_headers=headers,
        )
    app.add_middleware(BodyGuard, limit=settings.max_request_bytes)  # read after the key check
    ring = app.state.api_keys = KeyRing(load_keys(settings.api_keys, settings.api_keys_file))
    app.add_middleware(APIKeys, ring=ring)
    app.add_middleware(
        InFlightLimit,
        limit=settings.max_in_flight,
        retry_after=settings.retry_after,
        on_refused=metrics.refuse,
    )
    app.add_middleware(MetricsMiddleware, metrics=metrics)  # outermost: counts 401s, 429s too
    return app


def serve(settings: Settings | None = None) -> None:
    """Run the service with uvicorn until interrupted (default settings: the SNOWFIRE_*
    environment's)."""
    import uvicorn

    settings = settings or Settings()
    uvicorn.run(
        create_app(settings=settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
    )
