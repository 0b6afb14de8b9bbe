"""A job's `task_spec` is the spec file's path or the spec object itself, for every kind (the
README and the help of each command promise both): `POST /v1/jobs` with the object inline is
accepted, its relative split paths are made the data directory's, and a worker runs it, for
extract, train, finetune and compare alike. The job params' schema says so too (the OpenAPI
form: tests/test_openapi_doc.py)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from snowfire.api import Settings, create_app
from snowfire.jobs import Home
from snowfire.jobs.worker import Worker
from tests.helpers.tasks import FILMS_SPEC, write_films


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = Home(tmp_path_factory.mktemp("home"))
    write_films(home.root / "tasks")  # HOME/tasks: the data directory a spec object is relative to
    return home


@pytest.fixture(scope="module")
def client(home):
    with TestClient(create_app(settings=Settings(home=home.root))) as c:
        yield c


@pytest.mark.parametrize("kind", ["extract", "train", "finetune"])
def test_an_inline_spec_is_accepted_with_its_paths_resolved(client, home, kind):
    params = {"encoder": "minilm", "task_spec": FILMS_SPEC} | (
        {"head": "linear"} if kind == "train" else {}
    )
    r = client.post("/v1/jobs", json={"kind": kind, "params": params})
    assert r.status_code == 202, r.text
    stored = r.json()["params"]["task_spec"]
    assert stored["name"] == "films" and stored["columns"] == FILMS_SPEC["columns"]
    assert stored["splits"] == {
        s: str(home.root / "tasks" / "films" / f"{s}.csv") for s in ("train", "dev")
    }
    client.post(f"/v1/jobs/{r.json()['id']}/cancel")  # not run here: the test below runs jobs


@pytest.mark.parametrize(
    ("change", "status", "detail"),
    [  # params that fit the schema but not the command: 409; an input that is not there: 404
        (
            {"kind": "ranking"},
            409,
            "params.task_spec: task spec inline: field 'kind': expected one of",
        ),
        (
            {"splits": {"train": "films/nope.csv", "dev": "films/dev.csv"}},
            404,
            "params.task_spec: expected the file HOME/tasks/films/nope.csv",
        ),
    ],
)
def test_a_bad_inline_spec_is_refused_naming_its_field(client, home, change, status, detail):
    params = {"encoder": "minilm", "head": "linear", "task_spec": FILMS_SPEC | change}
    r = client.post("/v1/jobs", json={"kind": "train", "params": params})
    assert r.status_code == status, r.text
    assert r.json()["detail"].replace(str(home.root), "HOME").startswith(detail)


def _run(client, home, kind: str, params: dict) -> tuple[str, dict]:
    """Submit a `kind` job, run it with one worker pass (a runner child process): its id and
    metrics, checked done."""
    r = client.post("/v1/jobs", json={"kind": kind, "params": params})
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    assert Worker(home, kind, poll=0.2).run(once=True) == 1
    body = client.get(f"/v1/jobs/{job_id}", params={"tail": 30}).json()
    assert body["status"] == "done", (body.get("error"), body["log"])
    return job_id, body["metrics"]


@pytest.mark.subprocess  # a real worker runs each job in its own runner process
def test_every_kind_runs_a_job_with_an_inline_spec(client, home, tiny_bert_dir):
    encoder = f"hf:{tiny_bert_dir}"
    common = {"encoder": encoder, "task_spec": FILMS_SPEC, "progress": False}

    _, extracted = _run(client, home, "extract", common)
    sets = {fs["split"]: fs for fs in extracted["featuresets"]}
    assert set(sets) == {"train", "dev"} and {fs["task"] for fs in sets.values()} == {"films"}
    assert (sets["train"]["num_examples"], sets["dev"]["num_examples"]) == (40, 16)

    train_id, trained = _run(client, home, "train", common | {"head": "linear", "epochs": 2})
    assert set(trained) == {"train", "select", "dev"} and 0 <= trained["dev"]["accuracy"] <= 1
    config = json.loads((home.root / "runs" / train_id / "config.json").read_text())
    assert config["featureset"]["id"] == sets["train"]["id"]  # the features the job extracted
    assert config["task"]["name"] == "films" and not config["task"]["registered"]

    fire_id, tuned = _run(client, home, "finetune", common | {"epochs": 1, "batch_size": 8})
    assert set(tuned) == {"train", "select", "dev"} and 0 <= tuned["dev"]["accuracy"] <= 1
    fire = json.loads((home.root / "runs" / fire_id / "config.json").read_text())
    assert fire["num_examples"] == {"train": 30, "select": 10, "dev": 16}  # a slice selects

    compare_id, compared = _run(
        client, home, "compare", common | {"heads": ["linear"], "budget": "quick"}
    )
    results = json.loads((home.root / "runs" / compare_id / "results.json").read_text())
    assert compared["verdicts"] == {"films": results["tasks"]["films"]["verdict"]["text"]}
