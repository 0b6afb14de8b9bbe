"""`snowfire migrate --store S`: a store of the previous format (1) made this format without
re-encoding wherever its bytes are still right.

Format 2 changed what a pool id hashes, not how features are computed (EXTRACTOR_VERSION is
still 1), so a format-1 pool's bytes are still right when the encoder found now is the one that
made them: every field format 1 recorded (weights, tokenizer, model type, layers, width, pair
encoding, window, extractor version) equal. Format 2 also hashes what format 1 did not record:
config.json (taken from the encoder found) and the precision policy (format 1 did not record
whether it ran under float16 autocast on a GPU: `precision`, float32 by default). Each kept
pool's examples get their keys recomputed from the stored texts (a key hashes the pool and the
text; each old key is first checked to be its text's under the old pool) and each feature set
its id, as `snowfire extract` would name them. Anything else is said: which feature sets must
be re-extracted, why, and the command. The file moves, crash-safe: cache/migrate.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snowfire.cache import (
    STORE_FORMAT_VERSION,
    IncompatibleStoreError,
    digest,
    encoder_id,
    example_key,
    identity_content,
)
from snowfire.cache import migration as files
from snowfire.options import check, option

from .config import ExtractConfig
from .encoders import load_encoder

#: Identity fields format 2 added: format 1 did not record them; the encoder found gives them.
ADDED = ("config_sha256", "precision")
#: Format-1 names of identity fields format 2 renamed (ELMo's own version became the one
#: EXTRACTOR_VERSION of every encoder, at the same value).
RENAMED = {"elmo_version": "extractor_version"}
PRECISIONS = ("float32", "float16-autocast")


@dataclass(frozen=True)
class MigrateConfig:
    """`snowfire migrate`: one store, moved from format 1 to this format in place."""

    store: str = option(help="the store directory (format 1; a bucket: copy it to a directory)")
    encoder: list[str] = option(
        help="an encoder spec to look for a pool's encoder under, besides the spec the pool "
        "recorded (e.g. hf:NEW_DIR when the model folder moved); repeatable",
        factory=list,
    )
    precision: str = option(
        "float32",
        "what format-1 extraction computed in (format 1 did not record it): float32, unless "
        "the store was extracted on a CUDA GPU (float16-autocast)",
        choices=PRECISIONS,
    )

    def __post_init__(self) -> None:
        check(self)


@dataclass
class Outcome:
    """What a migration did: sets migrated (old id -> new id), sets to re-extract (old id ->
    why, and the command), pools kept and examples left unmapped (no stored text)."""

    migrated: dict[str, str] = field(default_factory=dict)
    reextract: dict[str, dict[str, str]] = field(default_factory=dict)
    pools: dict[str, str] = field(default_factory=dict)  # old pool id -> new
    unmapped: int = 0
    already: bool = False

    def lines(self) -> list[str]:
        if self.already:
            return [f"already format {STORE_FORMAT_VERSION}: nothing to migrate"]
        out = [f"migrated {old} -> {new} (no re-encoding)" for old, new in self.migrated.items()]
        for old, what in self.reextract.items():
            out.append(f"RE-EXTRACT {old}: {what['why']}; run: {what['command']}")
        if self.unmapped:
            out.append(
                f"{self.unmapped} stored examples listed by no feature set have no text to "
                "key them by: not reachable in the new pools"
            )
        return out


def differences(old: dict[str, Any], found: dict[str, Any]) -> list[str]:
    """The fields a format-1 identity recorded that the encoder found now has otherwise."""
    recorded = {RENAMED.get(k, k): v for k, v in identity_content(old).items()}
    now = identity_content(found)
    return [
        f"{k} recorded {recorded.get(k)!r}, found {now.get(k)!r}"
        for k in sorted(set(recorded) | set(now))
        if not (k in ADDED and k not in recorded) and recorded.get(k) != now.get(k)
    ]


def migrate_store(config: MigrateConfig) -> Outcome:
    """Move `config.store` from format 1 to this format (see the module's docstring); a
    rerun after a crash finishes it. IncompatibleStoreError for any other format."""
    root = Path(config.store)
    if "://" in config.store:
        raise ValueError(f"{config.store}: migrate works on a directory; copy the bucket to one")
    version = files.store_format(root)
    if version == STORE_FORMAT_VERSION:
        return Outcome(already=True)
    if version != files.PREVIOUS_FORMAT:
        raise IncompatibleStoreError(
            f"{root}: store format {version}; snowfire migrate moves format "
            f"{files.PREVIOUS_FORMAT} to {STORE_FORMAT_VERSION} only"
        )
    old = files.set_aside(root)
    pools = files.old_pools(old)
    found = {pool: _find_encoder(attrs, config) for pool, attrs in pools.items()}
    out = Outcome()
    sets = list(files.old_sets(old))
    rekeys: dict[str, dict[str, str]] = {pool: {} for pool in pools}
    plans = []
    for s in sets:
        pool = s.manifest["encoder_id"]
        identity, why = found.get(pool, (None, f"its pool {pool} is not in the store"))
        why = why if identity is None else _unkeyable(s)
        if why:
            out.reextract[s.manifest["id"]] = {"why": why, "command": _command(s.manifest, root)}
            continue
        assert identity is not None and s.texts is not None  # else a why above
        new_pool = encoder_id(identity, pools[pool]["dtype"])
        new_keys = [example_key(new_pool, t) for t in s.texts]
        rekeys[pool].update(zip(s.keys, new_keys, strict=True))
        plans.append((s, identity, new_pool, new_keys))
    for pool, (identity, _) in found.items():
        if identity is None:
            continue
        new_pool = encoder_id(identity, pools[pool]["dtype"])
        attrs = {**pools[pool], "identity": identity}
        mapping = rekeys[pool]
        unmapped: set[str] = set()

        def rekey(key: str, mapping=mapping, unmapped=unmapped) -> str:
            if key not in mapping:
                unmapped.add(key)
            return mapping.get(key, key)

        files.rebuild_pool(root, pool, new_pool, attrs, rekey)
        out.unmapped += len(unmapped)
        out.pools[pool] = new_pool
    for s, identity, new_pool, new_keys in plans:
        manifest = _manifest(s, identity, new_pool, new_keys, config.precision)
        files.write_set(root, manifest, new_keys, s.texts)
        out.migrated[s.manifest["id"]] = manifest["id"]
    files.commit(
        root,
        {
            "from_format": files.PREVIOUS_FORMAT,
            "to_format": STORE_FORMAT_VERSION,
            "migrated": out.migrated,
            "reextract": out.reextract,
            "pools": out.pools,
            "unmapped_examples": out.unmapped,
            "precision_assumed": config.precision,
        },
    )
    return out


def _unkeyable(s: files.OldSet) -> str:
    """Why the set's keys cannot be recomputed from its texts ("" when they can): each old key
    must be its text's under the old pool."""
    if s.texts is None:
        return "it stored no texts to recompute its keys from"
    if len(s.texts) != len(s.keys):
        return f"it stored {len(s.texts)} texts for {len(s.keys)} keys"
    pool = s.manifest["encoder_id"]
    pairs = enumerate(zip(s.keys, s.texts, strict=True))
    wrong = [i for i, (k, t) in pairs if example_key(pool, t) != k]
    return f"its texts do not give its keys (example {wrong[0]} first)" if wrong else ""


def _find_encoder(attrs: dict[str, Any], config: MigrateConfig) -> tuple[dict | None, str]:
    """(the format-2 identity of the encoder that made a format-1 pool, "") or (None, why
    none of the specs to look under gives it)."""
    recorded = attrs["identity"]
    specs = list(dict.fromkeys([*config.encoder, recorded.get("spec")]))
    tried = []
    for spec in filter(None, specs):
        try:
            cfg = ExtractConfig.from_identity(
                {**recorded, "spec": spec},
                store=config.store,
                dtype=attrs["dtype"],
                device="cpu",
                progress=False,
            )
            identity = dict(load_encoder(cfg.encoder, **cfg.encoder_options()).identity)
        except (OSError, RuntimeError, ValueError) as err:
            tried.append(f"{spec} does not load here ({str(err).splitlines()[0]})")
            continue
        identity["precision"] = config.precision
        unlike = differences(recorded, identity)
        if not unlike:
            return identity, ""
        tried.append(f"{spec} is another encoder now ({'; '.join(unlike)})")
    return None, "its encoder is not found: " + "; ".join(tried)


def _manifest(s, identity: dict, new_pool: str, new_keys: list[str], precision: str) -> dict:
    """The set's manifest in this format: its new pool, keys' hash and id, and where from."""
    old = s.manifest
    was = digest({"pool": old["encoder_id"], "keys": s.keys}, 8)
    now = digest({"pool": new_pool, "keys": new_keys}, 8)
    new_id = old["id"][: -len(was)] + now if old["id"].endswith("-" + was) else old["id"]
    body = {k: v for k, v in old.items() if k not in ("files", "manifest_crc32c")}
    return {
        **body,
        "id": new_id,
        "encoder": identity,
        "encoder_id": new_pool,
        "keys_sha256": digest(new_keys, 64),
        "migrated": {
            "from_format": files.PREVIOUS_FORMAT,
            "id": old["id"],
            "encoder_id": old["encoder_id"],
            "precision_assumed": precision,
        },
    }


def _command(manifest: dict[str, Any], store: Path) -> str:
    """The extract command that makes the set again (from its manifest)."""
    spec = manifest.get("encoder", {}).get("spec", "SPEC")
    source = manifest.get("source") or {}
    if manifest.get("task"):
        what = f"--task {manifest['task']} --data DATA --split {manifest.get('split')}"
    else:
        what = f"--input {source.get('path', 'FILE')}"
    return f"snowfire extract --encoder {spec} {what} --store {store} --dtype {manifest['dtype']}"
