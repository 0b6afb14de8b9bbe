"""The store's and the job queue's exceptions become HTTP status codes here, in one place;
routes never catch.

Every error body is `{"detail": "<what was wrong>"}` (plus `"error": "<class>"` for store and
job errors, which lets `cache.RemoteStore` raise the very class the local store would).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from snowfire.cache import (
    ExampleNotFoundError,
    FeatureSetNotFoundError,
    InvalidSelectionError,
    RequestTooLargeError,
    StoreError,
    StoreUnreachableError,
)
from snowfire.extractor import EmbedBusyError
from snowfire.jobs import (
    InvalidJobError,
    JobConflictError,
    JobError,
    JobInputNotFoundError,
    JobNotFoundError,
    JobPathForbiddenError,
    JobsDisabledError,
    JobStateError,
    describe_validation,
)
from snowfire.serving import (
    InputFormError,
    PredictBusyError,
    PredictTimeoutError,
    RunEncoderError,
    RunNotFoundError,
    RunNotReadyError,
    ServingError,
)
from snowfire.tasks import escaped

from .embed_routes import EmbedUnavailableError, EmbedValueError
from .limits import EMBED_QUEUE, too_many
from .metrics import PREDICT_QUEUE
from .predict_routes import PredictUnavailableError

log = logging.getLogger(__name__)

#: Store or job error -> HTTP status, the first class that matches (subclasses first); any
#: other (corrupt, incompatible store) is a 500. A request reaches the store only once its body
#: fits the schema, so what the store refuses is a state the schema cannot know: 409 for a
#: selection this feature set cannot give (an index or layer outside it, a mix of another
#: depth, cls on a set without [CLS]), 404 for what is not there.
STATUS: dict[type[Exception], int] = {
    FeatureSetNotFoundError: 404,
    ExampleNotFoundError: 404,
    InvalidSelectionError: 409,
    RequestTooLargeError: 413,
    StoreUnreachableError: 503,
    JobNotFoundError: 404,
    JobPathForbiddenError: 403,
    JobInputNotFoundError: 404,
    JobConflictError: 409,
    InvalidJobError: 422,
    JobStateError: 409,
    JobsDisabledError: 503,
    EmbedUnavailableError: 503,
    EmbedValueError: 422,
    RunNotFoundError: 404,
    RunNotReadyError: 409,
    RunEncoderError: 409,
    InputFormError: 422,
    PredictTimeoutError: 504,
    PredictUnavailableError: 503,
}


async def error_handler(request: Request, exc: Exception) -> JSONResponse:
    status = next((code for cls, code in STATUS.items() if isinstance(exc, cls)), 500)
    if status == 500:
        log.error("%s %s: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
    detail = escaped(str(exc))  # the text rule holds in answers too: no lone surrogate echoed
    return JSONResponse({"detail": detail, "error": type(exc).__name__}, status_code=status)


def _busy(request: Request, exc: Exception, queue: str, setting: str, bound: int) -> Response:
    """429 with Retry-After: a queue (`queue`, bounded by `setting` = `bound`) is full."""
    settings = request.app.state.settings
    request.app.state.metrics.refuse(queue)
    status, headers, body = too_many(
        f"{exc} ({setting}={bound}): retry after {settings.retry_after} s", settings.retry_after
    )
    return Response(body, status_code=status, headers={k.decode(): v.decode() for k, v in headers})


async def embed_busy(request: Request, exc: Exception) -> Response:
    """429 with Retry-After: the embed queue is at its bound (api/limits.py)."""
    bound = request.app.state.settings.embed_max_queue
    return _busy(request, exc, EMBED_QUEUE, "SNOWFIRE_EMBED_MAX_QUEUE", bound)


async def predict_busy(request: Request, exc: Exception) -> Response:
    """429 with Retry-After: the predict compute thread's queue is at its bound."""
    bound = request.app.state.settings.predict_max_queue
    return _busy(request, exc, PREDICT_QUEUE, "SNOWFIRE_PREDICT_MAX_QUEUE", bound)


async def validation_error_handler(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's list of validation errors as one sentence, e.g.
    `indices.1: Input should be a valid integer (got 'x')`."""
    assert isinstance(exc, RequestValidationError)
    return JSONResponse({"detail": describe_validation(exc.errors())}, status_code=422)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _routed(request: Request, method: str) -> bool:
    scope = {**request.scope, "method": method}
    return any(route.matches(scope)[0] == Match.FULL for route in request.app.router.routes)


async def method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
    """405 with `Allow` listing every method of the path (Starlette lists only the first
    route's: GET and POST /v1/jobs are two routes); other HTTP errors as Starlette sends them."""
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        methods = [m for m in _METHODS if _routed(request, m)]
        headers["Allow"] = ", ".join(methods)
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(StarletteHTTPException, method_not_allowed)
    app.add_exception_handler(StoreError, error_handler)
    app.add_exception_handler(JobError, error_handler)
    app.add_exception_handler(EmbedUnavailableError, error_handler)
    app.add_exception_handler(EmbedValueError, error_handler)
    app.add_exception_handler(EmbedBusyError, embed_busy)
    app.add_exception_handler(PredictBusyError, predict_busy)
    app.add_exception_handler(ServingError, error_handler)
    app.add_exception_handler(PredictUnavailableError, error_handler)
    app.add_exception_handler(RequestValidationError, validation_error_handler)
