"""`snowfire compare` races by default (compare/racing.py), end to end on the tiny BERT and a
tiny SST-2 (a slice of train selects, dev reports): results.json and table.md carry the race,
`replay` of the finished runs gives its decisions exactly, and the same comparison with
--no-race replays to the same decisions (a paused run continues exactly as one that never
paused, so the rung's predictions are the exhaustive run's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from snowfire.cli.main import main as run_cli
from snowfire.compare import Cell, replay
from tests.helpers.tasks import write_sst2

pytestmark = pytest.mark.slow  # six tiny runs


def _compare(tiny_bert_dir, data, out, *more):
    argv = ["compare", "--encoder", f"hf:{tiny_bert_dir}", "--tasks", "sst2", "--data", str(data)]
    argv += ["--out", str(out), "--budget", "quick", "--seeds", "1", "--heads", "linear"]
    argv += ["--arms", "snow,fire,bitfit", "--store", str(out.parent / "store"), *more]
    assert run_cli([*argv, "--quiet"]) == 0
    return json.loads((out / "results.json").read_text())


def _replay(results, **kw):
    cells = [Cell.from_json(c) for c in results["cells"]]
    return replay(cells, "accuracy", "classification", **kw)


def test_a_raced_compare_records_its_race_and_replays_to_it(tiny_bert_dir, tmp_path):
    data = write_sst2(tmp_path / "data", sizes=(("train", 48), ("dev", 16)))
    # one trial per arm: under today's rule every arm's leader trains to its cap, so the
    # earlier rule (an arm's leader stops when clearly behind) is what makes a stop here
    raced = _compare(tiny_bert_dir, data, tmp_path / "raced", "--race-stops-leaders")
    race = raced["tasks"]["sst2"]["race"]
    assert race["keep_leaders"] is False
    assert race["rungs"] == 2  # quick: 🔥's cap of 2 epochs races at 1, then the cap
    assert race["epochs"] == {"snow:linear": [1, 3], "fire": [1, 2], "bitfit": [1, 2]}
    assert race["sides"] == {"snow": "snow:linear", "fire": "fire"}
    assert {d["rung"] for d in race["decisions"]} == {1} and len(race["decisions"]) == 2
    assert sorted(race["finished"] + list(race["stopped"])) == ["bitfit", "fire", "snow:linear"]
    mine = {k: v for k, v in race.items() if k != "sides"}
    assert _replay(raced, keep_leaders=False) == mine  # the recorded files alone give it
    assert _replay(raced)["stopped"] == {}  # today's rule: every arm's leader kept
    assert race["stopped"], "the tiny SST-2's ❄️ head leads the 🔥 side clearly (fixed seeds)"
    for name, stop in race["stopped"].items():  # a stopped run ended at its rung, and says so
        run = next(c["run"] for c in raced["cells"] if c["mode"] == name.split(":")[0])
        config = json.loads((Path(run) / "config.json").read_text())
        assert config["epochs_run"] == 1 and stop["text"].startswith("stopped at rung 1")
    for cell in raced["cells"]:  # trained in two pieces (paused at rung 1), each in its own
        cost = json.loads((Path(cell["run"]) / "config.json").read_text())["cost"]  # process
        assert cost["peak_rss_own"] is True and cost["peak_rss_mb"] > 100
    table = (tmp_path / "raced" / "table.md").read_text()
    assert "Raced (compare/racing.py" in table and "ran to the end:" in table
    assert "stopped at rung 1 (behind " in table
    # every attempt's host load (compare/hostload.py): 3 cells paused at rung 1, then each
    # stopped or run to its cap; a rerun reuses every run and times nothing
    lines = (tmp_path / "raced" / "load.jsonl").read_text().splitlines()
    attempts = [json.loads(line) for line in lines]
    assert len(attempts) == 6 and {a["run"] for a in attempts} == {c["run"] for c in raced["cells"]}
    assert all(a["cpu_seconds"] > 0 and a["cores"] >= 1 for a in attempts)
    shared = raced["tasks"]["sst2"]["hours"]["shared_cores"]
    assert shared["attempts"] == 6 and shared["not_recorded"] == []
    assert "attempts shared their cores" in table or "none of 6 attempts shared" in table
    again = _compare(tiny_bert_dir, data, tmp_path / "raced", "--race-stops-leaders")
    assert (tmp_path / "raced" / "load.jsonl").read_text().splitlines() == lines
    assert again["tasks"]["sst2"]["hours"]["shared_cores"]["attempts"] == 6

    exhaustive = _compare(tiny_bert_dir, data, tmp_path / "all", "--no-race")
    assert "race" not in exhaustive["tasks"]["sst2"]
    assert _replay(exhaustive, keep_leaders=False)["decisions"] == race["decisions"]
    # a margin no interval clears: nothing stops, every run goes to its cap
    assert _replay(exhaustive, margin=10.0, keep_leaders=False)["stopped"] == {}
