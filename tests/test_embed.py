"""POST /v1/embed: misses computed and stored where `extract` stores them (same pool, same
keys, same bytes), hits read, concurrent requests micro-batched, limits and errors named."""

from __future__ import annotations

import json
import random
import threading
from dataclasses import replace

import numpy as np
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from safetensors.numpy import load

from snowfire.api import Settings, create_app
from snowfire.cache import Store, wire
from snowfire.cache.segment import Segment
from tests.helpers import WORDS

JSON_ACCEPT = {"Accept": "application/json"}


def _sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(n)]


@pytest.fixture
def service(tiny_bert_dir, tmp_path):
    settings = Settings(
        store=tmp_path / "store",
        encoder=f"hf:{tiny_bert_dir}",
        embed_max_texts=50,
        embed_max_words=400,
    )
    with TestClient(create_app(settings=settings)) as client:
        yield client, Store(tmp_path / "store")


def _post(client, body, headers=None):
    r = client.post("/v1/embed", json=body, headers=headers or {})
    assert r.status_code == 200, r.text
    return r


def test_misses_are_computed_and_stored_and_then_served_as_hits(service):
    client, _ = service
    a, b, c = _sentences(3, 0)
    first = wire.decode(_post(client, {"texts": [a, b]}).content)
    r = _post(client, {"texts": [b, c, b]})
    assert json.loads(load_meta(r.content)["cached"]) == [True, False, True]
    second = wire.decode(r.content)
    assert second.keys[0] == first.keys[1] == second.keys[2]
    rows = lambda batch, i: batch.features[batch.offsets[i] : batch.offsets[i + 1]]  # noqa: E731
    assert np.array_equal(rows(first, 1), rows(second, 0))  # the stored bytes, read back
    assert np.array_equal(rows(second, 0), rows(second, 2))
    assert load_meta(r.content)["pool"] == "none"


def load_meta(body: bytes) -> dict:
    n = int.from_bytes(body[:8], "little")
    return json.loads(body[8 : 8 + n])["__metadata__"]


def test_embed_and_extract_share_one_pool_and_give_the_same_bytes(service, tiny_bert_dir, tmp_path):
    """Texts embedded first, then extracted as a file: the feature set lists the embed keys and
    reads the embed bytes, and a fresh store extracting the same file holds the same bytes."""
    from snowfire.extractor import ExtractConfig, run_extract

    client, store = service
    texts = _sentences(12, 1) + ["the dog plays", "the dog plays"]
    embedded = wire.decode(_post(client, {"texts": texts}).content)
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(texts) + "\n")
    for target in (store.path, tmp_path / "fresh"):
        (info,) = run_extract(
            ExtractConfig(
                encoder=f"hf:{tiny_bert_dir}", input=str(path), store=str(target), progress=False
            )
        )
        got = Store(target).read(info.id, indices=list(range(len(texts))))
        assert got.keys == embedded.keys, target
        assert np.array_equal(got.offsets, embedded.offsets)
        assert np.array_equal(got.word_ids, embedded.word_ids)
        assert got.features.dtype == embedded.features.dtype == np.float16
        assert got.features.tobytes() == embedded.features.tobytes(), target
    # the extract into the shared store encoded nothing: the pool holds the embed segment only
    pool = info.encoder_id
    segments = [
        p
        for p in (store.path / "pools" / pool / "segments").iterdir()
        if not p.name.startswith(".")
    ]
    assert len(segments) == 1


def test_pairs_tokens_layers_and_pooling(service):
    client, _ = service
    pairs = [["a man plays the guitar", "someone plays a piano"], ["the dog runs", "a cat eats"]]
    body = {"pairs": pairs, "layers": [0, 2]}
    full = wire.decode(_post(client, body).content)
    assert full.layers == [0, 2] and full.features.shape[1] == 2
    assert list(full.pair_starts) == [7, 5]  # [CLS] + 5 words + [SEP]; [CLS] + 3 + [SEP]
    as_json = _post(client, body, JSON_ACCEPT).json()
    assert as_json["cached"] == [True, True]
    assert np.array_equal(np.asarray(as_json["features"], np.float16), full.features)
    for how in ("mean", "max", "first"):
        pooled = _post(client, {**body, "pool": how}, JSON_ACCEPT).json()
        got = np.asarray(pooled["features"], np.float32)  # (n, layers, dim)
        for i in range(2):
            rows = full.features[full.offsets[i] : full.offsets[i + 1]].astype(np.float32)
            words = full.word_ids[full.offsets[i] : full.offsets[i + 1]] >= 0
            want = {
                "first": rows[0],
                "mean": rows[words].mean(axis=0),
                "max": rows[words].max(axis=0),
            }[how]
            np.testing.assert_allclose(got[i], want, rtol=0, atol=1e-6)
        body_st = _post(client, {**body, "pool": how}).content
        np.testing.assert_array_equal(load(body_st)["features"], got)
        assert pooled["offsets"] == [0, 1, 2] and pooled["cached"] == [True, True]
    tokens = _post(client, {"tokens": [["the", "dog", "runs"]]}, JSON_ACCEPT).json()
    text = _post(client, {"texts": ["the  dog runs "]}, JSON_ACCEPT).json()
    assert tokens["keys"] == text["keys"] and text["cached"] == [True]
    separate = _post(client, {"pairs": pairs, "pair_encoding": "separate"}, JSON_ACCEPT).json()
    assert separate["encoder_id"] != as_json["encoder_id"]  # another pool, as extract's
    # 2.0 is a JSON-Schema integer: the same answer as 2
    assert (
        _post(client, {"pairs": pairs, "layers": [0.0, 2.0]}).content == _post(client, body).content
    )


def test_the_worker_and_extract_take_one_config_and_store_alike(tiny_bert_dir, tmp_path):
    """One ExtractConfig (float32, a token budget small enough for several batches) for
    `run_extract` and for the embed worker: the same pool, keys, offsets and bytes, bit for bit
    (both encode by `bucketed` batches and `encode_segment`)."""
    from snowfire.extractor import EmbedWorker, ExtractConfig, TextInput, run_extract

    texts = _sentences(20, 3)
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(texts) + "\n")
    config = ExtractConfig(
        encoder=f"hf:{tiny_bert_dir}",
        store=str(tmp_path / "a"),
        input=str(path),
        dtype="float32",
        token_budget=64,
        progress=False,
    )
    (info,) = run_extract(config)
    extracted = Store(tmp_path / "a").read(info.id, indices=list(range(len(texts))))
    store = Store(tmp_path / "b")
    worker = EmbedWorker(store, replace(config, store=str(store.path), input=None), max_wait_ms=0)
    try:
        inputs = [TextInput(tuple(t.split())) for t in texts]
        keys = worker.keys(inputs, "joint")
        assert worker.ensure(inputs, keys, "joint") == [False] * len(texts)
        assert worker.pool("joint") == info.encoder_id  # the same encoder identity and dtype
        embedded = store.read_keys(info.encoder_id, keys, None)
    finally:
        worker.close()
    assert keys == extracted.keys
    assert np.array_equal(embedded.offsets, extracted.offsets)
    assert embedded.features.dtype == extracted.features.dtype == np.float32
    assert embedded.features.tobytes() == extracted.features.tobytes()


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({}, 422, "exactly one of 'texts', 'pairs' or 'tokens'"),
        ({"texts": ["a"], "tokens": [["a"]]}, 422, "exactly one"),
        ({"texts": ["the dog", "   "]}, 422, "texts.1: empty text"),
        ({"tokens": [["the", "a b"]]}, 422, "tokens.0: a word is empty or holds white space"),
        ({"texts": ["the dog"], "layers": [3]}, 409, "layer 3 out of range"),
        ({"texts": ["the"] * 51}, 413, "51 texts in one request, the limit is 50"),
        (
            {"texts": ["a b", " ".join(["dog"] * 399)]},
            413,
            "more than 400 words in one request (past it at texts.1), the limit is 400",
        ),
        ({"texts": ["dog"], "pool": "median"}, 422, "pool"),
    ],
)
def test_bad_requests_are_refused_naming_what_was_wrong(service, body, status, words):
    client, _ = service
    r = client.post("/v1/embed", json=body)
    assert r.status_code == status, r.text
    assert words in r.json()["detail"]


def test_the_schema_says_which_words_and_texts_are_taken(service):
    """The OpenAPI document's patterns and the route's check agree on every character: a word
    holds no white space (what str.split splits on), a text holds something else."""
    import re

    client, _ = service
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    props = schemas["EmbedRequest"]["properties"]
    word, text = props["tokens"]["items"]["items"]["pattern"], props["texts"]["items"]["pattern"]
    spaces = [chr(c) for c in range(0x110000) if chr(c).isspace()]
    assert max(map(ord, spaces)) <= 0x3000  # the range api/schemas.py looks in
    for c in spaces:
        assert not re.search(word, f"a{c}b") and not re.search(text, c * 2), hex(ord(c))
        r = client.post("/v1/embed", json={"tokens": [["the", f"a{c}b"]]})
        assert r.status_code == 422 and "holds white space" in r.json()["detail"], hex(ord(c))
    for c in ("\u200b", "\u00e9", "-"):  # not white space: a word may hold them
        assert re.search(word, f"a{c}b") and re.search(text, c)
        assert client.post("/v1/embed", json={"tokens": [["the", f"a{c}b"]]}).status_code == 200


def test_without_an_encoder_the_error_says_how_to_start_one(tmp_path):
    with TestClient(create_app(tmp_path / "store")) as client:
        r = client.post("/v1/embed", json={"texts": ["the dog"]})
    assert r.status_code == 503
    assert "snowfire serve --encoder minilm" in r.json()["detail"]


def test_concurrent_requests_are_micro_batched_and_a_shared_text_encoded_once(
    tiny_bert_dir, tmp_path
):
    from snowfire.extractor import EmbedWorker, ExtractConfig, TextInput

    store = Store(tmp_path / "store")
    config = ExtractConfig(encoder=f"hf:{tiny_bert_dir}", store=str(store.path), progress=False)
    worker = EmbedWorker(store, config, max_wait_ms=0)
    # the encoder busy with its first round until all eight requests wait: no timing, the
    # rest are then one round, whatever the machine's load
    encode, put = worker._encode, worker._queue.put
    gate, queued = threading.Event(), threading.Semaphore(0)

    def held(jobs):
        assert gate.wait(60)
        return encode(jobs)

    def counted(job):
        put(job)
        queued.release()

    worker._encode, worker._queue.put = held, counted
    texts = [TextInput(tuple(s.split())) for s in _sentences(8, 2)]
    shared = TextInput(("the", "quick", "brown", "fox"))
    hits, errors = {}, []
    start = threading.Barrier(8)

    def ask(i):
        try:
            start.wait()
            asked = [texts[i], shared]
            hits[i] = worker.ensure(asked, worker.keys(asked, "joint"), "joint")
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for _ in threads:
        assert queued.acquire(timeout=60)  # each request is in the encoder's queue
    gate.set()
    for t in threads:
        t.join()
    worker.close()
    assert not errors
    assert 1 <= worker.rounds <= 2  # the first round, then every request that waited: at once
    pool = worker.pool("joint")
    keys = worker.keys(texts + [shared], "joint")
    assert store.missing_keys(pool, keys) == []
    stored = [
        k for seg in (store.path / "pools" / pool / "segments").iterdir() for k in Segment(seg).keys
    ]
    assert sorted(stored) == sorted(set(keys))  # nine examples stored once each
    # each request's own result equals the text encoded alone, to fp16 rounding
    solo_store = Store(tmp_path / "solo")
    solo = EmbedWorker(solo_store, replace(config, store=str(solo_store.path)), max_wait_ms=0)
    for text in texts[:3]:
        key = solo.keys([text], "joint")
        solo.ensure([text], key, "joint")
        want = solo_store.read_keys(solo.pool("joint"), key, None).features.astype(np.float32)
        got = store.read_keys(pool, key, None).features.astype(np.float32)
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-3)
    solo.close()


def test_metrics_count_hits_misses_and_batches(service):
    client, _ = service
    _post(client, {"texts": ["the dog", "the cat"]})
    _post(client, {"texts": ["the dog"]})
    families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
    examples = {
        s.labels["result"]: s.value
        for s in families["snowfire_embed_examples"].samples
        if s.name.endswith("_total")
    }
    assert examples == {"hit": 1.0, "miss": 2.0}
    counts = [
        s.value
        for s in families["snowfire_embed_batch_examples"].samples
        if s.name.endswith("_count")
    ]
    assert counts == [1.0]
