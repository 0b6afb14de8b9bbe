"""The REST endpoints. Thin: each asks the store and shapes the answer; errors are mapped
to status codes in errors.py."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from snowfire.cache import JSON, SAFETENSORS, STORE_FORMAT_VERSION, FeatureSetInfo

from .deps import FormatDep, SettingsDep, StoreDep, ThreadsDep
from .features import (
    body_cap,
    json_cap,
    read_capped,
    safetensors_response,
    stream_features,
    to_json,
)
from .schemas import (
    ErrorBody,
    FeatureSetDetail,
    FeatureSetKeys,
    FeatureSetLengths,
    FeatureSetOrder,
    FeatureSetSummary,
    FeatureSetTexts,
    FeaturesJSON,
    FeaturesRequest,
    Health,
    Limits,
    Threads,
)

router = APIRouter()

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in {
        404: "unknown feature set or example key",
        406: "Accept names no format this endpoint serves",
        413: "the response would pass its cap (see /healthz limits)",
        422: "the body does not fit the schema: both or neither of indices and keys, a "
        "layer below 0",
    }.items()
}


def snowfire_version() -> str:
    try:
        return version("snowfire")
    except PackageNotFoundError:
        return "unknown"


def _detail(info: FeatureSetInfo) -> FeatureSetDetail:
    return FeatureSetDetail(**info.summary(), manifest=info.manifest)


@router.get("/healthz", response_model=Health)
def healthz(store: StoreDep, settings: SettingsDep, threads: ThreadsDep) -> Health:
    return Health(
        store=str(store.path),
        featuresets=len(store.list_featuresets()),
        version=snowfire_version(),
        store_format=STORE_FORMAT_VERSION,
        limits=Limits(
            max_json_values=settings.max_json_values,
            max_body_bytes=settings.max_body_bytes,
            max_request_bytes=settings.max_request_bytes,
            max_in_flight=settings.max_in_flight,
            embed_max_queue=settings.embed_max_queue,
            predict_max_queue=settings.predict_max_queue,
        ),
        threads=Threads(**threads.to_json()),
    )


@router.get("/v1/featuresets", response_model=list[FeatureSetSummary] | list[FeatureSetDetail])
def list_featuresets(
    store: StoreDep,
    manifest: Annotated[bool, Query(description="include each set's manifest")] = False,
) -> list[FeatureSetSummary] | list[FeatureSetDetail]:
    if manifest:
        return [_detail(fs) for fs in store.list_featuresets()]
    return [FeatureSetSummary(**fs.summary()) for fs in store.list_featuresets()]


@router.get("/v1/featuresets/find", response_model=FeatureSetDetail, responses=_ERRORS)
def find_featureset(
    store: StoreDep,
    encoder: str,
    task: str,
    split: str,
    pair_encoding: str | None = None,
    sha256: Annotated[str | None, Query(description="the source file's sha256")] = None,
    read: Annotated[str | None, Query(description="how the source file is read")] = None,
) -> FeatureSetDetail:
    """The one set of a task split made by an encoder (`Store.find_featureset`)."""
    return _detail(
        store.find_featureset(
            encoder=encoder,
            task=task,
            split=split,
            pair_encoding=pair_encoding,
            sha256=sha256,
            read=read,
        )
    )


@router.get("/v1/featuresets/{fs_id}", response_model=FeatureSetDetail, responses=_ERRORS)
def get_featureset(fs_id: str, store: StoreDep) -> FeatureSetDetail:
    return _detail(store.get_featureset(fs_id))


@router.get("/v1/featuresets/{fs_id}/keys", response_model=FeatureSetKeys, responses=_ERRORS)
def featureset_keys(fs_id: str, store: StoreDep) -> FeatureSetKeys:
    return FeatureSetKeys(id=fs_id, keys=store.featureset_keys(fs_id))


@router.get("/v1/featuresets/{fs_id}/lengths", response_model=FeatureSetLengths, responses=_ERRORS)
def featureset_lengths(fs_id: str, store: StoreDep) -> FeatureSetLengths:
    return FeatureSetLengths(id=fs_id, lengths=store.featureset_lengths(fs_id))


@router.get("/v1/featuresets/{fs_id}/order", response_model=FeatureSetOrder, responses=_ERRORS)
def featureset_order(fs_id: str, store: StoreDep) -> FeatureSetOrder:
    return FeatureSetOrder(id=fs_id, order=store.storage_order(fs_id))


@router.get("/v1/featuresets/{fs_id}/texts", response_model=FeatureSetTexts, responses=_ERRORS)
def featureset_texts(fs_id: str, store: StoreDep) -> FeatureSetTexts:
    return FeatureSetTexts(id=fs_id, texts=store.featureset_texts(fs_id))


@router.post(
    "/v1/featuresets/{fs_id}/features",
    response_class=Response,
    responses={
        200: {
            "description": f"{SAFETENSORS} (default) or {JSON}, chosen by Accept",
            "content": {
                SAFETENSORS: {"schema": {"type": "string", "format": "binary"}},
                JSON: {"schema": FeaturesJSON.model_json_schema()},
            },
        },
        **_ERRORS,
        409: {
            "model": ErrorBody,
            "description": "the selection does not fit this feature set (the schema cannot "
            "know it): an index or layer outside it, mix weights for another number of "
            "layers, pool cls on a set without [CLS] states, pool_sides on single texts",
        },
    },
)
def read_features(
    fs_id: str, body: FeaturesRequest, store: StoreDep, settings: SettingsDep, fmt: FormatDep
) -> Response:
    """Features of some examples: all layers, or the `layers` named."""
    if fmt == "json":
        batch = read_capped(store, fs_id, body, settings.read_chunk_examples, json_cap(settings))
        return Response(to_json(batch, fs_id).model_dump_json(), media_type=JSON)
    if body.mix is None and body.pool == "none":
        return stream_features(store, fs_id, body, settings)
    batch = read_capped(
        store, fs_id, body, settings.read_chunk_examples, body_cap(settings), raw=True
    )
    return safetensors_response(batch, fs_id)
