"""Back-pressure (api/limits.py): with a bound of N and N+k concurrent slow requests, exactly
the k beyond it are answered 429 with Retry-After, /metrics counts them, nothing else errors,
and health and metrics answer throughout. The slow requests are held on a gate (not timed):
none can finish before every one has been answered or admitted."""

from __future__ import annotations

import threading
from collections import Counter

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from snowfire.api import Settings, create_app
from snowfire.cache import Store
from tests.helpers.service import Server, build_featureset


def _refused(url: str) -> dict[str, float]:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return {
        s.labels["limit"]: s.value
        for family in text_string_to_metric_families(text)
        if family.name == "snowfire_refused"
        for s in family.samples
        if s.name == "snowfire_refused_total"
    }


def _fire(n: int, send) -> tuple[list[httpx.Response], threading.Condition, list[threading.Thread]]:
    """n threads, each sending one request with `send(http)`; responses gathered as they come."""
    answers: list[httpx.Response] = []
    arrived = threading.Condition()

    def one() -> None:
        with httpx.Client(timeout=60) as http:
            r = send(http)
        with arrived:
            answers.append(r)
            arrived.notify_all()

    threads = [threading.Thread(target=one, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return answers, arrived, threads


def _wait_for(arrived: threading.Condition, answers: list, count: int) -> None:
    with arrived:
        assert arrived.wait_for(lambda: len(answers) >= count, timeout=60), (
            f"{len(answers)} answers, expected {count}"
        )


@pytest.mark.parametrize(("bound", "extra"), [(3, 4), (1, 1)])
def test_requests_beyond_the_bound_in_flight_get_429_with_retry_after(tmp_path, bound, extra):
    store = Store(tmp_path / "store")
    build_featureset(store, "fs", "float16")
    settings = Settings(store=store.path, max_in_flight=bound, retry_after=2)
    gate, entered = threading.Event(), threading.Semaphore(0)
    with Server(settings) as server:
        served = server.server.config.app.state.store
        get = served.get_featureset

        def held(fs_id):  # a slow store read: waits until the test opens the gate
            entered.release()
            assert gate.wait(60)
            return get(fs_id)

        served.get_featureset = held
        try:
            answers, arrived, threads = _fire(
                bound + extra, lambda http: http.get(f"{server.url}/v1/featuresets/fs")
            )
            _wait_for(arrived, answers, extra)  # the refused come back; the admitted are held
            for _ in range(bound):
                assert entered.acquire(timeout=60)  # each admitted one reached the store
            refused = list(answers)
            assert [r.status_code for r in refused] == [429] * extra
            for r in refused:
                assert r.headers["Retry-After"] == "2"
                assert r.json() == {
                    "detail": f"the service is handling {bound} requests, its limit "
                    "(SNOWFIRE_MAX_IN_FLIGHT): retry after 2 s",
                    "error": "TooManyRequests",
                }
            health = httpx.get(f"{server.url}/healthz", timeout=10)  # never refused
            assert health.status_code == 200, health.text
            assert _refused(server.url) == {
                "in_flight": extra,
                "embed_queue": 0,
                "predict_queue": 0,
            }
        finally:
            gate.set()
        for t in threads:
            t.join(60)
        assert Counter(r.status_code for r in answers) == {200: bound, 429: extra}
        assert all(r.json()["id"] == "fs" for r in answers if r.status_code == 200)
        after = httpx.get(f"{server.url}/v1/featuresets/fs", timeout=10)  # a slot is free again
        assert after.status_code == 200
        assert _refused(server.url) == {"in_flight": extra, "embed_queue": 0, "predict_queue": 0}


def test_embed_requests_beyond_the_queue_bound_get_429_and_the_rest_are_computed(
    tmp_path, tiny_bert_dir
):
    bound, extra = 2, 3
    settings = Settings(
        store=tmp_path / "store",
        encoder=f"hf:{tiny_bert_dir}",
        embed_max_queue=bound,
        max_in_flight=50,
    )
    gate = threading.Event()
    with Server(settings) as server:
        embedder = server.server.config.app.state.embedder
        encode = embedder._encode

        def held(jobs):  # the encoder thread busy until the test opens the gate
            assert gate.wait(60)
            return encode(jobs)

        embedder._encode = held
        texts = iter([f"the dog number {i} runs" for i in range(bound + extra)])
        lock = threading.Lock()

        def send(http):
            with lock:
                text = next(texts)
            return http.post(f"{server.url}/v1/embed", json={"texts": [text]})

        try:
            answers, arrived, threads = _fire(bound + extra, send)
            _wait_for(arrived, answers, extra)
            refused = list(answers)
            assert [r.status_code for r in refused] == [429] * extra
            for r in refused:
                assert r.headers["Retry-After"] == "1"
                assert r.json()["detail"] == (
                    f"{bound} requests are already waiting for the encoder, its queue's limit "
                    f"(SNOWFIRE_EMBED_MAX_QUEUE={bound}): retry after 1 s"
                )
            assert _refused(server.url) == {
                "in_flight": 0,
                "embed_queue": extra,
                "predict_queue": 0,
            }
        finally:
            gate.set()
        for t in threads:
            t.join(60)
        assert Counter(r.status_code for r in answers) == {200: bound, 429: extra}
        again = [r for r in answers if r.status_code == 429]
        with httpx.Client(timeout=60) as http:  # the refused, retried, are computed now
            retried = [
                http.post(f"{server.url}/v1/embed", json={"texts": ["a cat"]}) for _ in again
            ]
        assert [r.status_code for r in retried] == [200] * extra


def test_the_openapi_document_lists_429_with_retry_after_except_health_and_metrics(tmp_path):
    doc = create_app(settings=Settings(store=tmp_path / "store")).openapi()
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            refusal = op["responses"].get("429")
            if path in ("/healthz", "/metrics"):
                assert refusal is None, (method, path)
                continue
            assert refusal is not None, (method, path)
            assert refusal["headers"]["Retry-After"]["schema"]["type"] == "integer"
            assert refusal["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorBody"
            }
    assert (
        "SNOWFIRE_EMBED_MAX_QUEUE"
        in doc["paths"]["/v1/embed"]["post"]["responses"]["429"]["description"]
    )
