"""Moving a store of the previous format (1) to this one without re-encoding: the file side.

What changed from format 1 to 2 is what a pool id hashes (the encoder identity covers the
extractor version, the precision policy and config.json; the labels spec and name are left
out), so every pool id, every example key (it hashes its pool id) and every feature-set id (it
hashes both) changed, and the stored features did not. extractor/migrate.py decides which
pools keep their bytes (their encoder is the one found now) and what their keys become; this
module moves the files, crash-safe:

    1. set aside     STORE/pools -> STORE/format-1/pools, STORE/featuresets -> .../featuresets
                     (two renames; a rerun finishes a half-done step)
    2. rebuild       each kept pool under its new id: every segment's files hard-linked (no
                     bytes copied), its zarr.json rewritten with the new keys, its checksums
                     recorded, built in a temporary directory and renamed into place; each
                     feature set written as `Store.write_featureset` writes it (texts, keys,
                     copy, manifest last, with their checksums)
    3. commit        STORE/zarr.json says format 2 (one atomic write): from then on the store
                     reads as any other; before it, this snowfire refuses it and a rerun of
                     `snowfire migrate` starts again from what step 1 set aside

Nothing of format 1 is deleted: STORE/format-1/ keeps the old pools and manifests (the features
are shared with the new pools through the hard links, so it costs little) and MIGRATION.json,
what was migrated and what must be re-extracted and why.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import sidecars
from .durable import atomic_write, fsync_dir, fsync_tree
from .errors import IncompatibleStoreError
from .keys import STORE_FORMAT_VERSION, digest
from .segment import CHECKSUMS, record_checksums

PREVIOUS_FORMAT = 1
OLD = "format-1"  # STORE/format-1/: what the migration set aside
REPORT = "MIGRATION.json"


@dataclass(frozen=True)
class OldSet:
    """A format-1 feature set: its manifest, keys and texts (None when it has none)."""

    manifest: dict[str, Any]
    keys: list[str]
    texts: list[dict[str, Any]] | None


def store_format(root: Path) -> int | None:
    """The format STORE/zarr.json records (None: no store there yet)."""
    try:
        attrs = json.loads((root / "zarr.json").read_text()).get("attributes", {})
    except FileNotFoundError:
        return None
    if attrs.get("format") != "snowfire-store":
        raise IncompatibleStoreError(f"{root} is a zarr store but not a snowfire store")
    return attrs.get("version")


def set_aside(root: Path) -> Path:
    """Step 1: the format-1 pools and feature sets under STORE/format-1/ (idempotent)."""
    old = root / OLD
    old.mkdir(exist_ok=True)
    for name in ("pools", "featuresets"):
        if not (old / name).exists():
            if (root / name).exists():
                os.rename(root / name, old / name)
            else:
                (old / name).mkdir()
        (root / name).mkdir(exist_ok=True)
    fsync_dir(old)
    fsync_dir(root)
    return old


def old_pools(old: Path) -> dict[str, dict[str, Any]]:
    """pool id -> its attributes (identity, dtype, num_layers, dim), of the set-aside pools."""
    out = {}
    for meta in sorted((old / "pools").glob("*/zarr.json")):
        out[meta.parent.name] = json.loads(meta.read_text())["attributes"]
    return out


def old_sets(old: Path) -> Iterator[OldSet]:
    """The set-aside feature sets (format 1 wrote no checksums: keys_sha256 is checked)."""
    for path in sorted((old / "featuresets").glob("[!.]*.json")):
        manifest = json.loads(path.read_text())
        keys = path.with_suffix(".keys").read_text().split()
        if digest(keys, 64) != manifest.get("keys_sha256"):
            raise IncompatibleStoreError(
                f"{path.with_suffix('.keys')}: its keys do not hash to the manifest's keys_sha256 "
                "(damaged): restore it, then run `snowfire migrate` again"
            )
        texts_path = path.with_name(f"{path.stem}.texts.jsonl")
        texts = None
        if texts_path.exists():
            texts = [json.loads(line) for line in texts_path.read_text().splitlines() if line]
        yield OldSet(manifest, keys, texts)


def segment_keys(old: Path, pool: str) -> dict[str, list[str]]:
    """segment id -> its keys in row order, of a set-aside pool."""
    out = {}
    for meta in sorted((old / "pools" / pool / "segments").glob("[!.]*/zarr.json")):
        out[meta.parent.name] = list(json.loads(meta.read_text())["attributes"]["keys"])
    return out


def rebuild_pool(
    root: Path, old_pool: str, new_pool: str, attrs: dict[str, Any], rekey: Callable[[str], str]
) -> int:
    """Step 2 for one pool: STORE/pools/<new_pool> with every segment of the old pool, its
    keys mapped by `rekey`, its data files hard-linked; returns the segments built now (a
    rerun skips those already in place)."""
    old = root / OLD / "pools" / old_pool
    new = root / "pools" / new_pool
    (new / "segments").mkdir(parents=True, exist_ok=True)
    meta = {"attributes": attrs, "zarr_format": 3, "node_type": "group"}
    atomic_write(new / "zarr.json", json.dumps(meta, indent=2).encode())
    built = 0
    for seg, keys in segment_keys(root / OLD, old_pool).items():
        new_keys = [rekey(k) for k in keys]
        name = _segment_name(seg, keys, new_keys)
        final = new / "segments" / name
        if final.exists():
            continue
        tmp = final.with_name(f".tmp-{name}-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        _link_tree(old / "segments" / seg, tmp)
        group = json.loads((tmp / "zarr.json").read_text())
        group["attributes"]["keys"] = new_keys
        (tmp / "zarr.json").unlink()  # a link to the old file: never written through
        (tmp / "zarr.json").write_text(json.dumps(group, indent=2))
        record_checksums(tmp)
        fsync_tree(tmp)
        os.rename(tmp, final)
        fsync_dir(final.parent)
        built += 1
    return built


def _segment_name(seg: str, keys: list[str], new_keys: list[str]) -> str:
    """The segment's new name where its old one was made from its keys (extract: the digest
    of its keys; embed: of {"embed": keys}), so a later extract of the same plan finds it;
    else its old name."""
    if seg == digest(keys, 24):
        return digest(new_keys, 24)
    if seg == digest({"embed": keys}, 24):
        return digest({"embed": new_keys}, 24)
    return seg


def _link_tree(src: Path, dst: Path) -> None:
    """`dst` with the files of `src` hard-linked (copied where the file system cannot link),
    but for its checksums, which are recorded anew."""
    for path in sorted(src.rglob("*")):
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.name != CHECKSUMS or path.parent != src:
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, target)
            except OSError:
                shutil.copy2(path, target)


def write_set(root: Path, manifest: dict[str, Any], keys: list[str], texts) -> None:
    """Step 2 for one feature set: its files as `Store.write_featureset` writes them."""
    files, _ = sidecars.featureset_files(manifest, keys, texts)
    for rel, data in files:
        atomic_write(root / rel, data)


def commit(root: Path, report: dict[str, Any]) -> None:
    """Step 3: the report beside what was set aside, then the root's format (the commit)."""
    atomic_write(root / OLD / REPORT, (json.dumps(report, indent=2) + "\n").encode())
    group = json.loads((root / "zarr.json").read_text())
    group["attributes"]["version"] = STORE_FORMAT_VERSION
    atomic_write(root / "zarr.json", json.dumps(group, indent=2).encode())
