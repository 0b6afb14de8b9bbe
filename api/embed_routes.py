"""POST /v1/embed: compute-and-cache features for texts sent in the request (the encoding:
`extractor.EmbedWorker`)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response

from snowfire.cache import (
    JSON,
    SAFETENSORS,
    ExampleBatch,
    RequestTooLargeError,
    body_bytes,
    reduce_batch,
)
from snowfire.extractor import EmbedWorker, TextInput

from .deps import FormatDep, SettingsDep, StoreDep
from .features import safetensors_response, to_json
from .schemas import EmbedJSON, EmbedRequest, ErrorBody

router = APIRouter(tags=["embed"])

#: White space inside a word given as is (what str.split splits on).
_SPACE = re.compile(r"\s")

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in {
        406: "Accept names no format this endpoint serves",
        413: "more texts or words than the service's limits, or a response above its cap",
        409: "a layer outside the served encoder's or pool cls where it stores no [CLS] state",
        422: "the body does not fit the schema: not exactly one of texts/pairs/tokens, an "
        "empty text, a word holding white space",
        503: "the service was started without an encoder (snowfire serve --encoder minilm)",
    }.items()
}


class EmbedUnavailableError(RuntimeError):
    """503: the service was started without an encoder."""


def get_embedder(request: Request) -> EmbedWorker:
    worker = getattr(request.app.state, "embedder", None)
    if worker is None:
        raise EmbedUnavailableError(
            "this service computes no features: it was started without an encoder. Start it "
            "with `snowfire serve --encoder minilm` (or SNOWFIRE_ENCODER=minilm; any encoder "
            "spec extract takes) to embed texts the store does not hold"
        )
    return worker


EmbedderDep = Annotated[EmbedWorker, Depends(get_embedder)]


def _texts(body: EmbedRequest, max_texts: int, max_words: int) -> list[TextInput]:
    """The request's texts as word lists, its limits checked first: the number of texts before
    any is split, the words as they are counted (a text past the limit is not split), the
    words' own checks last, so an oversize request is refused before that work."""
    field = "texts" if body.texts is not None else "pairs" if body.pairs is not None else "tokens"
    given = body.texts if body.texts is not None else body.pairs or body.tokens or []
    if len(given) > max_texts:
        raise RequestTooLargeError(
            f"{len(given)} texts in one request, the limit is {max_texts} "
            "(SNOWFIRE_EMBED_MAX_TEXTS): split the request"
        )
    raw: list[tuple[list[str], list[str] | None]] = []
    words = 0
    for item in given:
        if isinstance(item, str):  # texts
            a, b = item.split(), None
        elif field == "pairs":
            a, b = item[0].split(), item[1].split()
        else:
            a, b = list(item), None
        words += len(a) + len(b or ())
        if words > max_words:
            raise RequestTooLargeError(
                f"more than {max_words} words in one request (past it at {field}.{len(raw)}), "
                f"the limit is {max_words} (SNOWFIRE_EMBED_MAX_WORDS): split the request"
            )
        raw.append((a, b))
    out = []
    for i, (a, b) in enumerate(raw):
        if not a or (b is not None and not b):
            raise EmbedValueError(f"{field}.{i}: empty text (no words after splitting on spaces)")
        if field == "tokens" and any(not w or _SPACE.search(w) for w in a):
            raise EmbedValueError(f"{field}.{i}: a word is empty or holds white space")
        out.append(TextInput(tuple(a), None if b is None else tuple(b)))
    return out


def _check_limits(texts: list[TextInput], max_texts: int, max_words: int) -> None:
    """The embed limits on texts already split (POST /v1/predict's examples)."""
    if len(texts) > max_texts:
        raise RequestTooLargeError(
            f"{len(texts)} texts in one request, the limit is {max_texts} "
            "(SNOWFIRE_EMBED_MAX_TEXTS): split the request"
        )
    words = sum(len(t.words_a) + len(t.words_b or ()) for t in texts)
    if words > max_words:
        raise RequestTooLargeError(
            f"{words} words in one request, the limit is {max_words} "
            "(SNOWFIRE_EMBED_MAX_WORDS): split the request"
        )


class EmbedValueError(ValueError):
    """422: the request's texts cannot be embedded."""


@router.post(
    "/v1/embed",
    response_class=Response,
    responses={
        200: {
            "description": f"{SAFETENSORS} (default; the features body of "
            f"/v1/featuresets/{{id}}/features, pooled as there, metadata 'cached' added) or "
            f"{JSON} for small requests",
            "content": {
                SAFETENSORS: {"schema": {"type": "string", "format": "binary"}},
                JSON: {"schema": EmbedJSON.model_json_schema()},
            },
        },
        **_ERRORS,
    },
)
def embed(
    body: EmbedRequest,
    embedder: EmbedderDep,
    store: StoreDep,
    settings: SettingsDep,
    fmt: FormatDep,
    request: Request,
) -> Response:
    """Features of the texts sent: read from the store where their content key is there,
    computed by the service's encoder (and stored) where not. `cached` says which were hits."""
    texts = _texts(body, settings.embed_max_texts, settings.embed_max_words)
    keys = embedder.keys(texts, body.pair_encoding)
    pool_id = embedder.pool(body.pair_encoding)
    hits = embedder.ensure(texts, keys, body.pair_encoding)
    request.app.state.metrics.embed_examples.labels("hit").inc(sum(hits))
    request.app.state.metrics.embed_examples.labels("miss").inc(len(hits) - sum(hits))
    batch = store.read_keys(pool_id, keys, body.layers)
    if body.pool != "none":
        batch = reduce_batch(batch, pool=body.pool)
    if fmt == "json":
        if batch.features.size > settings.max_json_values:
            raise RequestTooLargeError(
                f"a JSON response holds at most {settings.max_json_values:,} feature values "
                f"(SNOWFIRE_MAX_JSON_VALUES), this one {batch.features.size:,}: ask for "
                f"pooling, fewer texts or layers, or Accept: {SAFETENSORS}"
            )
        return Response(_json(batch, pool_id, hits, body.pool), media_type=JSON)
    if body_bytes(batch) > settings.max_body_bytes:
        raise RequestTooLargeError(
            f"a safetensors response holds at most {settings.max_body_bytes:,} bytes "
            f"(SNOWFIRE_MAX_BODY_BYTES), this one {body_bytes(batch):,}: split the request"
        )
    extra = {"cached": _dumps(hits), "pool": body.pool, "encoder_id": pool_id}
    return safetensors_response(batch, f"embed:{pool_id}", extra)


def _dumps(value) -> str:
    import json

    return json.dumps(value)


def _json(batch: ExampleBatch, pool_id: str, hits: list[bool], how: str) -> str:
    body = to_json(batch, f"embed:{pool_id}").model_dump()
    return EmbedJSON(**body, encoder_id=pool_id, cached=hits, pool=how).model_dump_json()
