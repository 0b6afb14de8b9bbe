"""`snowfire fsck --repair`: a feature set's damaged files rebuilt from its other files and its
source, damaged segments set aside and their examples extracted again.

A feature set's keys follow from its texts and its pool (each key hashes the two), and its
texts from its source file while that file's sha256 is still the one its manifest recorded;
its manifest has a copy (cache/sidecars.py). A feature set stores its texts and its encoder's
identity, so the inputs of a damaged segment are known too: the encoder is loaded from the
identity's spec (refused if its content differs from the one that made the set), the set's
missing examples are computed again, and the set's manifest is written again as it was.
"""

from __future__ import annotations

from snowfire.cache import Damage, Report, Store, encoder_id, open_store, quarantine, repair_files

from .base import TextInput
from .config import ExtractConfig
from .encoders import load_encoder
from .inputs import source_payloads
from .run import extract


def repair(store: Store, report: Report, *, device: str | None = None) -> list[str]:
    """Rebuild the damaged files of feature sets (and add checksums to sets written before
    them), then re-extract the sets that read from damaged segments; what was done, a line
    each. ValueError naming a set when its encoder cannot be loaded."""
    done = repair_files(store, report, lambda manifest: source_payloads(manifest["source"]))
    segments = [d for d in report.damage if d.segment is not None]
    if segments:
        redone = reextract(open_store(store.path), segments, device=device)  # files rebuilt
        done.append(f"re-extracted {len(redone)} feature sets: {', '.join(redone) or '-'}")
    return done


def reextract(store: Store, damage: list[Damage], *, device: str | None = None) -> list[str]:
    """Quarantine the damaged segments, re-extract every feature set that read from them;
    the ids re-extracted. ValueError naming the set when its encoder cannot be loaded."""
    affected = sorted({fs for d in damage for fs in d.featuresets})
    infos = {fs: store.get_featureset(fs) for fs in affected}
    texts = {fs: store.featureset_texts(fs) for fs in affected}  # before anything moves
    encoders, configs = {}, {}
    for fs, info in infos.items():
        ident = info.encoder
        try:
            configs[fs] = ExtractConfig.from_identity(
                ident, store=str(store.path), dtype=info.dtype, device=device, progress=False
            )
            enc = load_encoder(configs[fs].encoder, **configs[fs].encoder_options())
        except (OSError, RuntimeError, ValueError) as err:
            raise ValueError(
                f"cannot re-extract {fs}: its encoder {ident.get('spec')!r} "
                f"does not load here ({err})"
            ) from err
        if encoder_id(enc.identity, info.dtype) != info.encoder_id:
            raise ValueError(
                f"cannot re-extract {fs}: {ident.get('spec')!r} now names another encoder "
                "(its weights, tokenizer or settings changed)"
            )
        encoders[fs] = enc
    quarantine(store, damage)
    fresh = open_store(store.path)  # no cached index of the moved segments
    for fs, info in infos.items():
        items = [
            TextInput(tuple(t["a"]), None if t["b"] is None else tuple(t["b"])) for t in texts[fs]
        ]
        extract(
            encoders[fs],
            items,
            fresh,
            task=info.task,
            split=info.split,
            config=configs[fs],
            name=info.manifest.get("name"),
            source=info.manifest.get("source"),
        )
    return affected
