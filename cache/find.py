"""Which feature set a caller means: the one of a task split made by an encoder, among those a
store lists (`Store.find_featureset`; the service's /v1/featuresets/find answers with it)."""

from __future__ import annotations

from typing import Any

from .errors import FeatureSetNotFoundError
from .types import FeatureSetInfo


def find_featureset(
    sets: list[FeatureSetInfo],
    where: str,
    *,
    encoder: str,
    task: str,
    split: str,
    pair_encoding: str | None = None,
    sha256: str | None = None,
    read: str | None = None,
) -> FeatureSetInfo:
    """The one set of `sets` (those the store at `where` holds) of a task split made by
    `encoder` (its spec or name); FeatureSetNotFoundError naming what it holds when none
    matches, or naming the matches when several do.

    sha256: only a set whose manifest's source file had this digest (an edited file's old
    features are not its texts'); read: only a set whose source was read this way (a user
    task's format and columns; a registered task's reading is fixed, its sets record none)."""
    hits = [
        fs
        for fs in sets
        if fs.task == task
        and fs.split == split
        and encoder in (fs.encoder.get("spec"), fs.encoder.get("name"))
        and (pair_encoding is None or fs.encoder.get("pair_encoding") == pair_encoding)
        and _same_source(fs.manifest.get("source") or {}, sha256, read)
    ]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        have = sorted({f"{fs.encoder.get('spec')}:{fs.task}/{fs.split}" for fs in sets})
        what = "" if sha256 is None else f" from the file with sha256 {sha256[:12]}…"
        raise FeatureSetNotFoundError(
            f"no feature set for encoder {encoder!r}, task {task!r}, split {split!r}{what} "
            f"in {where}; it holds: {', '.join(have) or 'nothing'}"
        )
    raise FeatureSetNotFoundError(
        f"{len(hits)} feature sets match encoder {encoder!r}, task {task!r}, split {split!r}: "
        f"{', '.join(fs.id for fs in hits)}; name one with --featureset"
    )


def _same_source(source: dict[str, Any], sha256: str | None, read: str | None) -> bool:
    """Whether a manifest's source is the file asked for, read the way asked for."""
    if sha256 is not None and source.get("sha256") != sha256:
        return False
    return read is None or source.get("read") == read
