"""A link that cuts every answer after N bytes (N well below one page), with the service
restarted once in the middle: every reader of features over REST still ends with the local
store's bytes, because each read goes in pages under a byte bound and a cut page is resumed
from the examples that arrived whole, never restarted (cache/paging.py, issue 46).

    a ❄️ training over REST          the same metrics and weights as one from the local store
    FeatureDataset over REST         items byte for byte the local store's (map-style, streamed)
    predict over REST                the local predictions
    the largest answer of a training run stays under the page bound, whatever the split size
    a link that delivers nothing whole gives up, naming the tries without progress

Fault positions are request numbers; no test measures time.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from snowfire.api import Settings
from snowfire.cache import RemoteStore, RetryPolicy, ServiceUnreachableError, Store
from tests.helpers.proxy import FaultProxy, Faults
from tests.helpers.service import Restart, Server
from tests.helpers.store import extract_tiny_sst2

#: The page bound here: about 9 of the tiny BERT's examples (1.6 kB each) a page
PAGE = 16_384
#: Every answer longer than this is cut there: the JSON look-ups (2 kB at most) pass whole, a
#: page never does; a try brings one or two examples whole
CUT = 4_096
#: Quick retries, many of them (a restart's outage is a second or two)
PATIENT = {
    "SNOWFIRE_RETRY_ATTEMPTS": "100",
    "SNOWFIRE_RETRY_BACKOFF": "0.01",
    "SNOWFIRE_RETRY_BACKOFF_MAX": "0.5",
    "SNOWFIRE_RETRY_DEADLINE": "120",
    "SNOWFIRE_PAGE_BYTES": str(PAGE),
}


@pytest.fixture(scope="module")
def sst2(tiny_bert_dir, tmp_path_factory) -> tuple[Path, Path]:
    """(data folder, store folder) of the tiny sst2 extracted with the tiny BERT."""
    return extract_tiny_sst2(tmp_path_factory.mktemp("cut"), tiny_bert_dir)


@pytest.fixture
def patient(monkeypatch):
    for name, value in PATIENT.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def flaky(sst2, patient):
    """A proxy cutting every answer after CUT bytes before a service restarted at the 12th
    request: yields (proxy, restart)."""
    settings = Settings(store=sst2[1])
    restart = Restart(Server(settings).__enter__(), settings, at=12)
    try:
        faults = Faults(cut_after=CUT, on_request=restart)
        with FaultProxy(restart.server.url, faults) as proxy:
            yield proxy, restart
    finally:
        restart.server.__exit__(None, None, None)


def assert_cut_and_restarted(proxy: FaultProxy, restart: Restart) -> None:
    assert restart.done.is_set() and proxy.counts["requests"] > 12 + 10, dict(proxy.counts)
    assert proxy.counts["cut"] >= 10, dict(proxy.counts)


def train_from(store: str, tiny_bert_dir, data: Path, out: Path, **options) -> tuple:
    """A ❄️ linear head trained from `store` (a directory or a URL): (metrics, weights)."""
    from safetensors.numpy import load_file

    from snowfire.heads import TrainConfig, train

    cfg = TrainConfig(
        store=store,
        encoder=f"hf:{tiny_bert_dir}",
        task="sst2",
        head="linear",
        data=str(data),
        out=str(out),
        epochs=3,
        lr=0.03,
        progress=False,
        **options,
    )
    return train(cfg), load_file(out / "weights.safetensors")


#: the split preloaded (one read in pages), or streamed in blocks (read again every epoch)
MEMORY = {"preloaded": {}, "streamed": {"max_memory_gb": 1e-9}}


@pytest.fixture(scope="module")
def local_runs(sst2, tiny_bert_dir, tmp_path_factory) -> dict[str, tuple[Path, tuple]]:
    """Per MEMORY: (run directory, (metrics, weights)) of the head trained from the local
    store."""
    data, store = sst2
    runs = {}
    for name, options in MEMORY.items():
        out = tmp_path_factory.mktemp(f"local-{name}") / "run"
        runs[name] = out, train_from(str(store), tiny_bert_dir, data, out, **options)
    return runs


def split_set(store: Path, split: str):
    return next(fs for fs in Store(store).list_featuresets() if fs.split == split)


def assert_same_run(got: tuple, want: tuple) -> None:
    assert got[0] == want[0]
    assert got[1].keys() == want[1].keys()
    for name in want[1]:
        assert got[1][name].tobytes() == want[1][name].tobytes(), name


@pytest.mark.parametrize("memory", list(MEMORY))
def test_training_over_a_link_cutting_every_answer_ends_as_from_the_local_store(
    flaky, sst2, local_runs, tiny_bert_dir, tmp_path, memory
):
    proxy, restart = flaky
    run = train_from(proxy.url, tiny_bert_dir, sst2[0], tmp_path / "run", **MEMORY[memory])
    assert_cut_and_restarted(proxy, restart)
    assert_same_run(run, local_runs[memory][1])


def assert_same_items(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert (a["key"], a["index"], a["pair_start"]) == (b["key"], b["index"], b["pair_start"])
        for name in ("features", "word_ids", "type_ids"):
            assert a[name].dtype == b[name].dtype, name
            assert a[name].numpy().tobytes() == b[name].numpy().tobytes(), name


def test_feature_datasets_over_a_link_cutting_every_answer_give_the_local_bytes(flaky, sst2):
    import snowfire

    proxy, restart = flaky
    local, fs = Store(sst2[1]), split_set(sst2[1], "train")
    with RemoteStore(proxy.url) as remote:
        streamed = snowfire.StreamingFeatureDataset(remote, fs.id, block_examples=24)
        got_stream = list(streamed)
        data = snowfire.FeatureDataset(remote, fs.id, layers=[2, 0])
        got = [data[i] for i in range(len(data))]
        assert data.lengths.tolist() == local.featureset_lengths(fs.id)
    want_stream = list(snowfire.StreamingFeatureDataset(local, fs.id, block_examples=24))
    want = [snowfire.FeatureDataset(local, fs.id, layers=[2, 0])[i] for i in range(len(got))]
    assert_same_items(got_stream, want_stream)
    assert_same_items(got, want)
    assert_cut_and_restarted(proxy, restart)


def test_predict_over_a_link_cutting_every_answer_equals_predict_locally(
    flaky, sst2, local_runs, tmp_path
):
    from snowfire.heads.predict import predict_featureset

    proxy, restart = flaky
    data, store = sst2
    run, fs = local_runs["preloaded"][0], split_set(store, "dev")
    want = predict_featureset(run, str(store), fs.id, tmp_path / "local.tsv", data=str(data))
    got = predict_featureset(run, proxy.url, fs.id, tmp_path / "remote.tsv", data=str(data))
    assert got == want
    assert (tmp_path / "remote.tsv").read_bytes() == (tmp_path / "local.tsv").read_bytes()
    assert proxy.counts["cut"] >= 2, dict(proxy.counts)


@pytest.mark.parametrize("train", [60, 240])
def test_the_largest_answer_of_a_training_run_stays_under_the_page_bound(
    train, tiny_bert_dir, tmp_path, patient
):
    data, store = extract_tiny_sst2(tmp_path, tiny_bert_dir, train=train)
    with Server(Settings(store=store)) as server, FaultProxy(server.url) as proxy:
        train_from(proxy.url, tiny_bert_dir, data, tmp_path / "run")
    assert max(size for *_, size in proxy.answers) <= PAGE, proxy.answers
    # the splits, each read once, took as many pages as their bytes need: the bound held them
    local = Store(store)
    split_bytes = sum(
        local.read(fs.id, indices=range(fs.num_examples)).features.nbytes
        for fs in local.list_featuresets()
    )
    pages = [size for line, _, size in proxy.answers if "/features " in line]
    assert len(pages) >= split_bytes / PAGE >= 5 * train / 60


def test_a_link_that_brings_nothing_whole_gives_up_naming_the_tries_without_progress(
    sst2, monkeypatch
):
    """Every features answer cut inside its header: no try brings an example whole, so the
    asks halve down to one example and the policy's attempts end it."""
    from tests.helpers.service import Counting

    monkeypatch.setenv("SNOWFIRE_PAGE_BYTES", str(PAGE))
    fs = split_set(sst2[1], "train")
    policy = RetryPolicy(attempts=5, backoff=0.01, backoff_max=0.02)
    with Server(Settings(store=sst2[1])) as server:
        with FaultProxy(server.url, Faults(one_per_connection=True)) as proxy:
            with RemoteStore(proxy.url, retry=policy) as remote:
                remote.get_featureset(fs.id)  # the look-ups whole, before the link worsens
                remote.featureset_lengths(fs.id)
                remote._body_cap()
                transport = Counting(remote)
                proxy.faults = replace(proxy.faults, cut_after=200)
                with pytest.raises(ServiceUnreachableError) as got:
                    remote.read(fs.id, indices=list(range(8)))
    message = str(got.value)
    assert message.startswith(f"POST {proxy.url}/v1/featuresets/{fs.id}/features: gave up after ")
    assert "without progress: all 5 attempts failed; the last: HTTP 200, the body cut short: " in (
        message
    )
    assert "the service sent 200 of " in message and "0 of its 1 examples whole" in message
    asked = [len(json.loads(body)["indices"]) for body in transport.bodies]
    assert asked == [8, 4, 2, 1, 1]
    assert isinstance(got.value, ConnectionError)


# ---------------------------------------------------------------- object storage (moto)
BIG = [400, 30, 250, 10, 600, 3]  # tokens per example: shards of tens of kB


def test_a_bucket_read_over_a_link_cutting_every_answer_resumes_its_ranges(local_s3, monkeypatch):
    """Every answer cut after 4 kB: obstore's call for an object's ranges fails (it resumes
    a cut body itself only up to its max_retries); each merged span is then read again from
    its first byte not yet received, so the read ends with the bytes of a clean one."""
    import os

    from snowfire.cache import open_store
    from tests.helpers.service import build_featureset

    for name, value in {"ATTEMPTS": "3", "BACKOFF": "0.01", "BACKOFF_MAX": "0.05"}.items():
        monkeypatch.setenv(f"SNOWFIRE_RETRY_{name}", value)
    url = local_s3()
    build_featureset(open_store(url), "fs", "float32", lengths=BIG, seed=2)
    order = [4, 0, 5, 2, 1, 3]
    want = open_store(url).read("fs", indices=order, layers=[2, 0])
    with FaultProxy(os.environ["AWS_ENDPOINT_URL"], Faults(cut_after=CUT)) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        got = open_store(url).read("fs", indices=order, layers=[2, 0])
    assert got.features.tobytes() == want.features.tobytes()
    assert (got.offsets.tolist(), got.keys) == (want.offsets.tolist(), want.keys)
    assert got.word_ids.tobytes() == want.word_ids.tobytes()
    # a span resumed: a later GET of the same object from further on, to the same end
    spans: dict[tuple[str, str], list[int]] = {}
    for line, asked, _ in proxy.answers:
        if asked and line.startswith("GET "):
            start, end = asked.removeprefix("bytes=").split("-")
            spans.setdefault((line, end), []).append(int(start))
    resumed = [starts for starts in spans.values() if len(set(starts)) > 2]
    assert resumed and proxy.counts["cut"] >= 6, (spans, dict(proxy.counts))
