"""The docs cite what exists: every test a doc names (`tests/test_x.py`, `::name`, a fragment
`..._part_...`) is in the file it names, and no doc holds one machine's paths (the data and
work directories are placeholders: DATA, WORK, DIR)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from tests.helpers import REPO

DOCS = [REPO / "README.md", REPO / "benchmarks" / "README.md", *sorted(REPO.glob("docs/*.md"))]
#: a test file, optionally with ::name (and a parametrisation); or a later `::name` or
#: `..._fragment_...` in the same line, which belongs to the last file named before it
_CITE = re.compile(
    r"(?P<file>tests/[\w/]+\.py)(?:::(?P<name>\w+))?"
    r"|`::(?P<more>\w+)(?:\[[^\]`]*\])?`"
    r"|`\.\.\.(?P<part>_\w+_)\.\.\.`"
)
#: absolute paths of one machine: the checkout's parents, temporary and home directories
_MACHINE_PATH = re.compile(r"(?<![\w.~$])/(?:work|tmp|root|home|Users|mnt)/\S*")


def defined_names(path: Path) -> set[str]:
    """The names of the functions and classes defined in a test file (nested ones too)."""
    tree = ast.parse(path.read_text(), str(path))
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {node.name for node in ast.walk(tree) if isinstance(node, kinds)}


def missing_citations(text: str, root: Path = REPO) -> tuple[list[str], int]:
    """(what `text` cites that does not exist, as 'line N: what', and how many citations)."""
    missing, count = [], 0
    for number, line in enumerate(text.splitlines(), 1):
        current: Path | None = None
        for m in _CITE.finditer(line):
            count += 1
            if m["file"]:
                current = root / m["file"]
                if not current.is_file():
                    missing.append(f"line {number}: {m['file']} (no such file)")
                    current = None
                elif m["name"] and m["name"] not in defined_names(current):
                    missing.append(f"line {number}: {m['file']}::{m['name']}")
                continue
            if current is None:
                missing.append(f"line {number}: {m[0]} follows no test file")
                continue
            names = defined_names(current)
            if m["more"] and m["more"] not in names:
                missing.append(f"line {number}: {current.relative_to(root)}::{m['more']}")
            if m["part"] and not any(m["part"] in n for n in names):
                missing.append(f"line {number}: no test in {current.relative_to(root)} has {m[0]}")
    return missing, count


def test_every_test_a_doc_cites_exists():
    found, counts = [], {}
    for doc in DOCS:
        missing, counts[str(doc.relative_to(REPO))] = missing_citations(doc.read_text())
        found += [f"{doc.relative_to(REPO)}: {m}" for m in missing]
    assert found == []
    # the check reads the citations (a pattern that matched nothing would pass vacuously)
    assert counts["docs/reliability.md"] >= 40 and counts["docs/service.md"] >= 2, counts


def test_no_doc_holds_a_machines_paths():
    found = [
        f"{doc.relative_to(REPO)}:{number}: {m[0]}"
        for doc in DOCS
        for number, line in enumerate(doc.read_text().splitlines(), 1)
        for m in _MACHINE_PATH.finditer(line)
    ]
    assert found == []


def test_the_checks_see_what_is_wrong():
    real = "tests/test_runs.py::test_holding_a_run_removes_what_a_killed_writer_left"
    assert missing_citations(f"| a | {real} |") == ([], 1)
    text = "\n".join(
        [
            "| x | `tests/test_runs.py::test_no_such_test` |",
            "| x | `tests/test_no_such_file.py` |",
            "| x | `tests/test_jobs_queue.py` (`..._loses_its_lease_...`, `..._never_there_...`) |",
            f"| x | {real}, `::test_gone[bucket]` |",
            "| x | `::test_orphan` |",
        ]
    )
    missing, count = missing_citations(text)
    assert count == 8
    assert missing == [
        "line 1: tests/test_runs.py::test_no_such_test",
        "line 2: tests/test_no_such_file.py (no such file)",
        "line 3: no test in tests/test_jobs_queue.py has `..._never_there_...`",
        "line 4: tests/test_runs.py::test_gone",
        "line 5: `::test_orphan` follows no test file",
    ]
    paths = "--data /work/shared/data, /tmp/x, /root/.cache, ~/snowfire, HOME/runs, `/tmp` probe"
    assert [m[0] for m in _MACHINE_PATH.finditer(paths)] == [
        "/work/shared/data,",
        "/tmp/x,",
        "/root/.cache,",
    ]


# ---------------------------------------------------------------- names, paths, figures
#: the folders that install as snowfire.FOLDER (a doc writes snowfire.cache.Store, never
#: cache.Store: the bare name imports nothing)
PACKAGES = (
    "options",
    "tasks",
    "cache",
    "rundir",
    "extractor",
    "heads",
    "finetune",
    "compare",
    "jobs",
    "api",
    "cli",
)
_FILE_SUFFIXES = {"json", "jsonl", "py", "md", "txt", "hdf5", "tsv", "csv", "yaml", "yml", "png"}
#: a backticked dotted name (a call's arguments allowed): `snowfire.cache.Store`, `cache.X(...)`
_NAME = re.compile(r"`(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\([^`]*\))?`")
#: `from snowfire.X import a, b` in a code block (names up to the line's end or a comment)
_FROM = re.compile(r"^from (?P<module>[\w.]+) import \(?(?P<names>[^#\n]*)", re.M)
#: a path in the repository: a top-level folder, then a file with a suffix
_TOP = (*PACKAGES, "snowfire", "scripts", "docs", "benchmarks", "experiments", "docker", "tests")
_PATH = re.compile(
    rf"(?<![\w/.~$-])(?P<path>(?:{'|'.join(_TOP)})/[\w./-]*?\.(?:{'|'.join(_FILE_SUFFIXES)}))\b"
)
#: a path's placeholder part (RUN/, NAME.json, <split>.tsv): not one file to look for
_PLACEHOLDER = re.compile(r"[A-Z]{2,}[A-Z_]*(?:[./]|$)|[<{*]")
#: a markdown link to a local file: [text](target)
_LINK = re.compile(r"\]\((?P<target>(?!https?:|#)[^)\s#]+)")


def resolve(dotted: str) -> str | None:
    """Why `dotted` (snowfire.x.y.Name) names nothing, or None when it imports and resolves."""
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        module_name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(module_name)
        except ModuleNotFoundError as err:  # not a module this long: an attribute of a shorter
            if not module_name.startswith(err.name or ""):
                return f"{dotted}: importing {module_name} needs {err.name}"
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return f"{dotted}: {module_name} has no {'.'.join(parts[i:])}"
            obj = getattr(obj, attr)
        return None
    return f"{dotted}: no module {parts[0]}"


def wrong_names(text: str) -> list[str]:
    """Backticked names of the project that are bare (cache.X) or name nothing, and names a
    `from snowfire.X import ...` line imports that the package lacks."""
    found = []
    for m in _NAME.finditer(text):
        name = m["name"]
        top, last = name.split(".")[0], name.rsplit(".", 1)[1]
        if last in _FILE_SUFFIXES:
            continue  # a file name: options.json
        if top in PACKAGES:
            found.append(f"{name}: a bare package name (write snowfire.{name})")
        elif top == "snowfire" and (why := resolve(name)):
            found.append(why)
    for m in _FROM.finditer(text):
        module = m["module"]
        if module.split(".")[0] in PACKAGES:
            found.append(f"from {module} import: a bare package name (snowfire.{module})")
            continue
        if module.split(".")[0] != "snowfire":
            continue
        for name in re.findall(r"\b[A-Za-z_]\w*\b", m["names"].replace("\\", "")):
            if (why := resolve(f"{module}.{name}")) is not None:
                found.append(why)
    return found


def missing_paths(text: str, doc: Path, root: Path = REPO) -> list[str]:
    """Repository paths a doc names (`cache/keys.py`, benchmarks/results/load.json) and local
    link targets that do not exist; placeholders (RUN/, NAME.json, <split>) are not looked for."""
    found = []
    for m in _PATH.finditer(text):
        path = m["path"]
        if not _PLACEHOLDER.search(path) and not (root / path).exists():
            found.append(f"{path} (no such file)")
    for m in _LINK.finditer(text):
        target = m["target"]
        if not (doc.parent / target).exists():
            found.append(f"link {target} (no such file beside {doc.name})")
    return found


def test_every_project_name_a_doc_gives_resolves():
    found = [f"{doc.relative_to(REPO)}: {w}" for doc in DOCS for w in wrong_names(doc.read_text())]
    assert found == []


def test_every_path_a_doc_names_exists():
    texts = {doc: doc.read_text() for doc in DOCS}
    found = [
        f"{doc.relative_to(REPO)}: {m}" for doc, t in texts.items() for m in missing_paths(t, doc)
    ]
    assert found == []
    assert sum(len(_PATH.findall(t)) + len(_LINK.findall(t)) for t in texts.values()) > 200


def _recorded_figures() -> list[str]:
    """Each figure docs/benchmarks.md quotes of a recorded run, as the page writes it,
    computed from benchmarks/results/NAME.json (the measurement)."""
    runs = {p.stem: json.loads(p.read_text()) for p in (REPO / "benchmarks/results").glob("*.json")}
    read, rest = runs["store_read"]["ratios"], runs["rest_vs_inprocess"]
    epoch, load = runs["epoch_remote"]["ratios"], runs["load"]["kinds"]
    tok_s = {r["shape"]: r["tok_s"] for r in runs["cache_speedup"]["results"]}
    shapes = ("minilm", "base", "large")
    over = {w: [tok_s[s][w] / tok_s[s]["recompute"] for s in shapes] for w in ("REST", "local")}
    serve = runs["serve_predict-mlp-bert-base-random"]["medians"]
    stsb, mrpc = runs["race-stsb"], runs["race-mrpc"]
    early = {
        t: {r["epoch"]: r for r in v["positions"]} for t, v in runs["race_early"]["tasks"].items()
    }
    rho = [early["stsb (quick)"][p]["rho"] for p in (0.3333, 0.6667, 1.0, 2.0)]
    rho.append(runs["race_early"]["tasks"]["stsb (quick)"]["race_rung_1"]["rho"])
    slower = [load[k]["p50"] / load[k]["alone_p50"] for k in ("features", "embed-hit", "embed-new")]
    figures = [
        ("bare / extract = **{:.2f}**", runs["extract_vs_encoder"]["ratio_bare_over_extract"]),
        ("store / memmap latency = **{:.2f}**", read["one example, all layers: store/memmap"]),
        ("one layer: **{:.2f}**", read["one example, one layer: store/memmap"]),
        ("store / memmap = **{:.2f}**", read["256 examples: store/memmap"]),
        (
            "zarr slice / store = **{:.0f}**",
            read["one example, all layers: zarr slice/store (share of Store.read in zarr)"],
        ),
        ("REST / in-process = **{:.2f}**", rest["ratio_rest_over_inprocess"]),
        ("the same bytes is **{:.2f}** × in-process", rest["ratio_bare_over_inprocess"]),
        ("two at once **{:.2f}** ×", rest["ratio_bare2_over_inprocess"]),
        ("REST / bare socket = **{:.2f}**", rest["ratio_rest_over_bare"]),
        ("REST / local store = **{:.2f}**", epoch["epoch remote/local"]),
        ("local / in memory **{:.2f}**", epoch["epoch local/in-memory"]),
        (
            "REST / recompute = **{:.0f}** (MiniLM), **{:.0f}** (BERT-base shape), **{:.0f}**",
            *over["REST"],
        ),
        ("local / recompute **{:.0f}**, **{:.0f}**, **{:.0f}**", *over["local"]),
        ("p50 = **{:.1f}** (features), **{:.0f}** (embed hits), **{:.0f}** (new texts)", *slower),
        ("bucketed / random = **{:.2f}**", runs["batch_buckets"]["ratio"]),
        (
            "MLP heads (a) **{:.2f}** × (c), RSS **{:.2f}**",
            serve["(a) ❄️ heads"]["items_per_s"] / serve["(c) 🔥 models"]["items_per_s"],
            serve["(a) ❄️ heads"]["rss_peak"] / serve["(c) 🔥 models"]["rss_peak"],
        ),
        ("raced / exhaustive **{:.2f}** training CPU-h (1.38 vs 2.11)", stsb["ratios"]["cpu_h"]),
        ("raced / exhaustive **{:.2f}** training CPU-h (1.74 vs 2.33)", mrpc["ratios"]["cpu_h"]),
        (
            "(0.73); floor (losers stopped at rung 1) {:.2f}",
            mrpc["replay_cost"]["mrpc"]["floor_h"] / mrpc["replay_cost"]["mrpc"]["exhaustive_h"],
        ),
        (
            "**{:.2f}** at 1/3 epoch, **{:.2f}** at 2/3, **{:.2f}** at 1, **{:.2f}** at 2, "
            "**{:.2f}** at the race's own rung 1",
            *rho,
        ),
        ("MRPC spread at 1/3 epoch **{:.1f}** points", early["mrpc (standard)"][0.3333]["spread"]),
    ]
    return [text.format(*values) for text, *values in figures]


def test_the_benchmark_figures_are_the_recorded_runs():
    page = (REPO / "docs" / "benchmarks.md").read_text()
    figures = _recorded_figures()
    assert [f for f in figures if f not in page] == []
    assert len(figures) == 21 and "bare / extract = **0.93**" in figures  # read, not vacuous


def test_the_name_and_path_checks_see_what_is_wrong(tmp_path):
    assert wrong_names("`snowfire.cache.Store`, `snowfire.cache.RetryPolicy.from_env()`") == []
    assert wrong_names("`options.json`, `head.json`, `elmo:options.json`") == []
    assert wrong_names("from snowfire.cache import Store, open_reader  # the reader") == []
    assert wrong_names("`cache.Store`, `snowfire.cache.Nope`, `snowfire.nope.X`") == [
        "cache.Store: a bare package name (write snowfire.cache.Store)",
        "snowfire.cache.Nope: snowfire.cache has no Nope",
        "snowfire.nope.X: snowfire has no nope.X",
    ]
    assert wrong_names("from tasks import TASKS\nfrom snowfire.tasks import (TASKS, NOPE,") == [
        "from tasks import: a bare package name (snowfire.tasks)",
        "snowfire.tasks.NOPE: snowfire.tasks has no NOPE",
    ]
    doc = REPO / "docs" / "probe.md"  # never written: its links resolve beside docs/
    text = (
        "`cache/keys.py`, cache/nope.py, RUN/config.json, `benchmarks/results/NAME.json`, "
        "[usage](usage.md), [gone](gone.md), [site](https://example.org/x.md), ../shared/x.md"
    )
    assert missing_paths(text, doc) == [
        "cache/nope.py (no such file)",
        "link gone.md (no such file beside probe.md)",
    ]


def test_the_run_directories_docs_usage_lists_hold_every_file_rundir_names():
    """rundir/files.py's docstring is the layout (its constants are what is written): the ❄️
    and 🔥 run directories of docs/usage.md name each of its files."""
    layouts = (REPO / "rundir" / "files.py").read_text()
    doc = " ".join((REPO / "docs" / "usage.md").read_text().split())
    for block, sentence in (("A ❄️ head run", "A ❄️ run directory holds"), ("A 🔥", "A 🔥 run dir")):
        files = re.findall(r"RUN/([\w.-]+/?)", layouts.split(block, 1)[1].split("\n\n", 2)[1])
        assert len(files) >= 7, files  # the layout was read
        listed = doc.split(sentence, 1)[1][:900]
        missing = [f for f in files if f"`{f}" not in listed]
        assert missing == [], f"docs/usage.md's '{sentence}' lacks {missing}"
