"""The network misbehaving between a reader and what it reads (tests/helpers/proxy.py in
between): a ❄️ head trained over REST through each fault, and through a restart of the
service, reads the same batches and ends with the same weights as without it; a bucket read or
written through each fault holds the same bytes; a fault that does not pass gives one error
naming the URL, the tries and the last cause. Fault positions are request numbers, so every run
meets them at the same places; no test measures time."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from snowfire.api import Settings
from snowfire.cache import (
    RemoteStore,
    RetryPolicy,
    ServiceUnreachableError,
    Store,
    StoreUnreachableError,
    open_store,
)
from tests.helpers.proxy import FaultProxy, Faults
from tests.helpers.service import Restart, Server, build_featureset
from tests.helpers.store import bucket_objects, extract_tiny_sst2

#: Quick retries, many of them: a fault that passes always passes within them (the waits
#: add up to 25 s at least, the longest outage here a server restart of a second or two)
PATIENT = {
    "SNOWFIRE_RETRY_ATTEMPTS": "100",
    "SNOWFIRE_RETRY_BACKOFF": "0.01",
    "SNOWFIRE_RETRY_BACKOFF_MAX": "0.5",
    "SNOWFIRE_RETRY_DEADLINE": "120",
}
THREE_TRIES = RetryPolicy(attempts=3, backoff=0.01, backoff_max=0.02)
#: About 4 examples per features page (2 KB each, pages fill the cap): 20 requests an epoch
BODY_CAP = 8_000

#: Each fault the proxy makes, and the count that says it happened.
REST_FAULTS = {
    "latency": (Faults(latency=0.005), "requests"),
    "refused": (Faults(refuse_every=15, refuse_seconds=0.2), "refused"),
    "reset-every-7th-connection": (Faults(reset_every=7, one_per_connection=True), "reset"),
    "short-body": (Faults(cut_every=5), "cut"),
    "reset-mid-body": (Faults(cut_every=6, cut="reset"), "cut"),
    "broken-chunking": (Faults(cut_every=5, chunked=True), "cut"),
    "503-bursts": (Faults(status_every=9, burst=3), "status"),
    "504": (Faults(status_every=10, status=504, burst=1, retry_after=None), "status"),
    "429-retry-after": (Faults(status_every=8, status=429, burst=2), "status"),
}


@pytest.fixture(scope="module")
def sst2_store(tiny_bert_dir, tmp_path_factory):
    """A tiny sst2 folder extracted with the tiny BERT into a local store."""
    return extract_tiny_sst2(tmp_path_factory.mktemp("net"), tiny_bert_dir)


@pytest.fixture(scope="module")
def service(sst2_store):
    with Server(Settings(store=sst2_store[1], max_body_bytes=BODY_CAP)) as server:
        yield server


@pytest.fixture
def patient(monkeypatch):
    for name, value in PATIENT.items():
        monkeypatch.setenv(name, value)


def train_over(url: str, tiny_bert_dir, data: Path, out: Path) -> tuple[dict, dict]:
    """A ❄️ linear head trained from `url`, its features streamed (read again every epoch):
    (metrics, weights)."""
    from safetensors.numpy import load_file

    from snowfire.heads import TrainConfig, train

    cfg = TrainConfig(
        store=url,
        encoder=f"hf:{tiny_bert_dir}",
        task="sst2",
        head="linear",
        data=str(data),
        out=str(out),
        epochs=3,
        lr=0.03,
        max_memory_gb=1e-9,
        progress=False,
    )
    metrics = train(cfg)
    assert json.loads((out / "metrics.json").read_text()) == metrics
    return metrics, load_file(out / "weights.safetensors")


@pytest.fixture(scope="module")
def clean_run(service, sst2_store, tiny_bert_dir, tmp_path_factory):
    data, _ = sst2_store
    return train_over(service.url, tiny_bert_dir, data, tmp_path_factory.mktemp("clean"))


def epoch_batches(reader, data: Path, encoder: str) -> list:
    """One streamed, shuffled epoch of the train split: [(indices, ExampleBatch)]."""
    from snowfire.heads.data import FeatureSource

    info = reader.find_featureset(encoder=encoder, task="sst2", split="train")
    source = FeatureSource(reader, info, None, max_bytes=0, block_examples=16)
    assert source.streaming
    return list(source.iterate(8, np.random.default_rng(0)))


def assert_same_run(got: tuple[dict, dict], want: tuple[dict, dict]) -> None:
    assert got[0] == want[0]
    assert got[1].keys() == want[1].keys()
    for name in want[1]:
        assert got[1][name].tobytes() == want[1][name].tobytes(), name


@pytest.mark.parametrize("fault", list(REST_FAULTS))
def test_an_epoch_over_rest_through_each_fault_is_the_same(
    fault, service, sst2_store, clean_run, tiny_bert_dir, tmp_path, patient
):
    faults, happened = REST_FAULTS[fault]
    data, store = sst2_store
    encoder = f"hf:{tiny_bert_dir}"
    want = epoch_batches(Store(store), data, encoder)
    with FaultProxy(service.url, faults) as proxy:
        with RemoteStore(proxy.url) as remote:
            got = epoch_batches(remote, data, encoder)
        seen = proxy.counts[happened]
        run = train_over(proxy.url, tiny_bert_dir, data, tmp_path / "run")
    assert seen >= 1 and proxy.counts[happened] > seen, dict(proxy.counts)  # in both parts
    assert [i for i, _ in got] == [i for i, _ in want]
    for (_, a), (_, b) in zip(got, want, strict=True):
        assert a.keys == b.keys
        for name in ("features", "offsets", "word_ids", "type_ids", "pair_starts"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert_same_run(run, clean_run)


def test_a_restart_mid_epoch_behind_a_proxy_resetting_every_50th_connection_is_the_same(
    sst2_store, clean_run, tiny_bert_dir, tmp_path, patient
):
    data, store = sst2_store
    settings = Settings(store=store, max_body_bytes=BODY_CAP)
    restart = Restart(Server(settings).__enter__(), settings, at=30)
    try:
        faults = Faults(reset_every=50, one_per_connection=True, on_request=restart)
        with FaultProxy(restart.server.url, faults) as proxy:
            run = train_over(proxy.url, tiny_bert_dir, data, tmp_path / "run")
    finally:
        restart.server.__exit__(None, None, None)
    assert restart.done.is_set()
    assert proxy.counts["requests"] > 30 + 10  # the restart came mid-run
    assert proxy.counts["reset"] >= 1, dict(proxy.counts)
    assert_same_run(run, clean_run)


@pytest.mark.parametrize(
    ("faults", "last"),
    [
        (Faults(status_every=1, burst=1), "the last: HTTP 503: 503 from the test's fault proxy"),
        (Faults(cut_every=1), "the last: HTTP 200, the body cut short: "),
        (Faults(reset_every=1), "the last: cannot reach the snowfire service at "),
    ],
    ids=["503", "cut", "reset"],
)
def test_a_fault_that_does_not_pass_is_one_error_naming_the_url_the_tries_and_the_cause(
    service, faults, last
):
    with FaultProxy(service.url, faults) as proxy, RemoteStore(proxy.url, retry=THREE_TRIES) as r:
        with pytest.raises(ServiceUnreachableError) as got:
            r.list_featuresets()
    message = str(got.value)
    assert message.startswith(f"GET {proxy.url}/v1/featuresets?manifest=true: gave up after ")
    assert "all 3 attempts failed" in message and last in message, message
    assert isinstance(got.value, ConnectionError)


# ---------------------------------------------------------------- object storage (moto)
#: Each fault, between obstore and moto; obstore sends many requests at once, so these
#: faults are per distinct request (its first tries), which no arrival order changes.
BUCKET_FAULTS = {
    "latency": (Faults(latency=0.005), "requests"),
    "reset-every-3rd-connection": (Faults(reset_every=3, one_per_connection=True), "reset"),
    "request-lost": (Faults(drop_first=2), "dropped"),
    "short-body": (Faults(cut_first=1), "cut"),
    "reset-mid-body": (Faults(cut_first=2, cut="reset"), "cut"),
    "503-bursts": (Faults(status_first=2), "status"),
    "429-retry-after": (Faults(status_first=1, status=429), "status"),
}
SEVEN = [40, 3, 25, 1, 100, 7, 33]  # tokens per example


@pytest.fixture
def bucket_policy(monkeypatch):
    monkeypatch.setenv("SNOWFIRE_RETRY_BACKOFF", "0.01")
    monkeypatch.setenv("SNOWFIRE_RETRY_BACKOFF_MAX", "0.05")


@pytest.mark.parametrize("fault", list(BUCKET_FAULTS))
def test_a_bucket_written_and_read_through_each_fault_holds_the_same_bytes(
    fault, local_s3, monkeypatch, bucket_policy
):
    faults, happened = BUCKET_FAULTS[fault]
    clean_url, faulty_url = local_s3(), local_s3()
    clean = open_store(clean_url)
    build_featureset(clean, "fs", "float32", lengths=SEVEN, seed=1)
    want = clean.read("fs", indices=list(range(len(SEVEN))), layers=[2, 0])
    endpoint = os.environ["AWS_ENDPOINT_URL"]  # moto's
    with FaultProxy(endpoint, faults) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        written = open_store(faulty_url)
        build_featureset(written, "fs", "float32", lengths=SEVEN, seed=1)
        wrote = proxy.counts[happened]
        got = open_store(clean_url).read("fs", indices=list(range(len(SEVEN))), layers=[2, 0])
    assert wrote >= 1 and proxy.counts[happened] > wrote, dict(proxy.counts)
    assert got.features.tobytes() == want.features.tobytes()
    assert (got.offsets.tolist(), got.keys) == (want.offsets.tolist(), want.keys)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    a, b = bucket_objects(open_store(clean_url)), bucket_objects(open_store(faulty_url))
    assert a.keys() == b.keys() and all(a[k] == b[k] for k in a)


@pytest.mark.parametrize(
    ("faults", "last"),
    [
        (Faults(status_first=99), "after 2 retries, max_retries: 2"),
        (Faults(cut_first=99), "gave up after "),
        (Faults(drop_first=99), "after 2 retries, max_retries: 2"),
    ],
    ids=["503", "cut", "lost"],
)
def test_a_bucket_fault_that_does_not_pass_is_one_error_naming_the_store(
    local_s3, monkeypatch, faults, last
):
    url = local_s3()
    build_featureset(open_store(url), "fs", "float32", lengths=SEVEN, seed=1)
    with FaultProxy(os.environ["AWS_ENDPOINT_URL"], faults) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        with pytest.raises(StoreUnreachableError) as got:
            open_store(url, retry=THREE_TRIES).get_featureset("fs")
    message = str(got.value)
    assert message.startswith(f"{url}: reading zarr.json") and last in message, message
    # the policy's 3 attempts; a cut body obstore itself may resume (up to its 2 retries)
    # before it reports it, inside each of them
    assert 3 <= proxy.counts["requests"] <= (9 if faults.cut_first else 3), dict(proxy.counts)


class GenericError(Exception):
    """Stands for obstore's own error type: `attempt` tells obstore's errors by module."""

    __module__ = "obstore.exceptions"


#: What obstore 0.12 said when the fault proxy had reset a pooled connection (CI, stop 38)
NOT_SENT = (
    "Generic S3 error: Error performing GET http://127.0.0.1:1/b/store/x in 387µs - "
    "HTTP error: error sending request"
)


@pytest.mark.parametrize(
    ("error", "calls", "asked_again"),
    [
        (NOT_SENT, 2, True),  # never left, not retried by obstore: asked again here
        ("Generic S3 error: ... - HTTP error: error decoding response body", 2, True),
        (NOT_SENT.replace(" in 387µs", " in 1s, after 2 retries, max_retries: 2"), 1, False),
        ("Generic S3 error: Access Denied", 1, False),
    ],
    ids=["not-sent", "body-cut", "not-sent-after-obstores-retries", "other"],
)
def test_attempt_asks_again_only_for_what_obstore_did_not_retry(error, calls, asked_again):
    from snowfire.cache.bucket import attempt

    made = []

    def call():
        made.append(1)
        if len(made) == 1:
            raise GenericError(error)
        return "answer"

    if asked_again:
        assert attempt("s3://b/store", THREE_TRIES, "reading x", call) == "answer"
    else:
        with pytest.raises(StoreUnreachableError, match=r"^s3://b/store: reading x failed \("):
            attempt("s3://b/store", THREE_TRIES, "reading x", call)
    assert len(made) == calls


def test_attempt_names_the_tries_when_a_request_is_never_sent():
    from snowfire.cache.bucket import attempt

    made = []

    def call():
        made.append(1)
        raise GenericError(NOT_SENT)

    with pytest.raises(StoreUnreachableError) as got:
        attempt("s3://b/store", THREE_TRIES, "writing x", call)
    message = str(got.value)
    assert message.startswith("s3://b/store: writing x: gave up after "), message
    assert "all 3 attempts failed; the last: the request not sent (Generic S3" in message
    assert len(made) == 3
