"""`snowfire fsck`: every segment of a store checked against the checksums recorded when it
was written, every feature set's own files (manifest, its copy, keys, texts) against theirs
(sidecars.py), and every feature set against the examples it lists.

    report = check(open_store(path_or_url))   # report.damage: [] when sound
    repair_files(store, report, source_texts)  # what the feature sets' other files rebuild
    quarantine(store, report.damage)  # damaged segments set aside in STORE/quarantine/, kept

Re-extracting what a damaged segment held needs an encoder, and re-reading a set's source
file needs its task's reader: extractor/repair.py does both (the store knows neither).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import StoreError
from .segment import CHECKSUMS, check_objects, listed_keys, segment_prefix
from .sidecars import UNCOVERED, SetCheck, check_set, repair_set
from .store import Store


@dataclass
class Damage:
    """One damaged segment, a feature set's damaged own files, or a feature set that lists
    examples the store lacks."""

    where: str  # a segment (pools/POOL/segments/SEG), "feature set ID", or a feature set id
    problems: list[str]
    featuresets: list[str] = field(default_factory=list)  # the sets that read from it
    pool: str | None = None
    segment: str | None = None


@dataclass
class Report:
    """What `check` found: the damage, each feature set's own files, the segments counted."""

    damage: list[Damage]
    sets: dict[str, SetCheck]
    segments: int

    @property
    def uncovered(self) -> list[str]:
        """The feature sets written before their files had checksums."""
        return [fs for fs, c in self.sets.items() if c.manifest is not None and not c.covered]

    def lines(self) -> list[str]:
        """One line per damaged thing (DAMAGED) and per set without checksums (NOTE)."""
        out = []
        for d in self.damage:
            sets = f" (feature sets: {', '.join(d.featuresets)})" if d.featuresets else ""
            out.append(f"DAMAGED {d.where}{sets}: " + "; ".join(d.problems))
        for fs in self.uncovered:
            sound = (
                ""
                if self.sets[fs].problems
                else (
                    "; its keys match the manifest's keys_sha256 and its texts their keys; "
                    "`fsck --repair` adds the checksums"
                )
            )
            out.append(f"NOTE feature set {fs}: {UNCOVERED}{sound}")
        return out

    def summary(self) -> str:
        return f"{self.segments} segments and {len(self.sets)} feature sets checked, " + (
            "damage found" if self.damage else "all sound"
        )


def check(store: Store, progress: bool = False) -> Report:
    """Every committed segment's files against its checksums; every feature set's files
    against its manifest's; every feature set's keys present. The same checks whatever the
    store's backend (each file read through it and its crc32c computed)."""
    from tqdm import tqdm

    store.check_format()
    segments = store.segments()
    damage: dict[tuple[str, str], Damage] = {}
    for pool, seg in tqdm(segments, desc="segments", unit="seg", disable=not progress):
        try:
            problems = check_objects(store.backend, segment_prefix(pool, seg))
        except StoreError as err:  # no or unreadable checksums
            problems = [str(err)]
        if problems:
            where = segment_prefix(pool, seg)
            damage[(pool, seg)] = Damage(where, problems, pool=pool, segment=seg)
    keys_of = {where: listed_keys(store.backend, segment_prefix(*where)) for where in segments}
    bad_keys = {k: where for where in damage for k in keys_of[where]}
    out = list(damage.values())
    sets = {}
    for fs in tqdm(store.featureset_ids(), desc="feature sets", unit="set", disable=not progress):
        sets[fs] = got = check_set(store, fs)
        if got.problems:
            out.append(Damage(f"feature set {fs}", list(got.problems.values())))
        if got.keys is None or got.manifest is None:
            continue  # its keys are damaged: reported above
        keys, pool = got.keys, got.manifest["encoder_id"]
        for seg_at in {bad_keys[k] for k in keys if k in bad_keys}:
            damage[seg_at].featuresets.append(fs)
        healthy = {
            k
            for where, seg_keys in keys_of.items()
            if where[0] == pool and where not in damage
            for k in seg_keys
        }
        lost = [k for k in keys if k not in healthy and k not in bad_keys]
        if lost:
            out.append(
                Damage(fs, [f"{len(lost)} listed examples are in no segment"], [fs], pool=pool)
            )
    return Report(out, sets, len(segments))


def repair_files(
    store: Store,
    report: Report,
    source_texts: Callable[[dict[str, Any]], list[dict]] | None = None,
) -> list[str]:
    """Rebuild the damaged files of each feature set from its other files (sidecars.repair_set;
    its texts from `source_texts(manifest)`), and add the checksums to the sets written before
    them; what was done, a line each."""
    out = []
    for got in report.sets.values():
        if got.problems or (got.manifest is not None and not got.covered):
            out += repair_set(store, got, source_texts)
    return out


def quarantine(store: Store, damage: list[Damage]) -> list[str]:
    """Set each damaged segment aside under STORE/quarantine/ (nothing is deleted: a folder
    is renamed; objects are copied there, then deleted, its checksums first, so it is no
    longer committed before it is partly gone); the store then lacks its examples, which a
    re-extraction computes again (in a store opened afresh: this one may have them indexed).
    Where each went."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    out = []
    for d in damage:
        if d.pool is not None and d.segment is not None:
            name = f"quarantine/{d.pool}-{d.segment}-{stamp}"
            store.backend.rename(segment_prefix(d.pool, d.segment), name, CHECKSUMS)
            out.append(f"{store.backend.location}/{name}")
    return out
