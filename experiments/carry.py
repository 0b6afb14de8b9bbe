"""Carry a results WORK (experiments/results.py's runs) from one machine to the next: what a
later invocation reads back as finished, in one small archive, with no weights and no data.

    python experiments/carry.py pack   --work WORK --data DATA --to carried.tar.xz
    python experiments/carry.py unpack --work WORK --data DATA --from carried.tar.xz

A machine that goes away takes WORK with it; the seven-task run takes longer than a machine
lasts here. `pack` keeps every finished run (RUN/metrics.json written, not paused) as the
files a rerun reads back (config.json, metrics.json, log.jsonl, its predictions and the
race's per-epoch selection predictions, the ❄️ mix and head records) and WORK's own records
(ledger.jsonl, compare/load.jsonl, results.json, table.md). A run paused at a race's rung goes
too, with the end a stop there would give it (RUN/at-pause/, rundir/pause.py): the race weighs
it from its records, and ends it from them if it loses; if it goes on it trains again from
scratch. It leaves out what a rerun makes
again or cannot use: weights and checkpoints, feature stores, plots, runs not finished (they
train again from scratch), and a run whose weights a later stage starts from while that stage
has not finished (an LP-FT probe whose LP-FT run is unfinished; arm seq's intermediate run,
always: its encoder is 90 MB). An LP-FT probe's head weights are kept (a few KB): its LP-FT
run is reused only while they hash the same. Arm seq's intermediate run trains again on the
next machine; its finished seq runs are reused only if it comes out the same (its weights'
SHA-256, finetune/model.py `check_start`), which needs the same CPU kernels: otherwise compare
refuses them by name, unless --keep-remade-starts keeps each with the start it recorded
(table.md then says which runs started from which weights, compare/starts.py).

No data goes into the archive. A prediction file holds the split's gold answers (and, for
tagging, its words): `pack` keeps only each row's example index and prediction, after finding
which split of the task's files the rows are (every row's gold must match), and `unpack`
writes the file again from DATA with tasks/predictions.py's own format. Every file is checked
on the way back against the SHA-256 it had when packed: unpack refuses an archive that DATA
does not restore byte for byte, and writes nothing over a file already in WORK that differs.
Runs record absolute paths, so the archive unpacks into the WORK it was packed from.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import tarfile
import time
from pathlib import Path

FORMAT = 1
MANIFEST = "manifest.json"
#: What a rerun reads back: records and predictions (weights, stores and plots are not).
KEPT = {".json", ".jsonl", ".md", ".tsv"}
#: A run's predictions (RUN/predictions/<split>.tsv) and the race's (RUN/selection/epoch-k.tsv).
PREDICTION_DIRS = {"predictions", "selection"}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


#: What marks a run's folder, finished or not (a ❄️ run writes config.json only at its end).
RUN_MARKS = ("config.json", "log.jsonl", "paused.json", "checkpoint.pt", "metrics.json")


def _run_dir(path: Path, work: Path) -> Path | None:
    """The nearest folder above `path` (within WORK) that is a run's."""
    for parent in path.parents:
        if parent == work or work not in parent.parents:
            return None
        if any((parent / mark).is_file() for mark in RUN_MARKS):
            return parent
    return None


def _finished(run: Path) -> bool:
    return (
        all((run / f).is_file() for f in ("config.json", "metrics.json"))
        and not (run / "paused.json").exists()
    )


def _paused_with_end(run: Path) -> bool:
    """A run paused at a rung with the end a stop there gives kept (rundir/pause.py)."""
    return (run / "paused.json").is_file() and (run / "at-pause" / "metrics.json").is_file()


def _still_needed(run: Path, work: Path) -> bool:
    """A finished run whose weights a stage not yet finished starts from."""
    parts = run.relative_to(work).parts
    if "intermediate" in parts:  # arm seq's start, for every task: trained again
        return True
    if _is_probe(run, work):
        consumer = _lpft_of(run, work)
        return consumer is None or not _finished(consumer)
    return False


def _is_probe(run: Path, work: Path) -> bool:
    """An LP-FT probe's run (OUT/snow/<task>/probe-cls/..., probe-word/...): its LP-FT run
    checks its weights."""
    return any(p.startswith("probe-") for p in run.relative_to(work).parts)


def _lpft_of(probe: Path, work: Path) -> Path | None:
    """The LP-FT run that starts from `probe` (its config's init_head names it, absolute or
    relative to where the run was started: matched on the path within WORK)."""
    within = probe.relative_to(work).parts
    for config in work.glob("**/lpft/**/config.json"):
        if "at-pause" in config.parts:  # a paused run's end, not a run of its own
            continue
        init = json.loads(config.read_text()).get("finetune", {}).get("init_head")
        if init and Path(init).parts[-len(within) :] == within:
            return config.parent
    return None


def _skipped(path: Path, work: Path) -> str | None:
    """Why `path` stays behind, None when it is carried."""
    probe_weights = path.name == "weights.safetensors" and _is_probe(path.parent, work)
    if (path.suffix not in KEPT or path.name.startswith(".")) and not probe_weights:
        return "not a record"
    parts = path.relative_to(work).parts
    if any(p.endswith(".zarr") or p == "store" for p in parts):
        return "a feature store"
    if "encoder" in parts[:-1]:  # RUN/encoder/: a fine-tuned encoder, its weights and tokenizer
        return "a fine-tuned encoder"
    runs = []
    run = _run_dir(path, work)
    while run is not None:
        runs.append(run)
        run = _run_dir(run, work)
    if any(not (_finished(r) or _paused_with_end(r)) for r in runs):
        return "a run not finished"
    if runs and _still_needed(runs[-1], work):
        return "a run a later stage starts from"
    if path.suffix == ".tsv" and not (runs and path.parent.name in PREDICTION_DIRS):
        return "a table of no finished run's predictions"  # it may hold data: never as it is
    return None


def _task_of(run: Path):
    """The task a run read: its registered name or its spec (RUN/config.json; a ❄️ run paused
    at a rung writes it only at its end, so the end kept there: RUN/at-pause/config.json)."""
    path = run / "config.json"
    if not path.is_file() and _paused_with_end(run):
        path = run / "at-pause" / "config.json"
    config = json.loads(path.read_text())
    section = config.get("train") or config.get("finetune") or {}
    ref = section.get("task_spec") or section.get("task") or config.get("task")
    if not ref:
        raise ValueError(f"{run}/config.json: names no task, so its predictions cannot be packed")
    return ref


def _spec_and_splits(ref, data: Path, cache: dict):
    """The task `ref` names, and its splits as read from DATA ({split: examples})."""
    from snowfire.tasks import available_splits, read_split, resolve_task

    key = json.dumps(ref, sort_keys=True)
    if key not in cache:
        spec = resolve_task(ref)
        cache[key] = (spec, {s: read_split(spec, data, s) for s in available_splits(spec, data)})
    return cache[key]


def _strip(text: str, spec, splits: dict) -> tuple[str, str]:
    """(the split the rows are, the rows without gold or words: `index<TAB>predicted`)."""
    from snowfire.tasks import gold_text, parse_predictions

    rows = parse_predictions(text, spec.kind)
    for split, examples in splits.items():
        if spec.kind != "tagging":
            gold = [gold_text(spec.kind, e) for e in examples]
            if all(int(i) < len(gold) and gold[int(i)] == g for i, g, _ in rows):
                return split, "".join(f"{i}\t{p}\n" for i, _, p in rows)
            continue
        where: dict[tuple, int] = {}
        for e in examples:
            where.setdefault((tuple(e.words_a), gold_text(spec.kind, e)), e.index)
        found = [where.get((tuple(w for w, _, _ in s), tuple(g for _, g, _ in s))) for s in rows]
        if all(i is not None for i in found):
            return split, "".join(
                f"{i}\t{' '.join(p for _, _, p in s)}\n" for i, s in zip(found, rows, strict=True)
            )
    raise ValueError(f"its rows match no split of {spec.name} in the data")


def _restore(stripped: str, spec, examples: list) -> str:
    """The prediction file again (tasks/predictions.py's `format_predictions`), its rows'
    examples found by index in the split they were stripped from."""
    from snowfire.tasks import format_predictions

    rows = [line.split("\t", 1) for line in stripped.split("\n")[:-1]]
    preds = [p.split(" ") if spec.kind == "tagging" else p for _, p in rows]
    return format_predictions(spec, [examples[int(i)] for i, _ in rows], preds)


def pack(work: Path, data: Path, to: Path) -> dict:
    """Write the archive of WORK's finished runs and records to `to`; its manifest."""
    from tqdm import tqdm

    work = work.resolve()
    files: dict[str, dict] = {}
    left: dict[str, int] = {}
    blobs: dict[str, bytes] = {}
    cache: dict = {}
    paths = sorted(p for p in work.rglob("*") if p.is_file())
    for path in tqdm(paths, desc="pack", unit="file"):
        rel = str(path.relative_to(work))
        why = _skipped(path, work)
        if why:
            left[why] = left.get(why, 0) + 1
            continue
        raw = path.read_bytes()
        entry: dict = {"sha256": _sha(raw)}
        run = _run_dir(path, work)
        if run is not None and path.suffix == ".tsv" and path.parent.name in PREDICTION_DIRS:
            entry["task"] = _task_of(run)
            spec, splits = _spec_and_splits(entry["task"], data, cache)
            try:
                entry["split"], stripped = _strip(raw.decode("utf-8"), spec, splits)
            except ValueError as err:
                raise ValueError(f"{path}: {err}") from err
            raw = stripped.encode("utf-8")
        files[rel] = entry
        blobs[rel] = raw
    manifest = {
        "format": FORMAT,
        "work": str(work),
        "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": files,
        "left_behind": left,
    }
    to.parent.mkdir(parents=True, exist_ok=True)
    partial = to.with_name(to.name + ".partial")
    with tarfile.open(partial, "w:xz") as tar:
        _add(tar, MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
        for rel in sorted(blobs):
            _add(tar, f"files/{rel}", blobs[rel])
    partial.replace(to)
    return manifest


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def unpack(archive: Path, work: Path, data: Path) -> dict:
    """Write the archive's files into WORK (each checked against its recorded SHA-256 first,
    nothing written until every file checks); {"written", "present"} counts."""
    work = work.resolve()
    with tarfile.open(archive, "r:xz") as tar:
        manifest = json.loads(_read(tar, MANIFEST))
        if manifest.get("format") != FORMAT:
            raise ValueError(f"{archive}: expected format {FORMAT}, got {manifest.get('format')}")
        if manifest["work"] != str(work):
            raise ValueError(
                f"{archive}: packed from WORK {manifest['work']}, not {work}: runs record "
                "absolute paths, so unpack it into the WORK it came from"
            )
        restored: dict[str, bytes] = {}
        cache: dict = {}
        for rel, entry in manifest["files"].items():
            raw = _read(tar, f"files/{rel}")
            if "split" in entry:
                spec, splits = _spec_and_splits(entry["task"], data, cache)
                if entry["split"] not in splits:
                    raise ValueError(f"{rel}: its split {entry['split']!r} is not in {data}")
                raw = _restore(raw.decode("utf-8"), spec, splits[entry["split"]]).encode()
            if _sha(raw) != entry["sha256"]:
                raise ValueError(
                    f"{rel}: restored from {data}, its SHA-256 is {_sha(raw)[:12]}, expected "
                    f"{entry['sha256'][:12]}: the data differ from the data it was packed with"
                )
            restored[rel] = raw
    _config_first(restored, work)
    written = present = 0
    for rel in sorted(restored, key=lambda r: r.endswith("metrics.json")):  # finished last
        path = work / rel
        if path.is_file():
            if path.read_bytes() != restored[rel]:
                raise ValueError(f"{path}: already in WORK and differs from the archive's")
            present += 1
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(restored[rel])
        written += 1
    return {"written": written, "present": present}


def _config_first(restored: dict[str, bytes], work: Path) -> None:
    """Refuse before writing anything when a file would land in a run WORK holds unfinished."""
    for rel in restored:
        run = _run_dir(work / rel, work)
        if run is not None and run.is_dir() and not _finished(run) and any(run.iterdir()):
            raise ValueError(f"{run}: WORK holds this run unfinished; the archive has it finished")


def _read(tar: tarfile.TarFile, name: str) -> bytes:
    member = tar.extractfile(name)
    if member is None:
        raise ValueError(f"{tar.name}: no {name} in the archive")
    return member.read()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["pack", "unpack"])
    p.add_argument("--work", required=True, type=Path)
    p.add_argument("--data", required=True, type=Path, help="the tasks' data (gold answers)")
    p.add_argument("--to", type=Path, help="pack: the archive to write (.tar.xz)")
    p.add_argument("--from", dest="source", type=Path, help="unpack: the archive to read")
    args = p.parse_args(argv)
    try:
        if args.what == "pack":
            if args.to is None:
                p.error("pack needs --to")
            m = pack(args.work, args.data, args.to)
            size = args.to.stat().st_size / 2**20
            print(f"packed {len(m['files'])} files ({size:.1f} MB) into {args.to}; left behind:")
            for why, n in sorted(m["left_behind"].items()):
                print(f"  {n} files: {why}")
        else:
            if args.source is None:
                p.error("unpack needs --from")
            got = unpack(args.source, args.work, args.data)
            print(f"unpacked into {args.work}: {got['written']} written, {got['present']} there")
    except (ValueError, OSError) as err:
        print(f"carry {args.what}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
