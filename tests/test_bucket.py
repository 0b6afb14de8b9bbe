"""The store on S3-compatible object storage (moto's S3 server on loopback): the same objects
as a local store's files, the same reads, zarr opens it, an interrupted writer shows nothing,
damage is named, `snowfire serve` serves it and a head trains from it."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from snowfire.cache import RemoteStore, Store, StoreCorruptError, open_reader, open_store
from snowfire.cache.bucket import ObjectBackend
from snowfire.cli.main import main as snowfire
from snowfire.extractor import ExtractConfig, extract
from snowfire.extractor.hf import HFEncoder
from snowfire.jobs import free_port, stop_process, wait_healthy
from tests.helpers import REPO, tree_bytes
from tests.helpers.store import bucket_objects, extract_texts, texts, tiny_sst2, train_cli

pytestmark = pytest.mark.subprocess  # a server thread, and a `snowfire serve` process


@pytest.mark.parametrize(
    "dtype, tiles", [("float16", "token"), ("int8", "token"), ("float16", "layer")]
)
def test_a_bucket_holds_the_local_stores_bytes_and_reads_the_same(
    tiny_bert_dir, local_s3, tmp_path, dtype, tiles
):
    """tiles "layer": a feature chunk per layer, as every store had before token-major tiles
    (cache/segment.py), and what `--tiles layer` writes: read the same from the bucket."""
    url = local_s3()
    local = Store(tmp_path / "local")
    want = extract_texts(tiny_bert_dir, local, dtype, tiles=tiles)
    got = extract_texts(tiny_bert_dir, open_store(url), dtype, tiles=tiles)
    assert got == want
    bucket = open_store(url)
    assert bucket_objects(bucket) == tree_bytes(local.path)  # every name, every byte
    segments = {n.split("/")[3] for n in bucket_objects(bucket) if "/segments/" in n}
    assert len(segments) >= 3
    meta = json.loads(
        bucket.backend.get(
            next(n for n in bucket_objects(bucket) if n.endswith("features/zarr.json"))
        )
    )
    assert meta["codecs"][0]["configuration"]["chunk_shape"][1] == (3 if tiles == "token" else 1)
    fresh = open_reader(url)  # nothing cached from the write
    assert fresh.list_featuresets() == local.list_featuresets()
    rng = np.random.default_rng(1)
    for layers in (None, [2], [0, 2], [2, 0]):
        idx = [int(i) for i in rng.permutation(want.num_examples)[:17]]
        for read_dtype in (None, "float32") + (("int8",) if dtype == "int8" else ()):
            a = fresh.read(want.id, indices=idx, layers=layers, dtype=read_dtype)
            b = local.read(want.id, indices=idx, layers=layers, dtype=read_dtype)
            np.testing.assert_array_equal(a.features, b.features)
            np.testing.assert_array_equal(a.offsets, b.offsets)
            np.testing.assert_array_equal(a.word_ids, b.word_ids)
            np.testing.assert_array_equal(a.pair_starts, b.pair_starts)
            if dtype == "int8" and read_dtype == "int8":
                np.testing.assert_array_equal(a.scales, b.scales)
    assert fresh.featureset_texts(want.id) == local.featureset_texts(want.id)


def test_zarr_opens_the_bucket(tiny_bert_dir, local_s3, tmp_path):
    import zarr
    from zarr.storage import ObjectStore

    url = local_s3()
    info = extract_texts(tiny_bert_dir, open_store(url))
    bucket = open_store(url)
    assert {pool for pool, _ in bucket.segments()} == {info.encoder_id}
    root = zarr.open_group(ObjectStore(bucket.backend.client, read_only=True), mode="r")
    assert root.attrs["format"] == "snowfire-store"
    segments = bucket.segments()
    assert len(segments) >= 3
    for pool, seg_id in segments:
        group = root[f"pools/{pool}/segments/{seg_id}"]
        ours = bucket.read_keys(pool, list(group.attrs["keys"]), None)  # the segment, in order
        np.testing.assert_array_equal(group["features"][:], ours.features)
        np.testing.assert_array_equal(group["offsets"][:], ours.offsets)


def test_an_interrupted_writer_leaves_nothing_visible_and_the_rerun_completes(
    tiny_bert_dir, local_s3, tmp_path, monkeypatch
):
    url = local_s3()
    puts = []
    real_put = ObjectBackend.put

    def failing_put(self, rel, data):
        if len(puts) == 12:  # the root and pool metadata, then part of the first segment
            raise ConnectionError("network gone")
        puts.append(rel)
        real_put(self, rel, data)

    monkeypatch.setattr(ObjectBackend, "put", failing_put)
    with pytest.raises(ConnectionError, match="network gone"):
        extract_texts(tiny_bert_dir, open_store(url))
    monkeypatch.setattr(ObjectBackend, "put", real_put)
    assert any("/segments/" in p for p in puts)  # a segment was part written
    seen = open_store(url)
    assert seen.list_featuresets() == []
    pool = next(p.split("/")[1] for p in puts if p.startswith("pools/"))
    (seg_id,) = seen.backend.list_dir(f"pools/{pool}/segments")  # its objects are there...
    assert not seen.has_segment(pool, seg_id) and seen.segments() == []  # ...not committed
    local = Store(tmp_path / "local")
    want = extract_texts(tiny_bert_dir, local)
    assert extract_texts(tiny_bert_dir, open_store(url)) == want
    assert bucket_objects(open_store(url)) == tree_bytes(local.path)


def test_a_damaged_object_is_named(tiny_bert_dir, local_s3):
    url = local_s3()
    info = extract_texts(tiny_bert_dir, open_store(url))
    bucket = open_store(url)
    seg_id = bucket.backend.list_dir(f"pools/{info.encoder_id}/segments")[0]
    name = f"pools/{info.encoder_id}/segments/{seg_id}/word_ids/c/0"
    data = bytearray(bucket.backend.get(name))
    data[-1] ^= 0xFF
    bucket.backend.put(name, bytes(data))
    with pytest.raises(StoreCorruptError, match=r"word_ids/c/0: crc32c \w+, recorded \w+"):
        open_store(url).read(info.id, indices=list(range(info.num_examples)))


def test_fsck_names_a_damaged_object_and_repair_restores_the_bucket(
    tiny_bert_dir, local_s3, capsys
):
    """`snowfire fsck --store s3://...` fetches every object and checks it against the
    segment's checksums; --repair sets the segment aside (copied under quarantine/, then
    deleted) and re-extracts it: the bucket then reads as before, byte for byte."""
    url = local_s3()
    store = open_store(url)
    info = extract_texts(tiny_bert_dir, store)
    indices = list(range(info.num_examples))
    before = open_store(url).read(info.id, indices=indices)
    assert snowfire(["fsck", "--store", url, "--quiet"]) == 0
    bucket = open_store(url)
    seg_id = bucket.backend.list_dir(f"pools/{info.encoder_id}/segments")[1]
    name = f"pools/{info.encoder_id}/segments/{seg_id}/features/c/0/0/0"
    data = bytearray(bucket.backend.get(name))
    data[100] ^= 0x40  # inside the features: only the recorded crc32c sees it
    bucket.backend.put(name, bytes(data))
    assert snowfire(["fsck", "--store", url, "--quiet"]) == 1
    out = capsys.readouterr().out
    assert f"DAMAGED pools/{info.encoder_id}/segments/{seg_id} (feature sets: {info.id})" in out
    assert "features/c/0/0/0: crc32c" in out
    ok = [o for o in out.splitlines() if o.startswith("DAMAGED")]
    assert len(ok) == 1  # the other segments are sound
    assert snowfire(["fsck", "--store", url, "--repair", "--quiet"]) == 0
    assert f"re-extracted 1 feature sets: {info.id}" in capsys.readouterr().out
    kept = bucket.backend.list("quarantine")
    assert any(p.endswith("/features/c/0/0/0") for p in kept)  # set aside, not deleted
    after = open_store(url).read(info.id, indices=indices)
    assert after.features.tobytes() == before.features.tobytes()
    assert snowfire(["fsck", "--store", url, "--quiet"]) == 0


def test_without_obstore_the_message_says_what_to_install(monkeypatch):
    from snowfire.cache.bucket import connect

    monkeypatch.setitem(sys.modules, "obstore.store", None)  # import fails as if not installed
    with pytest.raises(
        RuntimeError, match=r"s3://x/y: .* needs obstore: pip install -e '\.\[s3\]'"
    ):
        connect("s3://x/y")


def test_a_prefix_holding_other_objects_is_not_taken_over(local_s3):
    from snowfire.cache.errors import IncompatibleStoreError

    url = local_s3()
    store = open_store(url)
    store.backend.put("notes.txt", b"someone else's")
    with pytest.raises(IncompatibleStoreError, match=r"is not a store: it holds .*notes\.txt"):
        store.ensure()
    assert store.backend.get("notes.txt") == b"someone else's"


def test_serve_and_train_from_a_bucket(tiny_bert_dir, local_s3, tmp_path):
    data = tiny_sst2(tmp_path / "data")
    url = local_s3()
    local = tmp_path / "local"
    for store in (url, str(local)):
        argv = ["extract", "--encoder", f"hf:{tiny_bert_dir}", "--task", "sst2"]
        assert snowfire(argv + ["--data", str(data), "--store", store, "--quiet"]) == 0
    # a head trained from the bucket equals one trained from the local store (same seed)
    runs = {}
    for name, store in (("bucket", url), ("local", str(local))):
        out = tmp_path / name
        runs[name] = train_cli(
            tiny_bert_dir, data, store, out, "sst2", "linear", "--lr", "0.03", "--epochs", "15"
        )
    assert runs["bucket"] == runs["local"]
    assert runs["local"]["train"]["accuracy"] > 0.6  # it learned: the runs compare something
    from safetensors.numpy import load_file

    weights = [load_file(tmp_path / n / "weights.safetensors") for n in ("bucket", "local")]
    assert weights[0].keys() == weights[1].keys()
    for key in weights[0]:
        np.testing.assert_array_equal(weights[0][key], weights[1][key])
    # `snowfire serve --store s3://...` answers what the local store holds
    port = free_port()
    cmd = [sys.executable, "-m", "snowfire.cli", "serve", "--store", url, "--port", str(port)]
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, log)
        fs = Store(local).list_featuresets()
        with RemoteStore(f"http://127.0.0.1:{port}") as remote:
            assert [f.id for f in remote.list_featuresets()] == [f.id for f in fs]
            for info in fs:
                idx = list(range(info.num_examples))
                a = remote.read(info.id, indices=idx, layers=[0, 2])
                b = Store(local).read(info.id, indices=idx, layers=[0, 2])
                np.testing.assert_array_equal(a.features, b.features)
    finally:
        stop_process(proc, grace=30)


def test_manifest_is_the_last_object_a_set_writes(tiny_bert_dir, local_s3, monkeypatch):
    url = local_s3()
    order = []
    real_put = ObjectBackend.put

    def recording_put(self, rel, data):
        order.append(rel)
        real_put(self, rel, data)

    monkeypatch.setattr(ObjectBackend, "put", recording_put)
    info = extract_texts(tiny_bert_dir, open_store(url))
    assert order[-1] == f"featuresets/{info.id}.json"
    for seg in {p.split("/")[3] for p in order if "/segments/" in p}:
        mine = [i for i, p in enumerate(order) if f"/segments/{seg}/" in p]
        assert order[mine[-1]].endswith(f"{seg}/checksums.json")  # the segment's commit
    assert json.loads(real_get(url, order[-1]))["id"] == info.id


def real_get(url, rel):
    return open_store(url).backend.get(rel)


def test_reads_across_shards_of_one_segment(tiny_bert_dir, local_s3, tmp_path):
    inputs = texts(n=400, seed=5)  # one segment of several shards of 2,048 tokens
    enc = HFEncoder(tiny_bert_dir, name="tiny", spec=f"hf:{tiny_bert_dir}")
    local = Store(tmp_path / "local")
    cfg = ExtractConfig(
        encoder=f"hf:{tiny_bert_dir}",
        store=str(local.path),
        progress=False,
        dtype="float32",
        segment_tokens=10**6,
    )
    info = extract(enc, inputs, local, task=None, split=None, config=cfg)
    extract(enc, inputs, open_store(url := local_s3()), task=None, split=None, config=cfg)
    shards = [n for n in bucket_objects(open_store(url)) if "/features/c/" in n]
    assert len(shards) >= 2
    bucket, rng = open_store(url), np.random.default_rng(0)
    for layers in (None, [1], [2, 0]):
        for idx in (list(range(info.num_examples)), [int(i) for i in rng.permutation(400)[:50]]):
            a = bucket.read(info.id, indices=idx, layers=layers)
            b = local.read(info.id, indices=idx, layers=layers)
            np.testing.assert_array_equal(a.features, b.features)


def test_jobs_of_a_service_on_a_bucket_use_it(tiny_bert_dir, local_s3, tmp_path):
    from fastapi.testclient import TestClient

    from snowfire.api import Settings, create_app
    from snowfire.jobs import Home
    from snowfire.jobs.worker import Worker

    url = local_s3()
    tiny_sst2(tmp_path / "home" / "tasks")
    settings = Settings(home=tmp_path / "home", store=url)
    with TestClient(create_app(settings=settings)) as client:
        body = {"kind": "extract", "params": {"encoder": f"hf:{tiny_bert_dir}", "task": "sst2"}}
        r = client.post("/v1/jobs", json=body)
        assert r.status_code == 202 and r.json()["params"]["store"] == url, r.text
        other = {**body, "params": {**body["params"], "store": "s3://someone-else/x"}}
        r2 = client.post("/v1/jobs", json=other)
        assert r2.status_code == 403 and "may use the service's store" in r2.text, r2.text
        Worker(Home((tmp_path / "home").resolve()), "extract", poll=0.2).run(once=True)
        job = client.get(f"/v1/jobs/{r.json()['id']}").json()
        assert job["status"] == "done", job
        listed = client.get("/v1/featuresets").json()
        assert {f["split"] for f in listed} == {"train", "dev"}
    assert [f.id for f in open_store(url).list_featuresets()] == sorted(f["id"] for f in listed)


def test_a_missing_bucket_is_named_in_one_line_and_the_service_answers_503(local_s3, capsys):
    from fastapi.testclient import TestClient

    from snowfire.api import create_app

    local_s3()  # the server and its environment, but not this bucket
    url = "s3://never-made/store"
    assert snowfire(["ls", "--store", url]) == 2
    err = capsys.readouterr().err
    assert f"{url}: listing featuresets failed (NoSuchBucket: " in err, err
    assert "AWS_ENDPOINT_URL" in err and "Traceback" not in err
    with TestClient(create_app(url)) as client:
        r = client.get("/v1/featuresets")
    assert r.status_code == 503, r.text
    assert r.json()["error"] == "StoreUnreachableError" and "NoSuchBucket" in r.json()["detail"]
