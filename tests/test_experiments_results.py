"""experiments/results.py: docs/results.md composed from what `snowfire compare` and `snowfire
analyze` wrote (here: a small compare on the demo sample and the mi analysis on its store)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))


def test_the_page_is_what_compare_and_analyze_wrote(tiny_bert_dir, data_dir, tmp_path):
    import results  # experiments/ is on sys.path above

    from snowfire.cli.main import main as snowfire

    work, docs = tmp_path / "work", tmp_path / "docs"
    docs.mkdir()
    encoder, data = f"hf:{tiny_bert_dir}", str(data_dir)
    assert (
        snowfire(
            [
                "compare",
                "--encoder",
                encoder,
                "--tasks",
                "sst2,stsb",
                "--data",
                data,
                "--out",
                str(work / "compare"),
                "--heads",
                "linear",
                "--quiet",
            ]
        )
        == 0
    )
    assert (
        snowfire(
            [
                "analyze",
                "mi",
                "--encoder",
                encoder,
                "--data",
                data,
                "--tasks",
                "sst2,stsb",
                "--out",
                str(work / "analyze"),
                "--store",
                str(work / "compare" / "store"),
            ]
        )
        == 0
    )
    argv = [
        "--data",
        data,
        "--work",
        str(work),
        "--encoder",
        encoder,
        "--seeds",
        "1",
        "--analyses",
        "mi",
        "--docs",
        str(docs),
        "--compose-only",
        "--note",
        "Made on a shared machine.",
        "--append",
        str(work / "earlier.md"),
    ]
    (work / "earlier.md").write_text("## Earlier page\n\nkept as it was\n")
    assert results.main(argv) == 0
    assert (
        "No invocation of this script is recorded in WORK/ledger.jsonl."
        in (docs / "results.md").read_text()
    )  # --compose-only ran nothing: the page says it knows no cost
    with results.invocation(work, ["--tasks", "stsb"]):  # what a run of the commands records
        pass
    assert results.main(argv) == 0
    page = (docs / "results.md").read_text()

    # the commands that make it, compare's table and the analysis, under one title
    assert page.startswith(f"# Results: ❄️ and 🔥 with {encoder}")
    assert re.search(
        r"Its cost over 1 invocation\(s\): 0\.00 h of wall time, 0\.\d\d CPU-hours, on ", page
    )
    assert f"snowfire compare --encoder {encoder} --tasks all" in page
    assert f"snowfire analyze mi --encoder {encoder}" in page
    assert "\nMade on a shared machine.\n" in page  # --note, under the commands
    # the commands name the data and work directories by placeholder, never this machine's paths
    assert str(work) not in page and data not in page and str(docs) not in page
    assert "--data DATA --work WORK" in page and "--data DATA --out WORK/compare " in page
    assert "--out WORK/analyze --store WORK/compare/store" in page
    table = (work / "compare" / "table.md").read_text()
    ours = next(line for line in table.splitlines() if "(ours) | ❄️ | dev" in line)
    assert ours in page
    summary = json.loads((work / "compare" / "results.json").read_text())["tasks"]
    assert f"{100 * summary['stsb']['snow']['dev'][0]:.1f}" in ours
    mi = (work / "analyze" / "mi.md").read_text().splitlines()
    assert all(line in page for line in mi if line.startswith("| "))
    # every plot it links was copied beside it, and is the one the command drew
    links = re.findall(r"\]\((results-[\w.-]+\.png)\)", page)
    assert sorted(links) == [
        "results-curves-sst2.png",
        "results-curves-stsb.png",
        "results-layer_weights.png",
        "results-mi.png",
        "results-table.png",
    ]
    assert (docs / "results-mi.png").read_bytes() == (work / "analyze" / "mi.png").read_bytes()
    curves = (work / "compare" / "curves-stsb.png").read_bytes()  # the verdict's learning curves
    assert (docs / "results-curves-stsb.png").read_bytes() == curves
    assert page.count("\n# ") == 0 and "## ❄️ or 🔥" in page  # one title, sections below it
    assert page.endswith("## Earlier page\n\nkept as it was\n")  # --append: last, as it is
    assert "--append WORK/earlier.md" in page


def test_the_commands_carry_the_budget_and_the_fire_runs(tmp_path):
    import argparse

    import results

    (tmp_path / "compare" / "fire" / "sst2" / "seed0").mkdir(parents=True)
    args = argparse.Namespace(
        encoder="minilm",
        data="D",
        work=str(tmp_path),
        seeds=3,
        analysis_seeds=2,
        fire_seeds=1,
        budget="quick",
        analyses=["probes", "pairs"],
        tasks="all",
        arms="",
        intermediate="",
        trials=None,
        race=True,
        keep_remade_starts=False,
    )
    compare, probes, pairs = results.commands(args)
    assert compare[:2] == ["compare", "--encoder"] and compare[-6:] == [
        "--seeds",
        "3",
        "--fire-seeds",
        "1",
        "--budget",
        "quick",
    ]
    run = tmp_path / "compare" / "fire" / "sst2" / "seed0"
    assert probes[-4:] == ["--epochs", "3", "--finetuned", f"sst2={run}"]
    assert pairs[-6:] == ["--seeds", "2", "--epochs", "3", "--max-train-examples", "2000"]
    args.budget = "full"
    assert "--max-train-examples" not in results.commands(args)[2]
    args.tasks, args.arms, args.intermediate, args.fire_seeds = "stsb", "lora,seq", "mnli", None
    compare = results.commands(args)[0]
    assert compare[compare.index("--tasks") + 1] == "stsb" and "--fire-seeds" not in compare
    assert compare[-4:] == ["--arms", "lora,seq", "--intermediate", "mnli"]
    assert "--trials" not in compare and "--no-race" not in compare
    args.keep_remade_starts = True  # seq runs finished on another machine are kept
    assert results.commands(args)[0][-5:] == [
        "--arms",
        "lora,seq",
        "--intermediate",
        "mnli",
        "--keep-remade-starts",
    ]
    args.keep_remade_starts = False
    args.trials, args.race, args.budget = 4, False, "2h"  # tuned, raced or not, a time budget
    compare = results.commands(args)[0]
    assert compare[compare.index("--budget") :][:5] == [
        "--budget",
        "2h",
        "--trials",
        "4",
        "--no-race",
    ]
