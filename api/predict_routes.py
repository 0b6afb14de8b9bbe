"""POST /v1/predict and GET /v1/runs: predictions of the saved runs the service registers
(snowfire.serving: the registry, the one encoder pass, the shared encoder, the compute thread).
Thin: the predictor does the work, errors map to statuses in errors.py."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from snowfire.cache import RequestTooLargeError
from snowfire.serving import Predictor

from .deps import SettingsDep
from .embed_routes import _check_limits
from .predict_schemas import PredictRequest, PredictResponse, RunList, RunSummary
from .schemas import ErrorBody

router = APIRouter(tags=["predict"])

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in {
        403: "API keys are on and this key may not predict (a predict or write key can)",
        404: "no run of that name (GET /v1/runs lists them)",
        409: "the run is not finished, or was made with another encoder than the one loaded",
        413: "more runs, texts or words than the service's limits",
        422: "bad request: not exactly one of texts/pairs/tokens, an empty text, a form the "
        "run's task does not read (pairs for a pair task, texts or tokens otherwise)",
        503: "the service was started without an encoder (snowfire serve --encoder minilm)",
        504: "the predictions were not computed within SNOWFIRE_PREDICT_TIMEOUT",
    }.items()
}


class PredictUnavailableError(RuntimeError):
    """503: the service predicts nothing (no encoder)."""


def get_predictor(request: Request) -> Predictor:
    predictor = getattr(request.app.state, "predictor", None)
    if predictor is None:
        raise PredictUnavailableError(
            "this service predicts nothing: it was started without an encoder. Start it with "
            "`snowfire serve --home DIR --encoder minilm` (SNOWFIRE_ENCODER: the encoder the "
            "runs were made with), its runs under DIR/runs (or --runs)"
        )
    return predictor


PredictorDep = Annotated[Predictor, Depends(get_predictor)]


@router.post(
    "/v1/predict",
    response_model=PredictResponse,
    response_model_exclude_none=True,
    responses=_ERRORS,
)
def predict(body: PredictRequest, predictor: PredictorDep, settings: SettingsDep):
    """Each named run's predictions for the examples: labels with their probabilities,
    scores, or tags with their spans; the same values as `snowfire predict` on a file of these
    examples. ❄️ runs share one encoder pass (texts already stored cost none: `cached`)."""
    if len(body.runs) > settings.predict_max_runs:
        raise RequestTooLargeError(
            f"{len(body.runs)} runs in one request, the limit is {settings.predict_max_runs} "
            "(SNOWFIRE_PREDICT_MAX_RUNS): split the request"
        )
    _check_limits(_inputs(body), settings.embed_max_texts, settings.embed_max_words)
    answer = predictor.predict(
        body.runs,
        texts=body.texts,
        pairs=None if body.pairs is None else [tuple(p) for p in body.pairs],
        tokens=body.tokens,
        timeout=settings.predict_timeout,
    )
    return answer.to_json()


def _inputs(body: PredictRequest):
    """The examples as embed's limits count them (texts and words)."""
    from snowfire.extractor import TextInput

    if body.pairs is not None:
        return [TextInput(tuple(a.split()), tuple(b.split())) for a, b in body.pairs]
    if body.texts is not None:
        return [TextInput(tuple(t.split())) for t in body.texts]
    return [TextInput(tuple(words)) for words in body.tokens or []]


@router.get("/v1/runs", response_model=RunList, responses={404: _ERRORS[404], 503: _ERRORS[503]})
def list_runs(predictor: PredictorDep) -> RunList:
    """The runs under the service's runs directory (HOME/runs), finished or not, with task,
    kind, metric, score, size and whether this service can serve them (`status`)."""
    rows = []
    for info, status, why, memory in predictor.listing():
        rows.append(
            RunSummary(
                name=info.name,
                side=info.side,
                kind=info.kind,
                task=info.task,
                task_kind=info.task_kind,
                input=None if info.pair is None else "pairs" if info.pair else "texts",
                metric=info.metric,
                score=info.score,
                split=info.split,
                size_bytes=info.size_bytes,
                encoder=info.encoder,
                status=status,
                reason=why,
                memory_bytes=memory,
            )
        )
    shared = predictor.models.memory().get("(shared encoder)")
    return RunList(runs=rows, shared_encoder_bytes=shared)
