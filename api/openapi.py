"""The OpenAPI document, made to tell the truth about what the service answers.

FastAPI documents 422 as its own `HTTPValidationError` (a list of errors) while this service
answers `{"detail": "<one sentence>"}` (errors.py), knows nothing of the keys middleware (401,
403), of the bounds (429 with Retry-After, limits.py) or of bodies it cannot parse (400), and
shows job params as any object, nor what api/body.py refuses in every body. Here, after
FastAPI has built the document: every error status a route can return points at `ErrorBody`
(400, 413 and 422 for every body); job params are the per-kind models jobs/params.py derives
from the configs; every string of a request body says the text rule (a pattern), every integer
int64's bounds, every free-form object that its keys and values keep the rule; links say where
ids come from (a feature set listed, a job queued).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from snowfire.tasks import INT_MAX, INT_MIN, TEXT_PATTERN

from .limits import UNBOUNDED

ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}
_OPEN = {"/healthz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ERROR_REF}}}


def _too_many(path: str) -> dict[str, Any]:
    """429: a bound of api/limits.py reached; Retry-After says when to come back."""
    why = "the service handles its limit of requests at once (SNOWFIRE_MAX_IN_FLIGHT)"
    if path == "/v1/embed":
        why += ", or its limit of embed requests wait for the encoder (SNOWFIRE_EMBED_MAX_QUEUE)"
    if path == "/v1/predict":
        why += (
            ", or its limit of embed requests wait for the encoder (SNOWFIRE_EMBED_MAX_QUEUE), "
            "or of predict requests for the compute thread (SNOWFIRE_PREDICT_MAX_QUEUE)"
        )
    retry = {
        "description": "seconds to wait before retrying (SNOWFIRE_RETRY_AFTER)",
        "schema": {"type": "integer", "minimum": 1},
    }
    return {**_error(f"refused at once: {why}"), "headers": {"Retry-After": retry}}


def _job_request(schemas: dict[str, Any]) -> None:
    """JobRequest as one branch per kind: {"kind": K, "params": <K's params model>}."""
    from snowfire.jobs import JOB_KINDS, params_model

    branches = []
    for kind in JOB_KINDS:
        model = params_model(kind)
        name = f"{kind.capitalize()}Params"
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for sub, body in schema.pop("$defs", {}).items():
            schemas.setdefault(sub, body)
        schema["title"] = name
        schemas[name] = schema
        branches.append(
            {
                "type": "object",
                "title": f"{kind} job",
                "properties": {
                    "kind": {"type": "string", "enum": [kind]},
                    "params": {"$ref": f"#/components/schemas/{name}"},
                },
                "required": ["kind", "params"] if schema.get("required") else ["kind"],
                "additionalProperties": False,
            }
        )
    old = schemas.get("JobRequest", {})
    schemas["JobRequest"] = {
        "title": "JobRequest",
        "description": old.get("description", ""),
        "oneOf": branches,
        "discriminator": {"propertyName": "kind"},
        **({"examples": old["examples"]} if "examples" in old else {}),
    }


def _links(paths: dict[str, Any]) -> None:
    fs_params = {"fs_id": "$response.body#/0/id"}
    listed = paths["/v1/featuresets"]["get"]["responses"]["200"]
    listed["links"] = {
        op: {"operationId": paths[path][method]["operationId"], "parameters": fs_params}
        for op, path, method in (
            ("GetFeatureSet", "/v1/featuresets/{fs_id}", "get"),
            ("GetKeys", "/v1/featuresets/{fs_id}/keys", "get"),
            ("GetLengths", "/v1/featuresets/{fs_id}/lengths", "get"),
            ("GetOrder", "/v1/featuresets/{fs_id}/order", "get"),
            ("GetTexts", "/v1/featuresets/{fs_id}/texts", "get"),
            ("ReadFeatures", "/v1/featuresets/{fs_id}/features", "post"),
            ("GetLayers", "/v1/featuresets/{fs_id}/layers", "get"),
        )
    }
    job_params = {"job_id": "$response.body#/id"}
    queued = paths["/v1/jobs"]["post"]["responses"]["202"]
    queued["links"] = {
        "GetJob": {
            "operationId": paths["/v1/jobs/{job_id}"]["get"]["operationId"],
            "parameters": job_params,
        },
        "CancelJob": {
            "operationId": paths["/v1/jobs/{job_id}/cancel"]["post"]["operationId"],
            "parameters": job_params,
        },
    }


#: Any JSON value whose strings and keys keep the text rule (a free-form object's values).
JSON_VALUE = "JSONValue"
_JSON_VALUE_SCHEMA = {
    "title": JSON_VALUE,
    "description": "any JSON value whose strings and keys hold no NUL or unpaired surrogate",
    "anyOf": [
        {"type": "string", "pattern": TEXT_PATTERN},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "items": {"$ref": f"#/components/schemas/{JSON_VALUE}"}},
        {
            "type": "object",
            "propertyNames": {"pattern": TEXT_PATTERN},
            "additionalProperties": {"$ref": f"#/components/schemas/{JSON_VALUE}"},
        },
    ],
}
_NESTED = ("items", "additionalProperties", "not")
_BRANCHES = ("anyOf", "oneOf", "allOf", "prefixItems")


def _keep_body_rules(schema: Any, schemas: dict[str, Any], seen: set[str]) -> None:
    """Say in a request body's schema what api/body.py refuses in every body: a string gets the
    text rule's pattern (unless it has its own, which says it), an integer int64's bounds, a
    free-form object's keys and values the rule. Components are refined once (`seen`)."""
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref", "")
    if ref.startswith("#/components/schemas/"):
        name = ref.rsplit("/", 1)[1]
        if name not in seen:
            seen.add(name)
            _keep_body_rules(schemas.get(name), schemas, seen)
        return
    kind = schema.get("type")
    if kind == "string" and not {"pattern", "enum", "const"} & set(schema):
        schema["pattern"] = TEXT_PATTERN
    if kind == "integer":
        if "minimum" not in schema and "exclusiveMinimum" not in schema:
            schema["minimum"] = INT_MIN
        if "maximum" not in schema and "exclusiveMaximum" not in schema:
            schema["maximum"] = INT_MAX
    if kind == "object" or "properties" in schema or "additionalProperties" in schema:
        if schema.get("additionalProperties", True) is not False:
            schema.setdefault("propertyNames", {"pattern": TEXT_PATTERN})
        if schema.get("additionalProperties") is True or (
            kind == "object" and "properties" not in schema and "additionalProperties" not in schema
        ):
            schema["additionalProperties"] = {"$ref": f"#/components/schemas/{JSON_VALUE}"}
    for child in schema.get("properties", {}).values():
        _keep_body_rules(child, schemas, seen)
    for key in _NESTED:
        _keep_body_rules(schema.get(key), schemas, seen)
    for key in _BRANCHES:
        for child in schema.get(key, []):
            _keep_body_rules(child, schemas, seen)


def truthful_openapi(app: FastAPI) -> dict[str, Any]:
    """The document, built once (after the lifespan has loaded the embed encoder)."""
    if app.openapi_schema:
        return app.openapi_schema
    doc = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            responses = op.setdefault("responses", {})
            if "422" in responses:
                responses["422"] = _error(responses["422"].get("description", "bad request"))
            if "requestBody" in op:
                responses.setdefault(
                    "400", _error("the body is not UTF-8 JSON, or nests too deep to read")
                )
                responses.setdefault(
                    "413",
                    _error("the body is over its limit (SNOWFIRE_MAX_REQUEST_BYTES)"),
                )
                responses.setdefault("422", _error("the body does not fit the schema (why)"))
            if op.get("parameters"):
                responses.setdefault("422", _error("a parameter does not fit the schema"))
            if path not in _OPEN:
                responses.setdefault(
                    "401", _error("API keys are configured and none was sent, or an unknown one")
                )
            if method == "post" and path.startswith("/v1/jobs"):
                responses.setdefault("403", _error("this API key may read, not submit or cancel"))
            if path not in _OPEN and not path.startswith(("/v1/predict", "/v1/runs")):
                responses.setdefault("403", _error("this API key may only predict"))
            if path.startswith("/v1/jobs"):
                responses.setdefault("503", _error("the service has no data directory (--home)"))
            if path not in UNBOUNDED:
                responses.setdefault("429", _too_many(path))
    _job_request(schemas)
    schemas[JSON_VALUE] = _JSON_VALUE_SCHEMA
    seen: set[str] = {JSON_VALUE}
    for ops in doc["paths"].values():
        for op in ops.values():
            for media in op.get("requestBody", {}).get("content", {}).values():
                _keep_body_rules(media.get("schema"), schemas, seen)
    _links(doc["paths"])
    embedder = getattr(app.state, "embedder", None)
    if embedder is not None:  # the served encoder's layers are known: say so
        top = embedder.encoder(embedder.config.pair_encoding).num_layers - 1
        layers = schemas["EmbedRequest"]["properties"]["layers"]["anyOf"][0]
        layers["items"]["maximum"] = top
        layers["description"] = f"layer indices 0..{top} of the served encoder"
    app.openapi_schema = doc
    return doc


def install(app: FastAPI) -> None:
    app.openapi = lambda: truthful_openapi(app)  # type: ignore[method-assign]
