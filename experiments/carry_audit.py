"""Audit a carried archive (experiments/carry.py) for data: it must hold no sentence of any
task's files, no gold column, and no weights but the LP-FT probes'.

    python experiments/carry_audit.py --archive carried.tar.xz --data DATA

Two passes over every text file of the archive, against every split of every registered task
that DATA holds (their sentences, as the readers return them):
  exact: each line, each tab-separated field and each JSON string, whitespace-normalised, is
         looked up among the data's sentences of 25 characters or more;
  8-gram: every run of 8 words of each line is looked up among the data's word 8-grams.
And each prediction table (a manifest entry with a "split") must be `index<TAB>predicted` rows.
Prints the counts and every hit; exits 1 on any hit.
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

MIN_CHARS = 25
GRAM = 8


def data_text(data: Path) -> tuple[set[str], set[tuple[str, ...]], int]:
    """(sentences of ≥ MIN_CHARS characters, word 8-grams, sentences read) of every split of
    every registered task found under DATA."""
    from snowfire.tasks import TASKS, available_splits, read_split

    sentences: set[str] = set()
    grams: set[tuple[str, ...]] = set()
    read = 0
    for spec in TASKS.values():
        try:
            splits = available_splits(spec, data)
        except (FileNotFoundError, ValueError):
            continue
        for split in splits:
            for example in read_split(spec, data, split):
                for words in (example.words_a, example.words_b):
                    if not words:
                        continue
                    read += 1
                    text = " ".join(words)
                    if len(text) >= MIN_CHARS:
                        sentences.add(text)
                    grams.update(_grams(list(words)))
    return sentences, grams, read


def _grams(words: list[str]) -> Iterator[tuple[str, ...]]:
    return (tuple(words[i : i + GRAM]) for i in range(len(words) - GRAM + 1))


def _strings(value) -> Iterator[str]:
    """Every string within a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def candidates(name: str, text: str) -> Iterator[str]:
    """The pieces of a file checked against the data's sentences."""
    for line in text.splitlines():
        yield line
        yield from line.split("\t")
        if name.endswith((".json", ".jsonl")) and line.strip():
            try:
                yield from _strings(json.loads(line))
            except ValueError:
                pass
    if name.endswith(".json"):
        try:
            yield from _strings(json.loads(text))
        except ValueError:
            pass


def audit(archive: Path, data: Path) -> dict:
    """{"files", "binaries", "sentences", "hits", "gold"} for `archive` against DATA."""
    sentences, grams, read = data_text(data)
    hits: list[str] = []
    gold: list[str] = []
    binaries: list[str] = []
    files = 0
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        blobs = {m.name: tar.extractfile(m).read() for m in members}  # type: ignore[union-attr]
    manifest = json.loads(blobs.get("manifest.json", b"{}")).get("files", {})
    for name, raw in sorted(blobs.items()):
        files += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            binaries.append(name)
            continue
        if name.endswith(".safetensors"):
            binaries.append(name)
            continue
        for piece in candidates(name, text):
            if " ".join(piece.split()) in sentences:
                hits.append(f"{name}: sentence {piece[:60]!r}")
        for line in text.splitlines():
            for gram in _grams(line.split()):
                if gram in grams:
                    hits.append(f"{name}: 8 words {' '.join(gram)[:60]!r}")
                    break
        entry = manifest.get(name.removeprefix("files/"), {})
        if "split" in entry:
            bad = [row for row in text.splitlines() if len(row.split("\t")) != 2]
            if bad:
                gold.append(f"{name}: {len(bad)} rows not index<TAB>predicted")
    return {
        "files": files,
        "tables": sum("split" in e for e in manifest.values()),
        "binaries": binaries,
        "sentences": read,
        "hits": list(dict.fromkeys(hits)),  # a piece met as a line and as a field: once
        "gold": gold,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True)
    args = parser.parse_args(argv)
    got = audit(args.archive, args.data)
    print(
        f"{got['files']} files against {got['sentences']} data sentences: "
        f"{len(got['hits'])} hits, {len(got['gold'])} of {got['tables']} prediction tables "
        "with more than predictions, "
        f"{len(got['binaries'])} binaries"
    )
    for line in got["hits"] + got["gold"] + [f"binary: {b}" for b in got["binaries"]]:
        print(" ", line)
    return 1 if got["hits"] or got["gold"] else 0


if __name__ == "__main__":
    sys.exit(main())
