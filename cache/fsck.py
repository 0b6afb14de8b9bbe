"""`snowfire fsck`: every segment of a store checked against the checksums recorded when it
was written, and every feature set against the examples it lists.

    damage = check_store(open_store(path_or_url))   # [] when sound
    quarantine(store, damage)     # damaged segments set aside in STORE/quarantine/, kept

Re-extracting what a damaged segment held needs an encoder: extractor/repair.py does it
(the store knows no model).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .errors import StoreError
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
    """Every committed segment's files against its checksums; every feature set's keys
    present. A local store or one on object storage (cache/bucket.py: each object fetched and
    its crc32c computed): the same checks through the store's own file access."""
    from tqdm import tqdm

    store.check_format()
    segments = [(pool, seg) for pool in store._pool_names()
                for seg in store._committed_segments(pool)]  # fmt: skip
    damage: dict[tuple[str, str], Damage] = {}
    for pool, seg in tqdm(segments, desc="segments", unit="seg", disable=not progress):
        try:
            problems = store._segment_problems(pool, seg)
        except StoreError as err:  # no or unreadable checksums
            problems = [str(err)]
        if problems:
            damage[(pool, seg)] = Damage(f"pools/{pool}/segments/{seg}", problems,
                                         pool=pool, segment=seg)  # fmt: skip
    keys_of = {where: store._segment_keys(*where) for where in segments}  # read once
    bad_keys = {k: where for where in damage for k in keys_of[where]}
    out = list(damage.values())
    for info in store.list_featuresets():
        keys = store.featureset_keys(info.id)
        for where in {bad_keys[k] for k in keys if k in bad_keys}:
            damage[where].featuresets.append(info.id)
        healthy = {
            k
            for where, seg_keys in keys_of.items()
            if where[0] == info.encoder_id and where not in damage
            for k in seg_keys
        }
        lost = [k for k in keys if k not in healthy and k not in bad_keys]
        if lost:
            out.append(Damage(info.id, [f"{len(lost)} listed examples are in no segment"],
                              [info.id], pool=info.encoder_id))  # fmt: skip
    return out


def quarantine(store: Store, damage: list[Damage]) -> list[str]:
    """Set each damaged segment aside under STORE/quarantine/ (nothing is deleted: on object
    storage its objects are copied there first); the store then lacks its examples, which a
    re-extraction computes again. Where each went."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    return [
        store._set_aside(d.pool, d.segment, f"{d.pool}-{d.segment}-{stamp}")
        for d in damage
        if d.segment is not None
    ]
