"""The job endpoints: 202 on submission with resolved params, status with log tail and
progress, listing, cancel, and every validation error (422 with its reason) at submission."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from snowfire.api import Settings, create_app
from snowfire.jobs import Home, JobQueue

ENCODERS = "'minilm', 'hf:NAME_OR_DIR', 'elmo:OPTIONS.json,WEIGHTS.hdf5' or 'elmo:DIR'"


@pytest.fixture
def home(tmp_path, data_dir):
    (tmp_path / "tasks").symlink_to(data_dir)  # the default `data`: HOME/tasks
    return Home(tmp_path)


@pytest.fixture
def client(home):
    with TestClient(create_app(settings=Settings(home=home.root))) as c:
        yield c


def test_submit_answers_202_with_resolved_params(client, home):
    r = client.post(
        "/v1/jobs",
        json={
            "kind": "train",
            "params": {"encoder": "minilm", "task": "stsb", "head": "esim", "epochs": 2, "lr": 1},
        },
    )
    assert r.status_code == 202, r.text
    job = r.json()
    assert (job["kind"], job["status"], job["attempts"], job["progress"]) == (
        "train",
        "queued",
        0,
        0.0,
    )
    params = job["params"]
    assert params["out"] == str(home.root / "runs" / job["id"])
    assert (params["store"], params["data"]) == (str(home.store), str(home.tasks))
    assert (params["epochs"], params["lr"], params["batch_size"]) == (2, 1.0, 32)
    assert client.get(f"/v1/jobs/{job['id']}").json()["params"] == params


def test_a_deadline_param_is_kept_with_the_job_and_not_given_to_its_command(client, home):
    from snowfire.jobs.kinds import split_limits

    r = client.post(
        "/v1/jobs",
        json={
            "kind": "train",
            "params": {"encoder": "minilm", "task": "stsb", "head": "esim", "deadline": 90},
        },
    )
    assert r.status_code == 202, r.text
    params = r.json()["params"]
    assert params["deadline"] == 90
    limits, command = split_limits(params)
    assert limits.deadline == 90 and "deadline" not in command
    from snowfire.heads import TrainConfig

    TrainConfig(**command)  # what the runner builds: the command's own fields only
    without = client.post(
        "/v1/jobs",
        json={"kind": "train", "params": {"encoder": "minilm", "task": "stsb", "head": "esim"}},
    ).json()["params"]
    assert "deadline" not in without  # unset: the worker's default, decided when it runs


def test_status_shows_log_tail_progress_and_metrics(client, home):
    job_id = client.post(
        "/v1/jobs",
        json={
            "kind": "extract",
            "params": {"encoder": "hf:/models/x", "task": "sst2", "split": ["dev"]},
        },
    ).json()["id"]
    queue = JobQueue(home.queue)
    claim = queue.claim("extract", "w", 30.0)
    home.jobs.mkdir(exist_ok=True)
    bar = "extract:  10%|#  | 4/40\rextract:  42%|####  | 17/40"
    home.log(job_id).write_text(f"--- attempt 1\nloading\n{bar}")
    r = client.get(f"/v1/jobs/{job_id}", params={"tail": 2})
    assert r.status_code == 200
    body = r.json()
    assert (body["status"], body["worker"], body["progress"]) == ("running", "w", 0.42)
    assert body["log"] == ["loading", "extract:  42%|####  | 17/40"]
    queue.finish(job_id, claim.lease, "done", metrics={"featuresets": [{"id": "fs"}]})
    body = client.get(f"/v1/jobs/{job_id}").json()
    assert (body["status"], body["progress"]) == ("done", 1.0)
    assert body["metrics"] == {"featuresets": [{"id": "fs"}]}


def test_list_filters_and_cancel(client):
    ids = [
        client.post(
            "/v1/jobs", json={"kind": "extract", "params": {"encoder": "minilm", "task": "sst2"}}
        ).json()["id"]
        for _ in range(3)
    ]
    r = client.post(f"/v1/jobs/{ids[0]}/cancel")
    assert r.status_code == 200
    assert (r.json()["status"], r.json()["cancel_requested"]) == ("cancelled", True)
    listed = client.get("/v1/jobs").json()
    assert [j["id"] for j in listed] == ids[::-1]  # newest first
    queued = client.get("/v1/jobs", params={"status": "queued", "kind": "extract"}).json()
    assert [j["id"] for j in queued] == ids[:0:-1]
    assert client.get("/v1/jobs", params={"kind": "train"}).json() == []
    again = client.post(f"/v1/jobs/{ids[0]}/cancel")
    assert again.status_code == 409
    assert again.json() == {
        "detail": f"job {ids[0]} is already cancelled: nothing to cancel",
        "error": "JobStateError",
    }
    missing = client.get("/v1/jobs/nope")
    assert (missing.status_code, missing.json()["detail"]) == (404, "no job 'nope'")
    assert client.post("/v1/jobs/nope/cancel").status_code == 404
    bad = client.get("/v1/jobs", params={"status": "lost"})
    assert bad.status_code == 422
    assert bad.json()["detail"].startswith("query.status: Input should be 'queued'")


TRAIN = {"encoder": "minilm", "task": "sst2", "head": "linear"}


@pytest.mark.parametrize(
    "body, status, detail",
    [
        (
            {"kind": "serve", "params": {}},
            422,
            "kind: Input should be 'extract', 'train', 'finetune', 'compare' or 'layers' "
            "(got 'serve')",
        ),
        (
            {"kind": "train", "params": TRAIN, "priority": 1},
            422,
            "priority: Extra inputs are not permitted (got 1)",
        ),
        (
            {"kind": "train", "params": {**TRAIN, "task": "imdb"}},
            422,
            "params.task: Input should be 'conll2003', 'sst2', 'mnli', 'mrpc', 'stsb', 'sick-e', "
            "'sick-r' or 'cola' (got 'imdb')",
        ),
        (
            {"kind": "train", "params": {**TRAIN, "encoder": "bert-base"}},
            422,
            f"params.encoder: unknown encoder spec 'bert-base': expected {ENCODERS}",
        ),
        (
            {"kind": "train", "params": {**TRAIN, "encoder": "hf:"}},
            422,
            f"params.encoder: unknown encoder spec 'hf:': expected {ENCODERS}",
        ),
        (
            {"kind": "train", "params": {**TRAIN, "epoch": 3}},
            422,
            "params.epoch: Extra inputs are not permitted (got 3)",
        ),
        (
            {"kind": "train", "params": {**TRAIN, "epochs": "3", "lr": "fast"}},
            422,
            "params.epochs: Input should be a valid integer (got '3'); "
            "params.lr: Input should be a valid number (got 'fast')",
        ),
        (
            {"kind": "train", "params": {"encoder": "minilm", "task": "sst2"}},
            422,
            "params.head: Field required",
        ),
        (
            {"kind": "train", "params": {**TRAIN, "epochs": 0}},
            422,
            "params.epochs: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            {"kind": "train", "params": {**TRAIN, "head": "transformer"}},
            409,
            "params.head: unknown head 'transformer'; known heads: linear, mlp, probe, bcn, esim, "
            "bilstm-crf, bilstm-softmax, crf, softmax",
        ),
        (
            {"kind": "train", "params": {**TRAIN, "head": "esim"}},
            409,
            "params.head: head 'esim' reads pair texts but the task has single texts; heads for "
            "classification on single texts: linear, mlp, probe, bcn",
        ),
        (
            {"kind": "train", "params": {**TRAIN, "hparams": {"hiden": 3}}},
            409,
            "params.hparams: unknown hyper-parameter(s) ['hiden'] for head 'linear'; it takes: "
            "dropout, pool",
        ),
        (
            {"kind": "train", "params": {**TRAIN, "task": "mnli"}},
            404,
            "params: no train/dev split of mnli in HOME/tasks (expected "
            "HOME/tasks/mnli/train.tsv, HOME/tasks/mnli/dev_matched.tsv)",
        ),
        (
            {"kind": "extract", "params": {"encoder": "minilm"}},
            409,
            "params: give either 'task' (task data in 'data') or 'task_spec' (your own task), or "
            "'input' (a text file)",
        ),
        (
            {"kind": "extract", "params": {"encoder": "minilm", "task": "sst2", "split": ["test"]}},
            404,
            "params: no test split of sst2 in HOME/tasks (expected HOME/tasks/sst2/test.tsv)",
        ),
        (
            {"kind": "extract", "params": {"encoder": "minilm", "task": "sst2", "split": ["val"]}},
            422,
            "params.split.0: Input should be 'train', 'dev', 'test' or 'select' (got 'val')",
        ),
        (
            {"kind": "extract", "params": {"encoder": "minilm", "input": "missing.txt"}},
            404,
            "params: input: no file HOME/missing.txt",
        ),
        (
            {
                "kind": "extract",
                "params": {"encoder": "minilm", "task": "sst2", "dtype": "bfloat16"},
            },
            422,
            "params.dtype: Input should be 'float16', 'float32' or 'int8' (got 'bfloat16')",
        ),
        (
            {"kind": "train", "params": {**TRAIN, "deadline": 0}},
            422,
            "params.deadline: Input should be greater than 0 (got 0)",
        ),
        (
            {"kind": "extract", "params": {"encoder": "minilm", "task": "sst2", "deadline": "1h"}},
            422,
            "params.deadline: Input should be a valid number (got '1h')",
        ),
    ],
)
def test_submission_errors_name_the_reason_with_their_status(client, home, body, status, detail):
    """422: the body does not fit the schema; 409: it does, and the command refuses the params
    (the schema cannot say it); 404: what the params name is not in the data directory."""
    r = client.post("/v1/jobs", json=body)
    assert r.status_code == status, r.text
    assert r.json()["detail"] == detail.replace("HOME", str(home.root))
    assert client.get("/v1/jobs").json() == []  # nothing was queued


def test_finetune_params_are_the_finetune_config_fields(client, home):
    base = {"encoder": "minilm", "task": "sst2"}
    r = client.post("/v1/jobs", json={"kind": "finetune", "params": {**base, "lr": -1.0}})
    assert r.status_code == 422
    assert r.json()["detail"] == "params.lr: Input should be greater than 0 (got -1.0)"
    r = client.post("/v1/jobs", json={"kind": "finetune", "params": {**base, "head": "esim"}})
    assert (r.status_code, r.json()["detail"]) == (
        422,
        "params.head: Extra inputs are not permitted (got 'esim')",
    )
    r = client.post("/v1/jobs", json={"kind": "finetune", "params": {**base, "epochs": 1}})
    assert r.status_code == 202, r.text
    params = r.json()["params"]
    assert params["out"] == str(home.runs / r.json()["id"]) and params["epochs"] == 1


def test_grid_params_are_checked_at_submission(client, home):
    base = {"encoder": "minilm", "task": "sst2"}
    for params, status, detail in [
        ({"grid_lrs": [1e-3]}, 409, "params.grid_lrs: only for a grid (set grid)"),
        (
            {"grid": "shared", "lr": 1e-3},
            409,
            "params.lr: a grid tries the rates itself (grid_lrs): drop lr 0.001",
        ),
        (
            {"grid": "exact", "grid_epochs": [2, 0]},
            422,
            "params.grid_epochs.1: Input should be greater than or equal to 1 (got 0)",
        ),
        ({"grid": "all"}, 422, "params.grid: Input should be 'shared' or 'exact' (got 'all')"),
    ]:
        r = client.post("/v1/jobs", json={"kind": "finetune", "params": {**base, **params}})
        assert (r.status_code, r.json()["detail"]) == (status, detail)
    assert client.get("/v1/jobs").json() == []


def _run_compare_job(client, home, params):
    """Submit a compare job, run it with one worker pass: (its id, its body with 50 log lines),
    checked done."""
    from snowfire.jobs.worker import Worker

    r = client.post("/v1/jobs", json={"kind": "compare", "params": params})
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    assert Worker(home, "compare", poll=0.2).run(once=True) == 1
    body = client.get(f"/v1/jobs/{job_id}", params={"tail": 50}).json()
    assert body["status"] == "done", body.get("error")
    return job_id, body


@pytest.mark.subprocess  # a real worker runs the job in its own runner process
def test_a_compare_job_runs_the_arms_and_predict_reads_their_runs(
    client, home, tiny_bert_dir, tmp_path
):
    from snowfire import predict
    from snowfire.heads import PredictConfig

    params = {
        "encoder": f"hf:{tiny_bert_dir}",
        "tasks": ["stsb"],
        "heads": ["linear"],
        "budget": "quick",
        "progress": False,
        "arms": ["bitfit", "lora", "lpft"],
    }
    job_id, body = _run_compare_job(client, home, params)
    cells = [line.split(":")[0] for line in body["log"] if line.startswith("[")]
    # LP-FT's probe first (it cannot race: it is where LP-FT starts), then the raced cells in
    # rungs (each cell's line once, at its first rung)
    assert cells[0] == "[1/6] stsb ❄️ probe (LP-FT's start) seed 0", cells
    assert sorted(c.split("] ", 1)[1] for c in cells[1:]) == sorted(
        f"stsb {name} seed 0" for name in ("❄️ linear", "🔥 fine-tuning", "LoRA", "BitFit", "LP-FT")
    ), cells
    assert [c.split("]")[0] for c in cells] == [f"[{k}/6" for k in range(1, 7)], cells
    out = home.root / "runs" / job_id
    arms = json.loads((out / "results.json").read_text())["tasks"]["stsb"]["verdict"]["arms"]
    assert set(arms) == {"bitfit", "lora", "lpft"}
    texts = tmp_path / "pairs.jsonl"
    texts.write_text('{"text_a": "a dog runs", "text_b": "a dog is running"}\n')
    for arm in ("lora", "bitfit", "lpft"):
        got = predict(
            PredictConfig(
                run=str(out / arm / "stsb" / "seed0"),
                input=str(texts),
                out=str(tmp_path / f"{arm}.tsv"),
            )
        )
        assert len(got.predictions) == 1
    outside = client.post(
        "/v1/jobs",
        json={"kind": "compare", "params": {**params, "arms": ["seq"], "intermediate": "/etc"}},
    )
    assert outside.status_code == 403 and "outside the data directory" in outside.text


@pytest.mark.subprocess  # a real worker runs the job in its own runner process
def test_a_finetune_job_with_grid_params_runs_the_grid(client, home, tiny_bert_dir):
    from snowfire.jobs.worker import Worker

    params = {
        "encoder": f"hf:{tiny_bert_dir}",
        "task": "sst2",
        "batch_size": 8,
        "progress": False,
        "grid": "exact",
        "grid_lrs": [1e-3, 3e-3],
        "grid_epochs": [1],
    }
    r = client.post("/v1/jobs", json={"kind": "finetune", "params": params})
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    assert Worker(home, "finetune", poll=0.2).run(once=True) == 1
    body = client.get(f"/v1/jobs/{job_id}").json()
    assert body["status"] == "done", body.get("error")
    out = home.runs / job_id
    record = json.loads((out / "grid.json").read_text())
    assert record["mode"] == "exact" and (record["lrs"], record["epochs"]) == ([1e-3, 3e-3], [1])
    assert sorted(p.name for p in (out / "grid").iterdir()) == [
        "lr=0.001-epochs=1",
        "lr=0.003-epochs=1",
    ]
    assert body["metrics"] == json.loads((out / "metrics.json").read_text())
    chosen = Path(record["chosen"]["run"])
    assert body["metrics"] == json.loads((chosen / "metrics.json").read_text())


def test_a_service_without_home_serves_no_jobs(tmp_path):
    with TestClient(create_app(tmp_path / "store")) as c:
        r = c.get("/v1/jobs")
        assert r.status_code == 503
        assert r.json()["detail"].startswith("this service has no data directory, so no job")
        assert c.get("/healthz").status_code == 200


def test_a_retried_submission_with_its_idempotency_key_queues_one_job(client, home):
    body = {"kind": "train", "params": {"encoder": "minilm", "task": "sst2", "head": "linear"}}
    first = client.post("/v1/jobs", json=body, headers={"Idempotency-Key": "k-1"})
    again = client.post("/v1/jobs", json=body, headers={"Idempotency-Key": "k-1"})
    assert first.status_code == again.status_code == 202
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert [j.id for j in JobQueue(home.queue).list()] == [first.json()["id"]]
    other = {"kind": "train", "params": {**body["params"], "head": "mlp"}}
    r = client.post("/v1/jobs", json=other, headers={"Idempotency-Key": "k-1"})
    assert r.status_code == 409
    assert r.json()["detail"] == (
        f"Idempotency-Key 'k-1' was used for another request (job {first.json()['id']}): "
        "use a new key for a new job"
    )
    fresh = client.post("/v1/jobs", json=body, headers={"Idempotency-Key": "k-2"})
    assert fresh.status_code == 202 and fresh.json()["id"] != first.json()["id"]
    plain = [client.post("/v1/jobs", json=body).json()["id"] for _ in range(2)]
    assert len(set(plain)) == 2  # without a key every request is a new job


@pytest.mark.parametrize(
    "params",
    [
        {**TRAIN, "out": "../escape"},
        {**TRAIN, "out": "runs/../../escape"},
        {**TRAIN, "store": "/etc"},
        {**TRAIN, "data": "/"},
        {"encoder": "minilm", "input": "../../etc/passwd"},
    ],
)
def test_job_paths_cannot_leave_the_data_directory(client, home, params, monkeypatch):
    monkeypatch.delenv("SNOWFIRE_ALLOWED_PATHS", raising=False)
    kind = "extract" if "input" in params else "train"
    r = client.post("/v1/jobs", json={"kind": kind, "params": params})
    assert r.status_code == 403, r.text
    assert "is outside the data directory" in r.json()["detail"]
    assert client.get("/v1/jobs").json() == []


def test_an_allowed_directory_outside_home_is_accepted(client, home, tmp_path_factory, monkeypatch):
    outside = tmp_path_factory.mktemp("shared-runs")
    monkeypatch.setenv("SNOWFIRE_ALLOWED_PATHS", str(outside))
    r = client.post(
        "/v1/jobs", json={"kind": "train", "params": {**TRAIN, "out": str(outside / "r")}}
    )
    assert r.status_code == 202, r.text
    assert r.json()["params"]["out"] == str(outside / "r")


@pytest.mark.subprocess  # a real worker runs the job in its own runner process
def test_a_compare_job_reports_each_cell_and_its_table_is_served(client, home, tiny_bert_dir):
    params = {
        "encoder": f"hf:{tiny_bert_dir}",
        "tasks": ["sst2"],
        "heads": ["linear"],
        "budget": "quick",
        "progress": False,
    }
    job_id, body = _run_compare_job(client, home, params)
    cells = [line for line in body["log"] if line.startswith("[")]  # a progress line per cell
    assert [c.split(":")[0] for c in cells] == [
        "[1/2] sst2 ❄️ linear seed 0",
        "[2/2] sst2 🔥 fine-tuning seed 0",
    ]
    out = home.root / "runs" / job_id
    assert body["metrics"]["table"] == str(out / "table.md")
    results = json.loads((out / "results.json").read_text())
    verdict = results["tasks"]["sst2"]["verdict"]["text"]
    assert body["metrics"]["verdicts"] == {"sst2": verdict}
    png = client.get(f"/ui/runs/{job_id}/table.png")  # the plot, from the job's run folder
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    assert f"{job_id}: ❄️ or 🔥" in client.get("/").text  # the table, on the page
