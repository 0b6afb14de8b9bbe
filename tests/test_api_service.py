"""The REST service against a temporary store: every endpoint, every error code and its
detail, and byte-exact round trips (safetensors and JSON) against `Store.read`."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from snowfire.api import Settings, create_app
from snowfire.cache import Store
from tests.helpers.service import DIM, LAYERS, build_featureset

SAFETENSORS = "application/x-safetensors"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> Path:
    """Two sets: `fs16` (float16) and `fs32` (float32, another encoder)."""
    path = tmp_path_factory.mktemp("api") / "store"
    store = Store(path)
    build_featureset(store, "fs16", "float16", seed=0)
    build_featureset(store, "fs32", "float32", seed=1)
    return path


@pytest.fixture(scope="module")
def client(store_dir):
    with TestClient(create_app(store_dir)) as c:
        yield c


def small_client(store_dir, **caps) -> TestClient:
    settings = Settings(store=store_dir, **caps)
    return TestClient(create_app(settings=settings))


def decode(body: bytes) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    from safetensors.numpy import load

    n = int.from_bytes(body[:8], "little")
    return load(body), json.loads(body[8 : 8 + n]).get("__metadata__", {})


def assert_batch_equal(tensors, meta, want) -> None:
    """A decoded safetensors body equals `Store.read`'s batch, dtype and bytes alike."""
    for name in ("features", "offsets", "word_ids", "type_ids", "pair_starts"):
        got, expected = tensors[name], getattr(want, name)
        assert got.dtype == expected.dtype, name
        np.testing.assert_array_equal(got, expected, err_msg=name)
    assert json.loads(meta["layers"]) == want.layers
    assert json.loads(meta["keys"]) == want.keys


def test_healthz(client, store_dir):
    r = client.get("/healthz")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok"
    assert body["store"] == str(store_dir)
    assert body["featuresets"] == 2
    assert body["version"]
    assert body["limits"] == {
        "max_json_values": 100_000,
        "max_body_bytes": 256 * 2**20,
        "max_request_bytes": 8 * 2**20,
        "max_in_flight": 32,
        "embed_max_queue": 16,
        "predict_max_queue": 16,
    }
    assert body["threads"]["threads"] >= 1 and body["threads"]["why"]


@pytest.mark.parametrize("encoder", [False, True])
def test_healthz_shows_the_torch_threads_and_why(encoder, monkeypatch, store_dir, request):
    """Decided in the lifespan (options/threads.py); applied to torch when there is an embed
    encoder, only shown when there is none."""
    import torch

    from snowfire.options import threads as budget

    monkeypatch.setattr(budget, "_applied", {"budget": None, "interop": True})
    monkeypatch.setenv("SNOWFIRE_THREADS", "1")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    extra = {"encoder": f"hf:{request.getfixturevalue('tiny_bert_dir')}"} if encoder else {}
    seen = []  # torch keeps the count per thread; one started later (the embed thread) takes
    later = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))  # the last set
    try:
        with TestClient(create_app(settings=Settings(store=store_dir, **extra))) as c:
            threads = c.get("/healthz").json()["threads"]
        later.start()
        later.join()
        assert seen == [1 if encoder else 2]
    finally:
        torch.set_num_threads(before)
    assert (threads["threads"], threads["override"], threads["share"]) == (
        1,
        "SNOWFIRE_THREADS=1",
        1,
    )
    assert threads["why"].startswith(
        f"1 thread: SNOWFIRE_THREADS=1 ({threads['cores']} cores available (affinity "
    )


def test_list_and_get_featureset(client, store_dir):
    infos = {fs.id: fs for fs in Store(store_dir).list_featuresets()}
    r = client.get("/v1/featuresets")
    assert r.status_code == 200
    assert r.json() == [infos["fs16"].summary(), infos["fs32"].summary()]
    r = client.get("/v1/featuresets/fs16")
    assert r.status_code == 200
    assert r.json() == {**infos["fs16"].summary(), "manifest": infos["fs16"].manifest}
    r = client.get("/v1/featuresets", params={"manifest": "true"})
    assert [fs["manifest"] for fs in r.json()] == [infos["fs16"].manifest, infos["fs32"].manifest]


def test_keys_texts_and_find(client, store_dir):
    store = Store(store_dir)
    r = client.get("/v1/featuresets/fs32/keys")
    assert r.status_code == 200
    assert r.json() == {"id": "fs32", "keys": store.featureset_keys("fs32")}
    r = client.get("/v1/featuresets/fs32/texts")
    assert r.json()["texts"] == store.featureset_texts("fs32")
    r = client.get("/v1/featuresets/find", params={"encoder": "fake", "task": "sst2"})
    assert r.status_code == 422
    assert r.json() == {"detail": "query.split: Field required"}
    r = client.get(
        "/v1/featuresets/find", params={"encoder": "fake", "task": "sst2", "split": "dev"}
    )
    assert r.status_code == 404  # two sets match: the store's own message
    assert r.json()["detail"] == (
        "2 feature sets match encoder 'fake', task 'sst2', split 'dev': fs16, fs32; "
        "name one with --featureset"
    )


# ---------------------------------------------------------------- features: round trips
@pytest.mark.parametrize("fs_id", ["fs16", "fs32"])
@pytest.mark.parametrize("accept", [None, "*/*", SAFETENSORS])
def test_safetensors_round_trip_is_exact(client, store_dir, fs_id, accept):
    headers = {"Accept": accept} if accept else {}
    r = client.post(
        f"/v1/featuresets/{fs_id}/features", json={"indices": [4, 0, 2, 0]}, headers=headers
    )
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == SAFETENSORS
    tensors, meta = decode(r.content)
    assert_batch_equal(tensors, meta, Store(store_dir).read(fs_id, indices=[4, 0, 2, 0]))
    assert meta["featureset"] == fs_id
    assert meta["dtype"] == ("float16" if fs_id == "fs16" else "float32")
    assert tensors["features"].shape == (6 + 3 + 2 + 3, LAYERS, DIM)


def test_layer_selection(client, store_dir):
    r = client.post("/v1/featuresets/fs16/features", json={"indices": [1, 3], "layers": [2, 0]})
    assert r.status_code == 200
    tensors, meta = decode(r.content)
    want = Store(store_dir).read("fs16", indices=[1, 3], layers=[2, 0])
    assert_batch_equal(tensors, meta, want)
    full = Store(store_dir).read("fs16", indices=[1, 3])
    np.testing.assert_array_equal(tensors["features"], full.features[:, [2, 0]])


def test_integral_numbers_are_integers_as_in_json_schema(client):
    """2.0 is a JSON-Schema integer (the OpenAPI document says "integer"): the same answer
    as 2."""
    want = client.post("/v1/featuresets/fs16/features", json={"indices": [1, 3], "layers": [2, 0]})
    got = client.post(
        "/v1/featuresets/fs16/features", json={"indices": [1.0, 3], "layers": [2.0, 0.0]}
    )
    assert got.status_code == want.status_code == 200, got.text
    assert got.content == want.content


def test_keys_selection(client, store_dir):
    keys = Store(store_dir).featureset_keys("fs32")
    r = client.post("/v1/featuresets/fs32/features", json={"keys": [keys[3], keys[1]]})
    assert r.status_code == 200
    tensors, meta = decode(r.content)
    assert_batch_equal(tensors, meta, Store(store_dir).read("fs32", indices=[3, 1]))


def test_empty_selection(client, store_dir):
    r = client.post("/v1/featuresets/fs16/features", json={"indices": []})
    assert r.status_code == 200
    tensors, meta = decode(r.content)
    assert_batch_equal(tensors, meta, Store(store_dir).read("fs16", indices=[]))
    assert tensors["features"].shape == (0, LAYERS, DIM)


@pytest.mark.parametrize("fs_id", ["fs16", "fs32"])
def test_json_round_trip_is_exact(client, store_dir, fs_id):
    r = client.post(
        f"/v1/featuresets/{fs_id}/features",
        json={"indices": [2, 1], "layers": [1]},
        headers={"Accept": "application/json"},
    )
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    want = Store(store_dir).read(fs_id, indices=[2, 1], layers=[1])
    features = np.array(body["features"], dtype=body["dtype"])
    assert features.shape == tuple(body["shape"]) == want.features.shape
    np.testing.assert_array_equal(features, want.features)
    for name in ("offsets", "word_ids", "type_ids", "pair_starts"):
        assert body[name] == getattr(want, name).tolist(), name
    assert (body["layers"], body["keys"], body["featureset"]) == ([1], want.keys, fs_id)


def test_read_in_chunks_equals_one_read(store_dir):
    """Server-side chunking (to check the cap as it reads) does not change the bytes."""
    with small_client(store_dir, read_chunk_examples=2) as c:
        r = c.post("/v1/featuresets/fs16/features", json={"indices": [4, 3, 2, 1, 0]})
    tensors, meta = decode(r.content)
    assert_batch_equal(tensors, meta, Store(store_dir).read("fs16", indices=[4, 3, 2, 1, 0]))


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        ("application/json;q=0.5, application/x-safetensors", SAFETENSORS),
        ("application/json, */*;q=0.1", "application/json"),
        ("text/html, application/*;q=0.2", SAFETENSORS),
    ],
)
def test_accept_negotiation(client, accept, media):
    r = client.post(
        "/v1/featuresets/fs16/features", json={"indices": [0]}, headers={"Accept": accept}
    )
    assert r.status_code == 200
    assert r.headers["content-type"] == media


# ---------------------------------------------------------------- features: errors
def test_404_unknown_featureset(client, store_dir):
    for r in (
        client.get("/v1/featuresets/nope"),
        client.get("/v1/featuresets/nope/keys"),
        client.post("/v1/featuresets/nope/features", json={"indices": [0]}),
    ):
        assert r.status_code == 404
        assert r.json() == {
            "detail": f"no feature set 'nope' in {store_dir}",
            "error": "FeatureSetNotFoundError",
        }


def test_404_unknown_key(client):
    r = client.post("/v1/featuresets/fs16/features", json={"keys": ["deadbeef"]})
    assert r.status_code == 404
    assert r.json()["detail"].startswith("example 'deadbeef' is not in pool ")
    assert r.json()["error"] == "ExampleNotFoundError"


def test_409_a_layer_the_set_does_not_have(client):
    """The schema cannot know the set's depth: a conflict with it (409), not a bad body."""
    r = client.post("/v1/featuresets/fs16/features", json={"indices": [0], "layers": [0, 3]})
    assert r.status_code == 409
    assert r.json()["detail"] == "layer 3 out of range: this feature set has layers 0..2"


def test_409_an_index_outside_the_set(client):
    for index in (5, -1):  # the set's size, which the schema cannot know, says no to both
        r = client.post("/v1/featuresets/fs16/features", json={"indices": [1, index]})
        assert r.status_code == 409
        assert r.json() == {
            "detail": f"index {index} out of range: feature set 'fs16' has examples 0..4",
            "error": "InvalidSelectionError",
        }


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"indices": [0], "keys": ["k"]}, "give exactly one of 'indices' or 'keys' (got both)"),
        ({"layers": [0]}, "give exactly one of 'indices' or 'keys' (got neither)"),
        ({"indices": [0, "1"]}, "indices.1: Input should be a valid integer (got '1')"),
        ({"indices": [0.5]}, "indices.0: Input should be a valid integer (got 0.5)"),
        ({"indices": [True]}, "indices.0: Input should be a valid integer (got True)"),
        ({"indices": [0], "layers": [1.5]}, "layers.0: Input should be a valid integer (got 1.5)"),
        ({"index": [0]}, "index: Extra inputs are not permitted (got [0])"),
    ],
)
def test_422_bad_body(client, body, detail):
    r = client.post("/v1/featuresets/fs16/features", json=body)
    assert r.status_code == 422
    assert r.json() == {"detail": detail}


def test_413_json_cap(store_dir):
    with small_client(store_dir, max_json_values=100, read_chunk_examples=1) as c:
        ok = c.post(
            "/v1/featuresets/fs16/features",
            json={"indices": [2], "layers": [0]},
            headers={"Accept": "application/json"},
        )
        assert ok.status_code == 200  # 2 tokens x 1 layer x 8 = 16 values
        r = c.post(
            "/v1/featuresets/fs16/features",
            json={"indices": [0, 1, 2]},
            headers={"Accept": "application/json"},
        )
    assert r.status_code == 413
    assert r.json()["detail"] == (
        "a JSON response holds at most 100 feature values (tokens x layers x dim; "
        "SNOWFIRE_MAX_JSON_VALUES) and this one passes it after 2 of 3 examples: "
        f"ask for fewer examples or layers, or Accept: {SAFETENSORS}"
    )


@pytest.mark.parametrize("direct_bytes", [1, 200, 1 << 40], ids=["views", "mixed", "joined"])
@pytest.mark.parametrize("piece_bytes", [1, 3000, 4 << 20], ids=["per-example", "few", "one"])
def test_a_streamed_answer_is_the_encoded_read(store_dir, monkeypatch, piece_bytes, direct_bytes):
    """The service sends features a piece at a time as it reads them, or, for all layers, as
    views of the mapped shards (examples of DIRECT_BYTES or more) and joined pieces (smaller
    ones): the body is byte for byte what wire.encode makes of the local read, whatever the
    pieces, layers or order."""
    from snowfire import api
    from snowfire.cache import wire
    from snowfire.cache.plan import ReadPlan

    monkeypatch.setattr(api.features, "STREAM_BYTES", piece_bytes)
    monkeypatch.setattr(api.features, "DIRECT_BYTES", direct_bytes)
    real_views, viewed = ReadPlan.views, []
    monkeypatch.setattr(ReadPlan, "views", lambda self: viewed.append(v := real_views(self)) or v)
    local = Store(store_dir)
    with small_client(store_dir) as c:
        for fs_id, request in (
            ("fs16", {"indices": [4, 0, 3, 3, 1]}),
            ("fs32", {"indices": [2, 1, 0], "layers": [2, 0]}),
            ("fs16", {"keys": local.featureset_keys("fs16")[1:3], "layers": [1]}),
        ):
            r = c.post(f"/v1/featuresets/{fs_id}/features", json=request)
            assert r.status_code == 200
            args = {k: request[k] for k in ("indices", "keys", "layers") if k in request}
            want = wire.encode(local.read(fs_id, **args), fs_id)
            assert r.content == want and r.headers["content-length"] == str(len(want))
    # the all-layer read went out as views; the layer subsets were copied
    assert [v is not None for v in viewed] == [True, False, False]


def test_413_safetensors_cap(store_dir):
    from snowfire.cache.wire import body_bytes

    # the example at which the body passes 1,000 bytes, by body_bytes of local reads
    local = Store(store_dir)
    sizes = [body_bytes(local.read("fs32", indices=list(range(k)))) for k in range(1, 6)]
    done = next(k for k, size in enumerate(sizes, start=1) if size > 1000)
    assert 1 < done < 5  # the fixture's sizes make this a real case
    with small_client(store_dir, max_body_bytes=1000) as c:
        r = c.post("/v1/featuresets/fs32/features", json={"indices": [0, 1, 2, 3, 4]})
        ok = c.post("/v1/featuresets/fs32/features", json={"indices": list(range(done - 1))})
    assert r.status_code == 413 and ok.status_code == 200
    assert r.json()["detail"] == (
        "a safetensors response holds at most 1,000 bytes (SNOWFIRE_MAX_BODY_BYTES) and "
        f"this one passes it after {done} of 5 examples: split the request"
    )


def test_406_unsupported_accept(client):
    r = client.post(
        "/v1/featuresets/fs16/features", json={"indices": [0]}, headers={"Accept": "text/csv"}
    )
    assert r.status_code == 406
    assert r.json() == {
        "detail": "cannot answer Accept: 'text/csv'; this endpoint serves "
        "application/x-safetensors (the default) or application/json"
    }


def test_missing_store_serves_nothing(tmp_path):
    with TestClient(create_app(tmp_path / "absent")) as c:
        assert c.get("/healthz").json()["featuresets"] == 0
        assert c.get("/v1/featuresets").json() == []


def test_settings_come_from_the_environment(monkeypatch, store_dir):
    monkeypatch.setenv("SNOWFIRE_STORE", str(store_dir))
    monkeypatch.setenv("SNOWFIRE_MAX_JSON_VALUES", "7")
    with TestClient(create_app()) as c:
        health = c.get("/healthz").json()
    assert (health["store"], health["featuresets"]) == (str(store_dir), 2)
    assert health["limits"]["max_json_values"] == 7
