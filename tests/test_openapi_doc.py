"""What the OpenAPI document says, checked against what the service does (fast; the full
contract run is tests/test_openapi_contract.py)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from snowfire.api import Settings, create_app


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(settings=Settings(store=tmp_path / "store", home=tmp_path))) as c:
        yield c


def test_every_error_status_is_the_error_body_the_service_sends(client):
    doc = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            for status, response in op["responses"].items():
                if status.startswith(("4", "5")):
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (path, status)
            if path not in ("/healthz", "/openapi.json"):
                assert "401" in op["responses"], (method, path)
            if "requestBody" in op:
                assert {"400", "422"} <= set(op["responses"]), (method, path)
    # a real 422 has that shape
    r = client.get("/v1/jobs", params={"status": "nope"})
    assert r.status_code == 422 and isinstance(r.json()["detail"], str)


def test_exactly_one_selector_is_in_the_schema_and_null_is_refused(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    features = schemas["FeaturesRequest"]
    assert features["oneOf"] == [{"required": ["indices"]}, {"required": ["keys"]}]
    assert features["properties"]["indices"]["type"] == "array"  # no null branch
    assert schemas["EmbedRequest"]["oneOf"][2] == {"required": ["tokens"]}
    for body in ({}, {"indices": None, "keys": ["k"]}):
        r = client.post("/v1/featuresets/x/features", json=body)
        assert r.status_code == 422, (body, r.text)
    assert "null is not a value here" in r.json()["detail"]


def test_job_params_are_documented_per_kind(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    kinds = [b["properties"]["kind"]["enum"][0] for b in schemas["JobRequest"]["oneOf"]]
    assert kinds == ["extract", "train", "finetune", "compare", "layers"]
    train = schemas["TrainParams"]
    assert {"encoder", "head"} <= set(train["required"])
    # a registered task or the user's own (one of the two, checked when the job is submitted)
    assert {"task", "task_spec"} <= set(train["properties"]) and "task" not in train["required"]
    assert train["properties"]["epochs"]["minimum"] == 1
    task = train["properties"]["task"]
    names = task.get("enum") or [e for alt in task.get("anyOf", []) for e in alt.get("enum", [])]
    assert "sst2" in names


def test_a_task_spec_is_documented_as_a_path_or_the_object_inline(client):
    """Every kind's params take task_spec as the spec file's path or the spec object (compare:
    a list of either), and an inline object validates against the published schema."""
    import jsonschema

    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    for kind in ("Extract", "Train", "Finetune"):
        field = schemas[f"{kind}Params"]["properties"]["task_spec"]
        assert [alt["type"] for alt in field["anyOf"]] == ["string", "object", "null"], kind
    listed = schemas["CompareParams"]["properties"]["task_spec"]["anyOf"][0]
    assert listed["type"] == "array"
    assert [alt["type"] for alt in listed["items"]["anyOf"]] == ["string", "object"]
    spec = {"name": "films", "kind": "classification", "splits": {"train": "t.csv"}}
    train = {"$ref": "#/components/schemas/TrainParams", "components": doc["components"]}
    for task_spec in (spec, "films.yaml"):
        jsonschema.validate({"encoder": "minilm", "head": "linear", "task_spec": task_spec}, train)
    with pytest.raises(jsonschema.ValidationError, match=r"3 is not valid under any"):
        jsonschema.validate({"encoder": "minilm", "head": "linear", "task_spec": 3}, train)


def test_method_not_allowed_lists_every_method_of_the_path(client):
    r = client.request("PUT", "/v1/jobs")
    assert r.status_code == 405
    assert set(r.headers["allow"].split(", ")) == {"GET", "POST"}
