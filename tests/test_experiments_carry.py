"""experiments/carry.py: a results WORK carried to another machine as a small archive with no
weights and no data. A real comparison (tiny BERT; a classification task and a tagging one,
LP-FT among the arms) is packed, its WORK taken away, and unpacked from the data alone: every
carried file comes back byte for byte, the archive holds no gold answer, word or weight, and
the same comparison run again trains nothing. Data that differ, another WORK, and a clash
with what WORK holds are refused before anything is written."""

from __future__ import annotations

import json
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

from snowfire.cli.main import main as run_cli
from tests.helpers.tasks import write_conll, write_sst2

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
sys.path.insert(0, str(EXPERIMENTS))

pytestmark = pytest.mark.slow  # two tasks' tiny comparisons


def _compare(tiny_bert_dir, data: Path, work: Path) -> dict:
    argv = ["compare", "--encoder", f"hf:{tiny_bert_dir}", "--tasks", "sst2,conll2003"]
    argv += ["--data", str(data), "--out", str(work / "compare"), "--budget", "quick"]
    argv += ["--seeds", "1", "--arms", "snow,fire,lpft", "--store", str(work.parent / "store")]
    assert run_cli([*argv, "--quiet"]) == 0
    return json.loads((work / "compare" / "results.json").read_text())


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_work_carried_away_comes_back_from_the_data_and_trains_nothing(tiny_bert_dir, tmp_path):
    import carry

    data = write_sst2(tmp_path / "data", sizes=(("train", 48), ("dev", 16)))
    write_conll(data, sizes=(("train", 40), ("dev", 12)))  # no test: a slice of train selects
    work = tmp_path / "work"
    first = _compare(tiny_bert_dir, data, work)
    unfinished = work / "compare" / "fire" / "sst2" / "seed9"  # a killed attempt: not carried
    unfinished.mkdir(parents=True)
    (unfinished / "config.json").write_text("{}")
    archive = tmp_path / "carried.tar.xz"
    manifest = carry.pack(work, data, archive)

    kept = manifest["files"]
    assert "compare/load.jsonl" in kept and "compare/results.json" in kept
    assert not any(rel.startswith("compare/fire/sst2/seed9") for rel in kept)
    assert manifest["left_behind"]["a run not finished"] == 1
    assert manifest["left_behind"]["not a record"] > 0  # weights, plots
    predictions = {rel: e for rel, e in kept.items() if "split" in e}
    tagging = [rel for rel in predictions if "/conll2003/" in rel]
    assert tagging and len(predictions) > len(tagging)
    assert any("/selection/epoch-" in rel for rel in predictions)  # the race's files too
    assert {e["split"] for e in predictions.values()} >= {"train", "dev"}
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        blob = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    assert not any(n.endswith((".pt", ".bin", ".png")) or "/encoder/" in n for n in names)
    weights = [n for n in names if n.endswith(".safetensors")]
    probes = {"compare/snow/sst2/probe-cls/", "compare/snow/conll2003/probe-word/"}
    assert {next(p for p in probes if p in n) for n in weights} == probes  # LP-FT's starts, KBs
    # no data: no sentence of either task, no gold column of a prediction file
    sentence = (data / "sst2" / "dev.tsv").read_text().splitlines()[1].split("\t")[0]
    assert sentence.encode() not in blob and b"index\tgold\tpredicted" not in blob
    conll_line = next(x for x in (data / "conll2003" / "eng.testa").read_text().splitlines()[2:])
    assert conll_line.split()[0].encode() + b" " not in blob

    before = _files(work)
    shutil.rmtree(work)  # the machine goes away
    assert carry.unpack(archive, work, data)["written"] == len(kept)
    after = _files(work)
    assert {rel: after[rel] for rel in kept} == {rel: before[rel] for rel in kept}
    assert set(after) == set(kept)

    got = carry.unpack(archive, work, data)  # again over what is there: nothing differs
    assert got["written"] == 0 and got["present"] == len(kept)

    load = (work / "compare" / "load.jsonl").read_text()
    again = _compare(tiny_bert_dir, data, work)  # the next machine: every run read back
    assert (work / "compare" / "load.jsonl").read_text() == load  # nothing trained or timed
    assert again["tasks"]["conll2003"]["verdict"] == first["tasks"]["conll2003"]["verdict"]
    assert again["tasks"]["sst2"]["verdict"] == first["tasks"]["sst2"]["verdict"]

    # data that differ from the packed data: refused by name, nothing written
    changed = tmp_path / "changed"
    shutil.copytree(data, changed)
    dev = changed / "sst2" / "dev.tsv"
    rows = dev.read_text().splitlines()
    text, label = rows[1].split("\t")
    rows[1] = f"{text}\t{1 - int(label)}"
    dev.write_text("\n".join(rows) + "\n")
    fresh = tmp_path / "elsewhere"
    with pytest.raises(ValueError, match="packed from WORK .*unpack it into the WORK it came"):
        carry.unpack(archive, fresh, data)
    shutil.rmtree(work)
    with pytest.raises(ValueError, match=r"predictions/dev\.tsv: restored from .*SHA-256"):
        carry.unpack(archive, work, changed)
    assert not work.exists()


def test_the_command_line_says_what_it_packed_and_what_stayed(tmp_path, capsys):
    import carry

    work = tmp_path / "work"
    (work / "compare").mkdir(parents=True)
    (work / "compare" / "results.json").write_text("{}")
    (work / "compare" / "table.png").write_bytes(b"\x89PNG")
    archive = tmp_path / "a.tar.xz"
    assert carry.main(["pack", "--work", str(work), "--data", "d", "--to", str(archive)]) == 0
    out = capsys.readouterr().out
    assert "packed 1 files" in out and "1 files: not a record" in out
    (work / "compare" / "results.json").write_text('{"other": 1}')
    argv = ["unpack", "--work", str(work), "--data", "d", "--from", str(archive)]
    assert carry.main(argv) == 1
    assert "results.json: already in WORK and differs" in capsys.readouterr().err


def test_results_py_carries_its_work_to_a_machine_that_starts_empty(
    tiny_bert_dir, tmp_path, capsys
):
    import results

    data = write_sst2(tmp_path / "data", sizes=(("train", 48), ("dev", 16)))
    work, archive = tmp_path / "work", tmp_path / "carried.tar.xz"
    argv = ["--data", str(data), "--work", str(work), "--encoder", f"hf:{tiny_bert_dir}"]
    argv += ["--tasks", "sst2", "--budget", "quick", "--seeds", "1", "--arms", "snow,fire"]
    argv += ["--analyses", "", "--docs", str(tmp_path), "--carry", str(archive)]
    assert results.main(argv) == 0
    assert "files of finished runs packed into" in capsys.readouterr().out
    load = (work / "compare" / "load.jsonl").read_text()
    shutil.rmtree(work)  # the next machine: WORK empty, the archive beside the code
    assert results.main(argv) == 0
    assert "files of finished runs unpacked from" in capsys.readouterr().out
    assert (work / "compare" / "load.jsonl").read_text() == load  # nothing trained again
    ledger = [json.loads(x) for x in (work / "ledger.jsonl").read_text().splitlines()]
    assert [r["event"] for r in ledger].count("start") == 2  # both machines' invocations
    assert results.main(argv) == 0  # WORK holds runs: the archive is not unpacked over them
    assert "is not unpacked" in capsys.readouterr().out


def test_a_probe_goes_with_its_finished_lpft_run_wherever_it_was_named_from(tmp_path):
    import carry

    work = tmp_path / "work"
    probe = work / "compare" / "snow" / "sst2" / "probe-cls" / "trial1" / "seed0"
    other = work / "compare" / "snow" / "sst2" / "probe-cls" / "trial11" / "seed0"
    lpft = work / "compare" / "lpft" / "sst2" / "trial1" / "seed0"
    for run in (probe, other, lpft):
        run.mkdir(parents=True)
        (run / "metrics.json").write_text("{}")
    (probe / "weights.safetensors").write_bytes(b"w")
    (other / "weights.safetensors").write_bytes(b"w")
    (probe / "config.json").write_text("{}")
    (other / "config.json").write_text("{}")
    # named relative to where the run started (WORK given as a relative path)
    init = "work/compare/snow/sst2/probe-cls/trial1/seed0"
    (lpft / "config.json").write_text(json.dumps({"finetune": {"init_head": init}}))
    assert carry._skipped(probe / "weights.safetensors", work) is None
    assert carry._skipped(other / "weights.safetensors", work) == "a run a later stage starts from"
    (lpft / "metrics.json").unlink()  # LP-FT not finished: its probe trains again with it
    assert carry._skipped(probe / "config.json", work) == "a run a later stage starts from"


def test_a_paused_run_before_its_config_and_a_stray_table_stay_behind(tmp_path):
    import carry

    work = tmp_path / "work"
    paused = work / "compare" / "snow" / "sick-r" / "trial0" / "seed0"  # ❄️: config at its end
    (paused / "selection").mkdir(parents=True)
    (paused / "checkpoint.pt").write_bytes(b"c")
    (paused / "paused.json").write_text('{"epoch": 7}')
    table = paused / "selection" / "epoch-1.tsv"
    table.write_text("index\tgold\tpredicted\n0\t4.5\t4.1\n")  # gold: data, never carried
    stray = work / "compare" / "answers.tsv"
    stray.write_text("index\tgold\tpredicted\n0\t1\t1\n")
    assert carry._skipped(table, work) == "a run not finished"
    assert carry._skipped(stray, work) == "a table of no finished run's predictions"
    (work / "compare" / "results.json").write_text("{}")
    assert carry._skipped(work / "compare" / "results.json", work) is None
    # with the end a stop there gives (rundir/pause.py) it goes, and its tables are stripped
    # as the task its end names (no RUN/config.json until a ❄️ run ends)
    (paused / "at-pause").mkdir()
    (paused / "at-pause" / "config.json").write_text('{"train": {"task": "stsb"}}')
    (paused / "at-pause" / "metrics.json").write_text('{"dev": {"pearson": 0.5}}')
    assert carry._skipped(table, work) is None
    assert not (paused / "config.json").exists() and carry._task_of(paused) == "stsb"


def test_a_paused_fire_run_is_carried_with_its_end_and_ended_from_it(tiny_bert_dir, tmp_path):
    """A 🔥 run paused at a rung goes with the end a stop there gives (RUN/at-pause/), no
    weights and no gold; on the next machine a race that stops it there ends it from the
    archive alone, as a run stopped there on the first machine ended."""
    from dataclasses import replace

    import carry

    from snowfire.finetune import train
    from tests.helpers.tasks import finetune_config

    data = write_sst2(tmp_path / "data", sizes=(("train", 48), ("dev", 16)))
    work = tmp_path / "work"
    cfg = finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, work / "fire" / "seed0", epochs=3)
    stopped = train(replace(cfg, out=str(tmp_path / "stopped"), stop_at=1))
    assert train(replace(cfg, pause_at=1)) == {}
    kept = carry.pack(work, data, tmp_path / "carried.tar.xz")["files"]
    run = "fire/seed0/"
    assert {"paused.json", "log.jsonl", "config.json", "at-pause/metrics.json"} <= {
        rel.removeprefix(run) for rel in kept
    }
    assert kept[f"{run}at-pause/predictions/dev.tsv"]["split"] == "dev"  # rows stripped
    assert not any(rel.endswith(".pt") for rel in kept)
    shutil.rmtree(work)  # the machine goes away
    carry.unpack(tmp_path / "carried.tar.xz", work, data)
    assert train(replace(cfg, stop_at=1)) == stopped
    for split in ("dev", "select"):
        mine = Path(cfg.out) / "predictions" / f"{split}.tsv"
        theirs = tmp_path / "stopped" / "predictions" / f"{split}.tsv"
        assert mine.read_text() == theirs.read_text()
    assert not (work / "fire" / "seed0" / "at-pause").exists()
