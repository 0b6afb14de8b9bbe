"""`snowfire fsck`: every segment of a store checked against the checksums recorded when it
was written, and every feature set against the examples it lists.

    damage = check_store(Store(path))     # [] when sound
    quarantine(store, damage)             # damaged segments moved to STORE/quarantine/, kept

Re-extracting what a damaged segment held needs an encoder: extractor/repair.py does it
(the store knows no model).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import StoreError
from .segment import damaged_files
from .store import Store


@dataclass
class Damage:
    """One damaged segment, or one feature set that lists examples the store lacks."""

    where: str  # a segment (pools/POOL/segments/SEG) or a feature set id
    problems: list[str]
    featuresets: list[str] = field(default_factory=list)  # the sets that read from it
    pool: str | None = None
    segment: str | None = None


def check_store(store: Store, progress: bool = False) -> list[Damage]:
    """Every segment's files against its checksums; every feature set's keys present."""
    from tqdm import tqdm

    store.check_format()
    segments = sorted(p for p in store.path.glob("pools/*/segments/[!.]*") if p.is_dir())
    damage: dict[Path, Damage] = {}
    for seg in tqdm(segments, desc="segments", unit="seg", disable=not progress):
        try:
            problems = damaged_files(seg)
        except StoreError as err:  # no or unreadable checksums
            problems = [str(err)]
        if problems:
            rel = str(seg.relative_to(store.path))
            damage[seg] = Damage(rel, problems, pool=seg.parent.parent.name, segment=seg.name)
    bad_keys = _keys_of(damage)  # key -> damaged segment
    out = list(damage.values())
    for info in store.list_featuresets():
        keys = store.featureset_keys(info.id)
        hit = {bad_keys[k] for k in keys if k in bad_keys}
        for seg in hit:
            damage[seg].featuresets.append(info.id)
        healthy = {
            k
            for p in store.path.glob(f"pools/{info.encoder_id}/segments/[!.]*")
            if p not in damage
            for k in _segment_keys(p)
        }
        lost = [k for k in keys if k not in healthy and k not in bad_keys]
        if lost:
            out.append(Damage(info.id, [f"{len(lost)} listed examples are in no segment"],
                              [info.id], pool=info.encoder_id))  # fmt: skip
    return out


def _segment_keys(seg: Path) -> list[str]:
    import json

    try:
        return json.loads((seg / "zarr.json").read_text())["attributes"]["keys"]
    except (OSError, ValueError, KeyError):
        return []


def _keys_of(damage: dict[Path, Damage]) -> dict[str, Path]:
    return {k: seg for seg in damage for k in _segment_keys(seg)}


def quarantine(store: Store, damage: list[Damage]) -> list[Path]:
    """Move each damaged segment to STORE/quarantine/ (nothing is deleted); the store then
    lacks its examples, which a re-extraction computes again."""
    moved = []
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for d in damage:
        if d.segment is None:
            continue
        src = store.path / "pools" / d.pool / "segments" / d.segment
        dst = store.path / "quarantine" / f"{d.pool}-{d.segment}-{stamp}"
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)
        moved.append(dst)
    return moved
