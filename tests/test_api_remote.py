"""`RemoteStore` against a live uvicorn server on 127.0.0.1: the same answers and the same
exceptions as the local `Store`, and big reads split under the service's body cap."""

from __future__ import annotations

import json
import socket
import threading

import numpy as np
import pytest

from snowfire.api import Settings
from snowfire.cache import (
    ExampleNotFoundError,
    FeatureSetNotFoundError,
    InvalidSelectionError,
    RequestTooLargeError,
    RetryPolicy,
    Store,
    open_reader,
)
from snowfire.cache.remote import RemoteStore
from snowfire.cache.wire import body_bytes
from tests.helpers.service import Counting, Server, build_featureset

LONG = [40, 3, 25, 1, 100, 7, 33, 12, 5, 30, 2, 18]  # tokens per example; #4 is big
#: Three quick tries: for the cases that fail on every one
THREE_TRIES = RetryPolicy(attempts=3, backoff=0.01, backoff_max=0.02)


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("remote") / "store"
    store = Store(path)
    build_featureset(store, "fs16", "float16", seed=0)
    build_featureset(store, "fs32", "float32", lengths=LONG, seed=1, split="train")
    return path


@pytest.fixture(scope="module")
def local(store_dir) -> Store:
    return Store(store_dir)


@pytest.fixture(scope="module")
def server(store_dir):
    with Server(Settings(store=store_dir)) as s:
        yield s


@pytest.fixture(scope="module")
def small_server(store_dir):
    """Bodies of at most 8,000 bytes: a float32 token is 3 x 8 x 4 = 96 of them, so the
    100-token example fits only a layer at a time."""
    with Server(Settings(store=store_dir, max_body_bytes=8000, read_chunk_examples=3)) as s:
        yield s


@pytest.fixture
def remote(server):
    with RemoteStore(server.url) as r:
        yield r


def assert_same_batch(got, want) -> None:
    for name in ("features", "offsets", "word_ids", "type_ids", "pair_starts"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert (got.layers, got.keys) == (want.layers, want.keys)


def test_open_reader_gives_a_remote_store(server, local):
    reader = open_reader(server.url)
    assert isinstance(reader, RemoteStore)
    assert reader.list_featuresets() == local.list_featuresets()
    reader.close()


def test_look_ups_match_local(remote, local):
    got, want = remote.list_featuresets(), local.list_featuresets()
    assert got == want
    assert [fs.manifest for fs in got] == [fs.manifest for fs in want]
    assert remote.get_featureset("fs32").manifest == local.get_featureset("fs32").manifest
    found = remote.find_featureset(encoder="fake", task="sst2", split="train")
    assert found == local.find_featureset(encoder="fake", task="sst2", split="train")
    assert found.manifest == local.get_featureset("fs32").manifest
    assert remote.featureset_keys("fs16") == local.featureset_keys("fs16")
    assert remote.featureset_texts("fs32") == local.featureset_texts("fs32")


@pytest.mark.parametrize("fs_id", ["fs16", "fs32"])
@pytest.mark.parametrize("layers", [None, [2], [2, 0]])
def test_read_matches_local(remote, local, fs_id, layers):
    idx = [3, 0, 4, 0, 1]
    assert_same_batch(
        remote.read(fs_id, indices=idx, layers=layers),
        local.read(fs_id, indices=idx, layers=layers),
    )
    keys = [local.featureset_keys(fs_id)[i] for i in idx]
    assert_same_batch(
        remote.read(fs_id, keys=keys, layers=layers), local.read(fs_id, indices=idx, layers=layers)
    )
    assert_same_batch(
        remote.read(fs_id, indices=np.array([], dtype=np.int64)), local.read(fs_id, indices=[])
    )


def test_big_read_is_split_under_the_cap(small_server, local):
    with RemoteStore(small_server.url) as remote:
        transport = Counting(remote)
        idx = [i for i in range(len(LONG)) if i != 4][::-1] + [9, 0]
        got = remote.read("fs32", indices=np.array(idx))
        want = local.read("fs32", indices=idx)
        # pages sized from the lengths: each under the cap, none refused
        assert transport.features_requests >= -(-body_bytes(want) // 8000) >= 3
        assert transport.refused == 0
        assert_same_batch(got, want)
        idx.append(4)
        assert_same_batch(
            remote.read("fs32", indices=idx, layers=[1]),
            local.read("fs32", indices=idx, layers=[1]),
        )
        with pytest.raises(RequestTooLargeError, match="at most 8,000 bytes.*after 1 of 1"):
            remote.read("fs32", indices=[4])  # 100 tokens: 9,600 bytes alone


def test_refused_request_is_halved_and_retried(small_server, local, monkeypatch):
    with RemoteStore(small_server.url) as remote:
        transport = Counting(remote)
        monkeypatch.setattr(remote, "_body_cap", lambda: 10**9)  # pages above the real cap
        idx = [i for i in range(len(LONG)) if i != 4]
        assert_same_batch(remote.read("fs32", indices=idx), local.read("fs32", indices=idx))
        assert transport.refused > 0


def test_a_large_read_goes_out_as_parallel_requests(server, local, monkeypatch):
    from snowfire import cache

    monkeypatch.setattr(cache.remote, "PARALLEL_MIN_EXAMPLES", 2)
    with RemoteStore(server.url, parallel=3) as remote:
        remote.get_featureset("fs32")  # the look-ups first: only reads below
        transport = Counting(remote)
        in_flight, peak, lock = [0], [0], threading.Lock()
        send = transport.send
        together = threading.Barrier(3)  # no part goes on before all three are out

        def slow_send(method, url, body, headers):
            with lock:
                in_flight[0] += 1
                peak[0] = max(peak[0], in_flight[0])
            if url.endswith("/features"):  # BrokenBarrierError: the parts went one by one
                together.wait(timeout=60)
            try:
                return send(method, url, body, headers)
            finally:
                with lock:
                    in_flight[0] -= 1

        transport.send = slow_send
        idx = [7, 3, 0, 11, 5, 2, 9, 4, 1]
        assert_same_batch(remote.read("fs32", indices=idx), local.read("fs32", indices=idx))
        assert transport.features_requests == 3 and peak[0] == 3  # 3 parts, sent at once


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"fs_id": "nope", "indices": [0]}, FeatureSetNotFoundError),
        ({"fs_id": "fs16", "keys": ["deadbeef"]}, ExampleNotFoundError),
        ({"fs_id": "fs16", "indices": [5]}, InvalidSelectionError),
        ({"fs_id": "fs16", "indices": [0], "layers": [-1]}, InvalidSelectionError),
        ({"fs_id": "fs16", "indices": [0], "layers": []}, InvalidSelectionError),
        ({"fs_id": "fs16", "indices": [0], "keys": ["k"]}, InvalidSelectionError),
        ({"fs_id": "fs16"}, InvalidSelectionError),
    ],
)
def test_errors_match_local(remote, local, kwargs, error):
    with pytest.raises(error) as want:
        local.read(**kwargs)
    with pytest.raises(error) as got:
        remote.read(**kwargs)
    assert type(got.value) is type(want.value)
    assert str(got.value) == str(want.value)


def test_look_up_errors_match_local(remote, local):
    for call in (
        lambda s: s.get_featureset("nope"),
        lambda s: s.featureset_keys("nope"),
        lambda s: s.find_featureset(encoder="fake", task="sst2", split="test"),
    ):
        with pytest.raises(FeatureSetNotFoundError) as want:
            call(local)
        with pytest.raises(FeatureSetNotFoundError) as got:
            call(remote)
        assert str(got.value) == str(want.value)


def test_unreachable_service_says_where():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"  # bound, not listening: refused
    with RemoteStore(url, retry=THREE_TRIES) as remote, pytest.raises(ConnectionError) as got:
        remote.list_featuresets()
    assert str(got.value).startswith(f"GET {url}/v1/featuresets?manifest=true: gave up after ")
    assert "all 3 attempts failed; the last: cannot reach the snowfire service at" in str(got.value)
    assert "Connection refused" in str(got.value)
    sock.close()


def test_an_unreachable_service_is_a_connection_error_naming_it():
    from snowfire.jobs import free_port

    port = free_port()  # a port nobody listens on
    with RemoteStore(f"http://127.0.0.1:{port}", retry=THREE_TRIES) as remote:
        with pytest.raises(ConnectionError, match=f"cannot reach the snowfire service at .*{port}"):
            remote.list_featuresets()


@pytest.mark.parametrize("path", ["copied", "direct"])
def test_an_answer_cut_short_mid_stream_is_resumed_not_returned_short(
    server, local, monkeypatch, path
):
    """The service streams features as it reads them: a store error in a later piece can
    only end the body early. The client keeps the examples that arrived whole (the index
    comes before the features) and asks only for the rest; the batch is the local one.
    "copied": pieces read into buffers (layers [1, 0]); "direct": all layers sent from the
    mapped shards. Each fails from its third piece on, in the first answer only."""
    from snowfire import api
    from snowfire.cache.plan import ReadPlan

    monkeypatch.setattr(api.features, "STREAM_BYTES", 1)  # a piece per example
    monkeypatch.setattr(api.features, "DIRECT_BYTES", 1)
    layers = [1, 0] if path == "copied" else None
    real_features, real_direct = ReadPlan.features, api.features.direct_pieces
    sent, answers = [], [0]

    def failing(self, lo=0, hi=None):
        if lo >= 2 and answers[0] == 1:
            raise OSError("disk gone")
        return real_features(self, lo, hi)

    def failing_direct(views):
        for k, piece in enumerate(real_direct(views)):
            if k >= 2 and answers[0] == 1:
                raise OSError("disk gone")
            sent.append(k)
            yield piece

    with RemoteStore(server.url, retry=THREE_TRIES) as remote:
        remote.featureset_lengths("fs32")  # the look-ups first: only reads below
        remote.get_featureset("fs32")
        remote._body_cap()
        transport = Counting(remote)
        send = transport.send

        def counting_send(method, url, body, headers):
            answers[0] += 1
            return send(method, url, body, headers)

        transport.send = counting_send
        monkeypatch.setattr(ReadPlan, "features", failing)
        monkeypatch.setattr(api.features, "direct_pieces", failing_direct)
        got = remote.read("fs32", indices=[0, 1, 2, 3], layers=layers)
    assert [json.loads(b)["indices"] for b in transport.bodies] == [[0, 1, 2, 3], [2, 3]]
    assert sent == ([0, 1, 0, 1] if path == "direct" else [])  # the path the case names
    want = local.read("fs32", indices=[0, 1, 2, 3], layers=layers)
    assert got.features.tobytes() == want.features.tobytes()
    assert (got.offsets.tolist(), got.keys) == (want.offsets.tolist(), want.keys)
    assert got.word_ids.tobytes() == want.word_ids.tobytes()
