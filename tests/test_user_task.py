"""A user's own task through every command: a registered task re-described as a user spec gives
the same feature keys, the same trained head and the same metrics; a bad spec or row is refused
with nothing written; a new labelled set goes through task check, compare, a compare job over
REST and predict; an edited file's old features are never reused."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from snowfire.cache import Store
from snowfire.tasks import DEMO_DATA_DIR, split_source
from tests.helpers.tasks import FILMS_SPEC, write_films

CONLL_TAGS = ["B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER", "O"]


def _head_of(src: Path, dst: Path, lines: int) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("".join(src.read_text(encoding="utf-8").splitlines(keepends=True)[:lines]))
    return dst


def _weights(run: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(run / "weights.safetensors"))


def _same_run(a: Path, b: Path) -> None:
    import torch

    wa, wb = _weights(a), _weights(b)
    assert sorted(wa) == sorted(wb)
    for name in wa:
        assert torch.equal(wa[name], wb[name]), name
    ours, mine = (json.loads((run / "metrics.json").read_text()) for run in (a, b))
    assert ours == _shared(ours, mine)


def _shared(ours: dict, mine: dict) -> dict:
    """The user task's metrics that the registered task reports too (a user classification
    task adds macro_f1)."""
    return {split: {k: mine[split][k] for k in values} for split, values in ours.items()}


def _keys(store: Store, task: str, split: str, source: dict, pair_encoding="joint") -> list:
    found = [
        fs
        for fs in store.list_featuresets()
        if fs.task == task
        and fs.split == split
        and fs.manifest["source"].get("sha256") == source["sha256"]
    ]
    assert len(found) == 1
    return store.featureset_keys(found[0].id)


def test_sst2_from_its_tsv_is_the_registered_task(tiny_bert_dir, tmp_path):
    """The demo sample's SST-2 rows read as a user's TSV spec: same keys, head, metrics."""
    from snowfire.extractor import ExtractConfig, run_extract
    from snowfire.heads import TrainConfig, train

    data = tmp_path / "data"
    _head_of(DEMO_DATA_DIR / "sst2" / "train.tsv", data / "sst2" / "train.tsv", 81)
    _head_of(DEMO_DATA_DIR / "sst2" / "dev.tsv", data / "sst2" / "dev.tsv", 41)
    spec = tmp_path / "mine.json"
    spec.write_text(
        json.dumps(
            {
                "name": "sst2-mine",
                "kind": "classification",
                "format": "tsv",
                "columns": {"text": "sentence", "label": "label"},
                "splits": {"train": "data/sst2/train.tsv", "dev": "data/sst2/dev.tsv"},
            }
        )
    )
    store, encoder = tmp_path / "store", f"hf:{tiny_bert_dir}"
    common = {"encoder": encoder, "store": str(store), "progress": False}
    run_extract(ExtractConfig(task="sst2", data=str(data), **common))
    run_extract(ExtractConfig(task_spec=str(spec), **common))
    s = Store(store)
    for split in ("train", "dev"):
        mine = split_source(_resolve(spec), None, split)
        ours = split_source("sst2", data, split)
        assert mine["sha256"] == ours["sha256"] and mine["read"] and "read" not in ours
        assert _keys(s, "sst2-mine", split, mine) == _keys(s, "sst2", split, ours)
    fit = {
        "store": str(store),
        "encoder": encoder,
        "head": "linear",
        "epochs": 2,
        "progress": False,
    }
    a = train(TrainConfig(task="sst2", data=str(data), out=str(tmp_path / "a"), **fit))
    b = train(TrainConfig(task_spec=str(spec), out=str(tmp_path / "b"), **fit))
    assert a == _shared(a, b) and set(a) == {"train", "select", "dev"} and "macro_f1" in b["dev"]
    _same_run(tmp_path / "a", tmp_path / "b")
    recorded = json.loads((tmp_path / "b" / "config.json").read_text())["task"]
    assert recorded["name"] == "sst2-mine" and recorded["labels"] == ["0", "1"]
    assert recorded["splits"]["dev"]["sha256"] == split_source("sst2", data, "dev")["sha256"]


def _resolve(spec):
    from snowfire.tasks import resolve_task

    return resolve_task(str(spec))


def _conll(path: Path, sentences: list[list[tuple[str, str]]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["-DOCSTART- -X- O O", ""]
    for sentence in sentences:
        lines += [f"{w} NN I-NP {t}" for w, t in sentence] + [""]
    path.write_text("\n".join(lines))


def test_conll2003_from_its_columns_is_the_registered_task(tiny_bert_dir, tmp_path):
    from snowfire.extractor import ExtractConfig, run_extract
    from snowfire.heads import TrainConfig, train

    rng = random.Random(1)
    words = "man woman dog cat people park street car".split()

    def sentences(n):
        out = []
        for _ in range(n):
            tags = [rng.choice(CONLL_TAGS) for _ in range(rng.randint(2, 6))]
            out.append([(rng.choice(words), t) for t in tags])
        return out

    data = tmp_path / "data"
    _conll(
        data / "conll2003" / "eng.train",
        sentences(30) + [[(w, t) for w, t in zip(words + words[:1], CONLL_TAGS, strict=True)]],
    )
    _conll(data / "conll2003" / "eng.testa", sentences(12))
    spec = tmp_path / "ner.yaml"
    spec.write_text(
        "name: ner\nkind: tagging\nformat: conll\ncolumns: {tokens: 0, tags: 3}\n"
        f"splits:\n  train: {data}/conll2003/eng.train\n  dev: {data}/conll2003/eng.testa\n"
    )
    store, encoder = tmp_path / "store", f"hf:{tiny_bert_dir}"
    common = {"encoder": encoder, "store": str(store), "progress": False}
    run_extract(ExtractConfig(task="conll2003", data=str(data), **common))
    run_extract(ExtractConfig(task_spec=str(spec), **common))
    s = Store(store)
    for split in ("train", "dev"):
        mine = split_source(_resolve(spec), None, split)
        ours = split_source("conll2003", data, split)
        assert _keys(s, "ner", split, mine) == _keys(s, "conll2003", split, ours)
    assert _resolve(spec).labels == CONLL_TAGS  # inferred from train: the registered tag set
    fit = {"store": str(store), "encoder": encoder, "head": "crf", "epochs": 2, "progress": False}
    a = train(TrainConfig(task="conll2003", data=str(data), out=str(tmp_path / "a"), **fit))
    b = train(TrainConfig(task_spec=str(spec), out=str(tmp_path / "b"), **fit))
    assert a == b and set(a["dev"]) == {"span_f1", "precision", "recall"}
    _same_run(tmp_path / "a", tmp_path / "b")


def _bad_dev(tmp_path: Path) -> Path:
    spec = write_films(tmp_path / "t")
    dev = tmp_path / "t" / "films" / "dev.csv"
    dev.write_text(dev.read_text() + '"good film, again",meh\n')
    return spec


def test_a_bad_row_is_refused_with_nothing_written(tiny_bert_dir, tmp_path):
    from snowfire.compare import CompareConfig, run_compare
    from snowfire.extractor import ExtractConfig, run_extract
    from snowfire.finetune import FinetuneConfig
    from snowfire.finetune import train as finetune
    from snowfire.heads import TrainConfig, train

    spec = str(_bad_dev(tmp_path))
    encoder, store, out = f"hf:{tiny_bert_dir}", tmp_path / "store", tmp_path / "out"
    line = 18  # the header, 16 rows, then the bad one
    message = f"dev.csv line {line}: column 'verdict': label 'meh' never seen in the train split"
    runs = [
        lambda: run_extract(ExtractConfig(encoder=encoder, store=str(store), task_spec=spec)),
        lambda: train(
            TrainConfig(
                store=str(store), encoder=encoder, head="linear", out=str(out), task_spec=spec
            )
        ),
        lambda: finetune(FinetuneConfig(encoder=encoder, out=str(out), task_spec=spec)),
        lambda: run_compare(CompareConfig(encoder=encoder, out=str(out), task_spec=[spec])),
    ]
    for run in runs:
        with pytest.raises(ValueError, match=message):
            run()
        assert not store.exists() and not out.exists()


def test_a_bad_spec_is_refused_by_each_config(tmp_path):
    from snowfire.compare import CompareConfig
    from snowfire.extractor import ExtractConfig
    from snowfire.finetune import FinetuneConfig
    from snowfire.heads import TrainConfig

    spec = write_films(tmp_path)
    spec.write_text(spec.read_text().replace("kind: classification", "kind: ranking"))
    field = "field 'kind': expected one of classification, regression, tagging, got 'ranking'"
    for make, owner in (
        (lambda: ExtractConfig(encoder="minilm", store="s", task_spec=str(spec)), "ExtractConfig"),
        (
            lambda: TrainConfig(
                store="s", encoder="minilm", head="linear", out="o", task_spec=str(spec)
            ),
            "TrainConfig",
        ),
        (lambda: FinetuneConfig(encoder="minilm", out="o", task_spec=str(spec)), "FinetuneConfig"),
    ):
        with pytest.raises(ValueError, match=f"{owner}.task_spec: task spec {spec}: {field}"):
            make()
    with pytest.raises(ValueError, match=f"CompareConfig.task_spec: task spec {spec}: {field}"):
        CompareConfig(encoder="minilm", out="o", task_spec=[str(spec)])
    with pytest.raises(ValueError, match="TrainConfig: give either 'task' .* not both"):
        TrainConfig(
            store="s",
            encoder="minilm",
            head="linear",
            out="o",
            task="sst2",
            data="d",
            task_spec=str(spec),
        )
    with pytest.raises(
        ValueError,
        match="TrainConfig.head: head 'esim' reads pair texts but the task has single texts",
    ):
        TrainConfig(
            store="s",
            encoder="minilm",
            head="esim",
            out="o",
            task_spec=str(write_films(tmp_path / "ok")),
        )


def test_an_edited_file_is_extracted_again(tiny_bert_dir, tmp_path):
    """A feature set is found again only for the file it was made from (and read the same
    way): after an edit, train refuses the old one and compare extracts the new one."""
    from snowfire.cache import FeatureSetNotFoundError
    from snowfire.extractor import ExtractConfig, run_extract
    from snowfire.heads import TrainConfig, train

    spec = write_films(tmp_path)
    store, encoder = tmp_path / "store", f"hf:{tiny_bert_dir}"
    (old,) = [
        i
        for i in run_extract(
            ExtractConfig(
                encoder=encoder,
                store=str(store),
                task_spec=str(spec),
                split=["dev"],
                progress=False,
            )
        )
    ]
    dev = tmp_path / "films" / "dev.csv"
    dev.write_text(dev.read_text().replace(",pos\n", ",neg\n", 1) + '"funny film, the story",pos\n')
    fit = {
        "store": str(store),
        "encoder": encoder,
        "head": "linear",
        "epochs": 1,
        "progress": False,
        "task_spec": str(spec),
    }
    run_extract(
        ExtractConfig(
            encoder=encoder, store=str(store), task_spec=str(spec), split=["train"], progress=False
        )
    )
    with pytest.raises(FeatureSetNotFoundError, match="split 'dev' from the file with sha256"):
        train(TrainConfig(out=str(tmp_path / "r1"), **fit))
    (new,) = run_extract(
        ExtractConfig(
            encoder=encoder, store=str(store), task_spec=str(spec), split=["dev"], progress=False
        )
    )
    assert new.id != old.id and new.num_examples == old.num_examples + 1
    assert train(TrainConfig(out=str(tmp_path / "r2"), **fit))["dev"]
    # the same file read through other columns is other texts: not found either
    source = split_source(_resolve(spec), None, "dev")
    other = dict(json.loads(source["read"]), columns={"text": "verdict", "label": "verdict"})
    unread = f"task 'films', split 'dev' from the file with sha256 {source['sha256'][:12]}"
    with pytest.raises(FeatureSetNotFoundError, match=re.escape(unread)):
        Store(store).find_featureset(
            encoder=encoder,
            task="films",
            split="dev",
            sha256=source["sha256"],
            read=json.dumps(other),
        )


def test_own_task_end_to_end_check_compare_predict(tiny_bert_dir, tmp_path, capsys):
    """A new labelled CSV: task check, compare --budget quick (❄️, 🔥, no training, verdict),
    then predict on a text file with the saved ❄️ run."""
    from snowfire.cli import main

    spec = write_films(tmp_path)
    assert main(["task", "check", str(spec), "--encoder", f"hf:{tiny_bert_dir}"]) == 0
    assert "train: 40 examples" in capsys.readouterr().out
    out = tmp_path / "cmp"
    argv = [
        "compare",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--task-spec",
        str(spec),
        "--out",
        str(out),
        "--budget",
        "quick",
        "--quiet",
    ]
    assert main(argv) == 0
    table = (out / "table.md").read_text()
    results = json.loads((out / "results.json").read_text())
    lines = table.splitlines()
    assert lines[2] == "| encoder | mode | split | films (accuracy) |"
    assert "(paper)" not in table  # the paper's rows are for the paper's tasks only
    assert "paper's rows" not in table and "data directory" not in table  # nor notes on them
    assert "pairs encoded" not in table  # one text per example: no pair encoding to note
    summary = results["tasks"]["films"]
    assert list(summary["heads"]) == ["bcn", "linear"]  # the paper's one-text head, the smallest
    assert summary["baseline"]["method"] == "majority label of the training split"
    assert summary["baseline"]["dev"] == 0.5  # 8 pos, 8 neg in dev; the majority of train
    assert any(line.startswith("| verdict | | dev | ") for line in lines)
    recorded = results["task_specs"]["films"]
    assert recorded["splits"]["train"]["path"] == str(tmp_path / "films" / "train.csv")
    assert len(recorded["splits"]["train"]["sha256"]) == 64
    run = Path(
        next(c["run"] for c in results["cells"] if c["mode"] == "snow" and c["head"] == "linear")
    )
    # predict the dev texts from a plain text file: what the run predicted for its dev split
    predicted_dev = [
        line.split("\t") for line in (run / "predictions" / "dev.tsv").read_text().splitlines()[1:]
    ]
    texts = tmp_path / "texts.txt"
    rows = (tmp_path / "films" / "dev.csv").read_text().splitlines()[1:]
    texts.write_text("".join(row.rsplit(",", 1)[0].strip('"') + "\n" for row in rows))
    (tmp_path / "films.yaml").unlink()  # the run directory alone is enough
    assert (
        main(
            ["predict", "--run", str(run), "--input", str(texts), "--out", str(tmp_path / "p.tsv")]
        )
        == 0
    )
    got = [line.split("\t")[2] for line in (tmp_path / "p.tsv").read_text().splitlines()[1:]]
    assert got == [p[2] for p in predicted_dev]


@pytest.mark.subprocess  # a real worker runs the job in its own runner process
def test_a_compare_job_on_an_inline_spec(tiny_bert_dir, tmp_path):
    from fastapi.testclient import TestClient

    from snowfire.api import Settings, create_app
    from snowfire.jobs import Home
    from snowfire.jobs.worker import Worker

    home = Home(tmp_path / "home")
    write_films(home.root / "tasks")  # HOME/tasks: the data directory a job's spec is relative to
    spec = FILMS_SPEC
    params = {
        "encoder": f"hf:{tiny_bert_dir}",
        "task_spec": spec,
        "heads": ["linear"],
        "budget": "quick",
        "progress": False,
    }
    with TestClient(create_app(settings=Settings(home=home.root))) as client:
        bad = {**spec, "splits": {"train": "/etc/passwd", "dev": "films/dev.csv"}}
        r = client.post(
            "/v1/jobs", json={"kind": "compare", "params": {**params, "task_spec": bad}}
        )
        assert r.status_code == 403 and "/etc/passwd" in r.json()["detail"]
        r = client.post("/v1/jobs", json={"kind": "compare", "params": params})
        assert r.status_code == 202, r.text
        job = r.json()
        stored = job["params"]["task_spec"][0]["splits"]
        assert stored["train"] == str(home.root / "tasks" / "films" / "train.csv")
        assert Worker(home, "compare", poll=0.2).run(once=True) == 1
        body = client.get(f"/v1/jobs/{job['id']}", params={"tail": 50}).json()
    assert body["status"] == "done", body.get("error")
    results = json.loads((home.root / "runs" / job["id"] / "results.json").read_text())
    assert body["metrics"]["verdicts"] == {"films": results["tasks"]["films"]["verdict"]["text"]}
    assert results["tasks"]["films"]["baseline"]["method"].startswith("majority label")


def test_compare_table_says_why_a_tagging_task_has_no_training_row(tmp_path, monkeypatch):
    """A tagging task (a user's, with the stsb benchmark beside it) has no no-training answer:
    the table shows "–" in the no-training row and names why in the per-task table, instead of
    leaving the row out (a reader would not know whether it was forgotten)."""
    from snowfire.compare import Cell, CompareConfig, Mode, report
    from snowfire.compare.report import summarise, table

    cost = {"seconds": 1.0, "epochs": 1, "params": 10, "examples_per_s": 3.0}
    monkeypatch.setattr(report, "_cost", lambda cell: cost)  # no run directories here
    judged = {
        "split": "dev",
        "verdict": "❄️ > 🔥",
        "text": "❄️ > 🔥",
        "metric": "span_f1",
        "delta": {"delta": -0.5, "low": -0.6, "high": -0.4},
        "restarts": {"snow": {"sd": None}, "fire": {"sd": None}},
    }
    monkeypatch.setattr(report, "judge", lambda *args, **kw: judged)  # nor predictions to weigh
    monkeypatch.setattr(report, "task_hours", lambda *args: {"wall_hours": 0.0, "cpu_hours": None})
    old = {"selection": "dev", "report": "dev", "honest": False}  # runs selected on dev
    monkeypatch.setattr(report, "cell_roles", lambda cells: old)
    words = [[("Kindle", "B-PROD"), ("from", "O"), ("Currys", "B-SHOP")]] * 3
    _conll(tmp_path / "p" / "train.txt", words)
    _conll(tmp_path / "p" / "dev.txt", words)
    spec = tmp_path / "products.yaml"
    spec.write_text(
        "name: products\nkind: tagging\nformat: conll\ncolumns: {tokens: 0, tags: 3}\n"
        "splits: {train: p/train.txt, dev: p/dev.txt}\n"
    )
    cfg = CompareConfig(encoder="minilm", out=str(tmp_path / "o"), task_spec=[str(spec)])
    cells = [
        Cell(Mode.SNOW, "products", head, 0, f"unused/{head}", {"dev": {"span_f1": score}})
        for head, score in (("bilstm-crf", 0.5), ("crf", 0.75))
    ] + [Cell(Mode.FIRE, "products", None, 0, "unused/fire", {"dev": {"span_f1": 0.25}})]
    summary = summarise(cfg, cells, {})
    lines = table(cfg, summary, {}).splitlines()
    assert "| minilm (ours) | ❄️ | dev | 75.0 |" in lines
    assert "| minilm (ours) | 🔥 | dev | 25.0 |" in lines
    assert "| minilm (ours) | no training | dev | – |" in lines
    assert (
        '| products | span_f1 | no training: none for tagging: every token "O" scores span F1 0, '
        "which says nothing | – | – | – | – | – | – |"
    ) in lines
