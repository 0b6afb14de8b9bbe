"""What a sweep probes: the task's splits in their roles and each one's stored feature set.

Roles follow the honest protocol (tasks.split_roles): the probes train on train, choose their
epoch on the *selection* split and are scored on the *report* split; where the task has no
labelled test split, selection is a stratified slice carved from train (tasks.selection_slice) and
report is dev.

Every split's feature set comes from one encoder pool (the same encoder identity and dtype),
found by the file it was extracted from: the split file's sha256 and, for a user task, how it
is read, so features of an edited file are never probed with its new labels, and a set
extracted under another task's name from the very same file (SICK-E's for SICK-R) is used.
Nothing is extracted here: a missing set is named with the command that makes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from snowfire.cache import FeatureSetInfo, FeatureSetNotFoundError, Reader
from snowfire.tasks import SplitRoles, gold_of, need_splits, read_split, split_roles, split_source

from .config import LayersConfig

#: The roles a sweep reads, in order.
ROLES = ("train", "selection", "report")


@dataclass(frozen=True)
class Inputs:
    """The roles' task splits (`roles`) and each split's feature set (`sets`, by split)."""

    roles: SplitRoles
    sets: dict[str, FeatureSetInfo]

    def split_of(self, role: str) -> str:
        """The task split a role reads its features from (a carved selection: train)."""
        if role == "train" or (role == "selection" and self.roles.carved):
            return "train"
        return self.roles.selection if role == "selection" else self.roles.report

    def featureset_ids(self) -> dict[str, str]:
        return {split: info.id for split, info in self.sets.items()}

    @property
    def train(self) -> FeatureSetInfo:
        return self.sets["train"]


def resolve_inputs(cfg: LayersConfig, reader: Reader) -> Inputs:
    """The roles of `cfg`'s task and the feature set of every split they read; ValueError
    naming what is missing or ambiguous (and how to make or pick it)."""
    spec = cfg.spec
    roles = split_roles(_labelled(cfg), cfg.selection)
    splits = list(dict.fromkeys(["train", roles.selection, roles.report]))
    if roles.carved:
        splits.remove(roles.selection)  # a slice of train's own set
    every = reader.list_featuresets()
    anchor = _anchor(cfg, reader)
    pool = anchor.encoder_id if anchor is not None else None
    sets: dict[str, FeatureSetInfo] = {}
    for split in splits:
        source = split_source(spec, cfg.data, split)  # its file's sha256, read once
        hits = [fs for fs in every if _made_from(fs, cfg, split, source, pool)]
        if anchor is not None and anchor in hits:
            hits = [anchor]  # the set the caller named, over its copies under other names
        pools = sorted({fs.encoder_id for fs in hits})
        if not hits:
            raise ValueError(_missing(cfg, split, reader))
        if len(pools) > 1:
            raise ValueError(
                f"{spec.name}/{split}: {len(hits)} feature sets of {len(pools)} encoder pools "
                f"match ({', '.join(fs.id for fs in hits)}): name one with --featureset, or "
                "give --pair-encoding"
            )
        hits.sort(key=lambda fs: (fs.task != spec.name, fs.id))  # its own name first
        sets[split] = hits[0]
        pool = hits[0].encoder_id  # every split from the first one's pool
    if anchor is not None and anchor.id not in {fs.id for fs in sets.values()}:
        raise ValueError(
            f"LayersConfig.featureset: {anchor.id} holds {anchor.task}/{anchor.split}, not "
            f"one of the splits of {spec.name} the sweep reads ({', '.join(splits)}) as "
            "extracted from its files"
        )
    return Inputs(roles, sets)


def _labelled(cfg: LayersConfig) -> list[str]:
    """The task's splits with gold labels: train and dev (required; checked again when read)
    and a select or test split whose file holds them (GLUE's test files do not)."""
    spec = cfg.spec
    present = need_splits(spec, cfg.data)  # train and dev, or a ValueError naming the files
    extra = [
        s
        for s in ("select", "test")
        if s in present and gold_of(spec, read_split(spec, cfg.data, s)) is not None
    ]
    return ["train", "dev", *extra]


def _anchor(cfg: LayersConfig, reader: Reader) -> FeatureSetInfo | None:
    if cfg.featureset is None:
        return None
    try:
        return reader.get_featureset(cfg.featureset)
    except FeatureSetNotFoundError as err:
        raise ValueError(f"LayersConfig.featureset: {err.args[0]}") from err


def _made_from(
    fs: FeatureSetInfo, cfg: LayersConfig, split: str, source: dict[str, Any], pool: str | None
) -> bool:
    """Whether `fs` holds `split` of the task as its file is now (`source`: tasks.split_source),
    by the encoder asked for."""
    if fs.split != split:
        return False
    if pool is not None and fs.encoder_id != pool:
        return False
    if cfg.encoder is not None and cfg.encoder not in (
        fs.encoder.get("spec"),
        fs.encoder.get("name"),
    ):
        return False
    if cfg.pair_encoding is not None and fs.encoder.get("pair_encoding") != cfg.pair_encoding:
        return False
    made: dict[str, Any] = fs.manifest.get("source") or {}
    return made.get("sha256") == source["sha256"] and made.get("read") == source.get("read")


def _missing(cfg: LayersConfig, split: str, reader: Reader) -> str:
    spec = cfg.spec
    encoder = cfg.encoder or "ENCODER"
    task = f"--task {spec.name} --data {cfg.data}" if spec.registered else "--task-spec SPEC"
    return (
        f"no features of {spec.name}/{split} (as its file is now) by "
        f"{cfg.encoder or 'the encoder of ' + str(cfg.featureset)} in {reader.path}: a sweep "
        f"reads stored features only; make them with `snowfire extract --encoder {encoder} "
        f"{task} --split {split} --store {cfg.store}`"
    )
