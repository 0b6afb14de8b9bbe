"""POST /v1/predict and GET /v1/runs over runs of every kind (tests/helpers/serving.py): the
same values as `snowfire predict` on the same inputs, one encoder pass for many ❄️ heads, the
shared encoder untouched by the adapter and LoRA runs served on it, and every refusal named."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

import snowfire
from snowfire.api import Settings, create_app
from snowfire.tasks import read_predictions
from tests.helpers.serving import RUNS, inputs_for, train_runs, write_input


@pytest.fixture(scope="module")
def home(tiny_bert_dir, data_dir, tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    train_runs(home, tiny_bert_dir, data_dir)
    return home


@pytest.fixture(scope="module")
def client(home, tiny_bert_dir):
    settings = Settings(home=home, encoder=f"hf:{tiny_bert_dir}", predict_max_runs=4)
    with TestClient(create_app(settings=settings)) as client:
        yield client


def _predict(client, runs, form, values, status=200):
    r = client.post("/v1/predict", json={"runs": runs, form: values})
    assert r.status_code == status, r.text
    return r.json()


def _printed(path, kind: str) -> list:
    """The predicted column of `snowfire predict`'s file, as it printed it (read back)."""
    if kind == "tagging":
        return read_predictions(path, kind)[1]
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    return [float(r[2]) if kind == "regression" else r[2] for r in rows]


def _metric(client, name: str, **labels) -> float:
    text = client.get("/metrics").text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


@pytest.mark.parametrize("name", list(RUNS))
def test_the_service_predicts_what_snowfire_predict_prints(client, home, tmp_path, name):
    side, task, kind = RUNS[name]
    form, values = inputs_for(task, n=7, seed=list(RUNS).index(name))
    run = home / "runs" / name
    out = tmp_path / "pred.tsv"
    source = write_input(
        tmp_path / ("input.txt" if form == "texts" else "input.jsonl"), form, values
    )
    snowfire.predict(snowfire.PredictConfig(run=str(run), input=str(source), out=str(out)))
    task_kind = {"sst2": "classification", "stsb": "regression"}.get(task, "tagging")
    printed = _printed(out, task_kind)
    body = _predict(client, [name], form, values)
    (answer,) = body["runs"]
    assert (answer["run"], answer["side"], answer["kind"]) == (name, side, kind)
    preds = answer["predictions"]
    if task_kind == "classification":
        assert [p["label"] for p in preds] == printed
        for p in preds:  # the label is the argmax of the probabilities sent with it
            probs = p["probabilities"]
            assert max(probs, key=probs.get) == p["label"]
            assert sum(probs.values()) == pytest.approx(1.0, abs=1e-6)
    elif task_kind == "regression":
        assert [p["score"] for p in preds] == printed  # every digit of the .tsv's floats
    else:
        assert [p["tags"] for p in preds] == printed
        for p, words in zip(preds, values, strict=True):
            for span in p.get("spans", []):
                assert span["text"] == " ".join(words[span["start"] : span["end"]])
    if side == "snow":
        assert body["cached"] == [False] * len(values) and body["encoded"] == len(values)
    else:
        assert "cached" not in body


def test_two_snow_runs_read_one_encoder_pass_and_a_stored_text_costs_none(client):
    form, values = inputs_for("sst2", n=4, seed=901)
    rounds = _metric(client, "snowfire_encoder_rounds_total")
    body = _predict(client, ["sst2-linear", "sst2-bcn"], form, values)
    assert [r["run"] for r in body["runs"]] == ["sst2-linear", "sst2-bcn"]
    assert body["encoded"] == 4 and body["cached"] == [False] * 4
    assert _metric(client, "snowfire_encoder_rounds_total") == rounds + 1  # once, for both
    again = _predict(client, ["sst2-bcn", "sst2-linear"], form, values[1:] + ["a new text here"])
    assert again["cached"] == [True, True, True, False] and again["encoded"] == 1
    assert _metric(client, "snowfire_encoder_rounds_total") == rounds + 2
    # the stored features, read back: the same answers (to the last bits a batch decides)
    old_answers = body["runs"][0]["predictions"][1:]
    for new, old in zip(again["runs"][1]["predictions"][:3], old_answers, strict=True):
        assert new["label"] == old["label"]
        assert new["probabilities"] == pytest.approx(old["probabilities"], rel=0, abs=1e-6)
    # per run: requests, examples, cache hits, latency
    assert (
        _metric(client, "snowfire_predict_cache_examples_total", run="sst2-bcn", result="hit") >= 3
    )
    assert _metric(client, "snowfire_predict_requests_total", run="sst2-linear") >= 2
    assert _metric(client, "snowfire_predict_examples_total", run="sst2-linear") >= 8
    assert _metric(client, "snowfire_predict_seconds_count", run="sst2-linear") >= 2


def test_adapter_lora_and_bitfit_runs_share_an_encoder_that_stays_the_pretrained_one(
    client, tiny_bert_dir
):
    from transformers import AutoModel

    form, values = inputs_for("stsb", n=5, seed=77)
    runs = ["stsb-adapter", "stsb-lora", "stsb-bitfit"]
    first = _predict(client, runs, form, values)
    again = _predict(client, list(reversed(runs)), form, values)  # the other switching order
    assert first["runs"] == list(reversed(again["runs"]))
    predictor = client.app.state.predictor
    shared = predictor.models.shared
    assert all(
        predictor.models.get(i).model.encoder is shared.encoder for i in _infos(client, runs)
    )
    pretrained = AutoModel.from_pretrained(tiny_bert_dir).state_dict()
    served = shared.base_state()
    assert set(served) == {
        n for n, _ in AutoModel.from_pretrained(tiny_bert_dir).named_parameters()
    }
    assert all(torch.equal(t, pretrained[n]) for n, t in served.items())
    body = client.get("/v1/runs").json()
    listed = {r["name"]: r for r in body["runs"]}
    assert body["shared_encoder_bytes"] == shared.base_bytes()
    for info in _infos(client, runs):  # each counts its own parts only: no encoder copy
        loaded = predictor.models.get(info)
        output = sum(p.numel() * p.element_size() for p in loaded.model.output.parameters())
        assert listed[info.name]["memory_bytes"] == shared.slot_bytes(loaded.slot.name) + output


def _infos(client, names):
    registry = client.app.state.predictor.registry
    return [registry.get(n) for n in names]


def test_runs_are_listed_with_task_kind_metric_score_and_size(client, home):
    body = client.get("/v1/runs").json()
    listed = {r["name"]: r for r in body["runs"]}
    assert set(RUNS) <= set(listed)
    for name, (side, task, kind) in RUNS.items():
        row = listed[name]
        metrics = json.loads((home / "runs" / name / "metrics.json").read_text())
        assert (row["side"], row["kind"], row["task"], row["status"]) == (side, kind, task, "ready")
        assert row["score"] == metrics["dev"][row["metric"]]
        weights = "weights.safetensors" if side == "snow" else "best.pt"
        assert row["size_bytes"] == (home / "runs" / name / weights).stat().st_size
        assert row["input"] == ("pairs" if task == "stsb" else "texts")


def test_a_full_run_holds_its_whole_model(client):
    _predict(client, ["sst2-full"], *inputs_for("sst2", n=2, seed=5))
    model = client.app.state.predictor.models.get(_infos(client, ["sst2-full"])[0]).model
    whole = sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])
    listed = {r["name"]: r for r in client.get("/v1/runs").json()["runs"]}
    assert listed["sst2-full"]["memory_bytes"] == whole


def test_every_refusal_names_its_problem(client, home, tiny_bert_dir, data_dir):
    texts = ["a man plays"]
    r = client.post("/v1/predict", json={"runs": ["no-such-run"], "texts": texts})
    assert r.status_code == 404 and "no run named 'no-such-run' under" in r.json()["detail"]
    for name in ("../runs/sst2-linear", ".", "/sst2-linear"):  # nothing outside, nor the root
        r = client.post("/v1/predict", json={"runs": [name], "texts": texts})
        assert r.status_code == 404 and "GET /v1/runs lists them" in r.json()["detail"], name
    r = client.post("/v1/predict", json={"runs": ["stsb-esim"], "texts": texts})
    assert r.status_code == 422
    assert r.json()["detail"] == (
        "run 'stsb-esim' (stsb, regression) reads pairs of texts: send pairs, got texts"
    )
    r = client.post("/v1/predict", json={"runs": ["sst2-linear"], "pairs": [["a b", "c d"]]})
    assert r.status_code == 422 and "reads one text per example: send texts or tokens" in r.text
    r = client.post(
        "/v1/predict", json={"runs": ["sst2-linear"], "texts": texts, "tokens": [["a"]]}
    )
    assert r.status_code == 422 and "exactly one of 'texts', 'pairs' or 'tokens'" in r.text
    r = client.post("/v1/predict", json={"runs": ["sst2-linear", "sst2-linear"], "texts": texts})
    assert r.status_code == 422 and r.json()["detail"] == "runs: 'sst2-linear' is named twice"
    r = client.post("/v1/predict", json={"runs": ["sst2-linear"] * 5, "texts": texts})
    assert r.status_code == 413 and "the limit is 4 (SNOWFIRE_PREDICT_MAX_RUNS)" in r.text

    # unfinished: a job's run directory before metrics.json, or before anything
    half = home / "runs" / "half"
    shutil.copytree(home / "runs" / "sst2-linear", half)
    (half / "metrics.json").unlink()
    r = client.post("/v1/predict", json={"runs": ["half"], "texts": texts})
    assert r.status_code == 409
    assert r.json()["detail"].startswith("run 'half' is not finished: no metrics.json")
    paused = home / "runs" / "paused"  # a race's rung: stopped after epoch 1 of 2
    train_runs(home, tiny_bert_dir, data_dir, names=["sst2-linear"], out=paused, pause_at=1)
    r = client.post("/v1/predict", json={"runs": ["paused"], "texts": texts})
    assert r.status_code == 409
    assert r.json()["detail"].startswith(
        "run 'paused' is not finished: paused after epoch 1 (no config.json)"
    )
    (home / "runs" / "queued").mkdir()
    r = client.post("/v1/predict", json={"runs": ["queued"], "texts": texts})
    assert r.status_code == 409 and "holds no config.json yet" in r.json()["detail"]

    # made with another encoder: a ❄️ run's features, a LoRA run's starting weights
    for name, record, field in (
        ("sst2-linear", "head.json", ("encoder",)),
        ("stsb-lora", "config.json", ("encoder",)),
    ):
        other = home / "runs" / f"other-{name}"
        shutil.copytree(home / "runs" / name, other)
        saved = json.loads((other / record).read_text())
        saved[field[0]]["weights_sha256"] = "0" * 64
        (other / record).write_text(json.dumps(saved))
        form, values = inputs_for(RUNS[name][1], n=1)
        r = client.post("/v1/predict", json={"runs": [other.name], form: values})
        assert r.status_code == 409, r.text
        detail = r.json()["detail"]
        assert f"run '{other.name}' was made with another encoder" in detail
        assert f"weights_sha256: run {'0' * 64}" in detail
    listed = {r["name"]: r for r in client.get("/v1/runs").json()["runs"]}
    assert listed["half"]["status"] == "unfinished"
    assert listed["other-stsb-lora"]["status"] == "other-encoder"


def test_without_an_encoder_predictions_are_503(home):
    with TestClient(create_app(settings=Settings(home=home))) as client:
        r = client.post("/v1/predict", json={"runs": ["sst2-linear"], "texts": ["a b"]})
        assert r.status_code == 503 and "started without an encoder" in r.json()["detail"]


READ, PREDICT, WRITE = "read-key-000000000001", "predict-key-00000000001", "write-key-0000000000001"


def test_the_predict_scope_is_enforced(home, tiny_bert_dir):
    keys = f"{READ},{PREDICT}:predict,{WRITE}:write"
    settings = Settings(home=home, encoder=f"hf:{tiny_bert_dir}", api_keys=keys)
    body = {"runs": ["sst2-linear"], "texts": ["a man plays"]}
    with TestClient(create_app(settings=settings)) as client:

        def call(key, method, path, json=None):
            headers = {"Authorization": f"Bearer {key}"}
            return client.request(method, path, json=json, headers=headers)

        assert call(PREDICT, "POST", "/v1/predict", body).status_code == 200
        assert call(PREDICT, "GET", "/v1/runs").status_code == 200
        for path in ("/v1/featuresets", "/metrics", "/"):
            r = call(PREDICT, "GET", path)
            assert r.status_code == 403, path
            assert r.json()["detail"].startswith("this key may only predict: POST /v1/predict")
        r = call(READ, "POST", "/v1/predict", body)
        assert r.status_code == 403
        assert r.json()["detail"] == "this key may read, not predict (a predict or write key can)"
        assert call(READ, "GET", "/v1/runs").status_code == 200
        assert call(WRITE, "POST", "/v1/predict", body).status_code == 200
        assert call(PREDICT, "GET", "/v1/predict").status_code == 405  # the router's, as for any
        assert call(READ, "POST", "/v1/runs").status_code == 405
        assert client.post("/v1/predict", json=body).status_code == 401


def test_a_prediction_beyond_the_queue_bound_is_429_with_retry_after(client):
    import threading
    import time

    from snowfire.serving.worker import ComputeThread

    predictor = client.app.state.predictor
    saved, predictor.compute = predictor.compute, ComputeThread(max_queue=1)
    gate = threading.Event()
    holder = threading.Thread(target=lambda: predictor.compute.run(lambda: gate.wait(30), 30))
    try:
        holder.start()
        deadline = time.monotonic() + 10
        while predictor.compute._waiting < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        refused = _metric(client, "snowfire_refused_total", limit="predict_queue")
        r = client.post("/v1/predict", json={"runs": ["sst2-linear"], "texts": ["a man plays"]})
        assert r.status_code == 429 and r.headers["Retry-After"] == "1"
        assert r.json()["detail"] == (
            "1 predictions are already waiting for the compute thread "
            "(SNOWFIRE_PREDICT_MAX_QUEUE=16): retry after 1 s"
        )
        assert _metric(client, "snowfire_refused_total", limit="predict_queue") == refused + 1
    finally:
        gate.set()
        holder.join(10)
        predictor.compute.close()
        predictor.compute = saved


def test_snowfire_predictor_answers_in_process_as_the_service(client, home, tmp_path):
    names = ["sst2-linear", "sst2-bcn", "sst2-full"]
    form, values = inputs_for("sst2", n=6, seed=404)
    rest = _predict(client, names, form, values)
    runs = {name: home / "runs" / name for name in names}
    with snowfire.Predictor(runs) as predictor:  # the runs' encoder, a temporary store
        local = predictor.predict(texts=values).to_json()
        assert predictor.predict(names[:1], texts=values[:1]).to_json()["cached"] == [True]
    for body in (rest, local):
        body.pop("seconds")
    assert local == rest
    other = tmp_path / "other"
    shutil.copytree(home / "runs" / "stsb-mlp", other)
    head = json.loads((other / "head.json").read_text())
    head["encoder"]["spec"] = "hf:elsewhere"
    (other / "head.json").write_text(json.dumps(head))
    with pytest.raises(ValueError, match=r"made with 2 encoders \(hf:.*, hf:elsewhere\)"):
        snowfire.Predictor([home / "runs" / "sst2-linear", other])
    with pytest.raises(FileNotFoundError, match="is not a run directory"):
        snowfire.Predictor([tmp_path])
