"""Which feature set of a store is the current one of a task split: made by the encoder from
the split's file as it is now. An extraction records the file's sha256 and, for a user task,
how it was read (`tasks.split_source`, extractor/inputs.py); the look-up asks the store for
both, so an edited file is never trained or scored on with the features of its old texts.

One look-up for the ❄️ trainer, compare (what to extract, what to reuse), the analyses and
`snowfire baseline`.
"""

from __future__ import annotations

from pathlib import Path

from snowfire.cache import FeatureSetInfo, Reader


def current_featureset(
    reader: Reader,
    encoder: str,
    task,
    data: Path | str | None,
    split: str,
    pair_encoding: str | None = None,
) -> FeatureSetInfo:
    """The feature set `encoder` made from the current file of `split` of `task` (a TaskSpec
    or a registered name; its files under `data`), of pairs encoded `pair_encoding` (None:
    either, when only one exists). cache.FeatureSetNotFoundError when the store has none, or
    several (the error names them)."""
    from snowfire.tasks import as_spec, split_source

    spec = as_spec(task)
    source = split_source(spec, data, split)
    return reader.find_featureset(
        encoder=encoder,
        task=spec.name,
        split=split,
        pair_encoding=pair_encoding,
        sha256=source["sha256"],
        read=source.get("read"),
    )
