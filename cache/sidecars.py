"""A feature set's own files, and the checksums recorded when they are written.

    featuresets/<id>.texts.jsonl  its texts, one JSON object a line      } their crc32c and size:
    featuresets/<id>.keys         its example keys, one a line, in order  } the manifest's "files"
    featuresets/<id>.json.copy    the manifest's bytes again (what a repair restores it from)
    featuresets/<id>.json         the manifest, written last: the commit

Each is written whole or not at all (a rename, or one PUT), in that order, so a reader sees a
set only once everything it lists is in place. The manifest carries the crc32c of its own
bytes ("manifest_crc32c", computed with its eight hex digits zeroed): inside the one atomic
write, not in a second file, so no crash between two writes can leave a sound manifest beside a
stale checksum. Its copy is written just before it; a copy that differs from a sound manifest
is what a rewrite killed between the two leaves, not damage.

Reads check the manifest when they parse it and the keys and texts when they load them (each
is read whole anyway; a read of features costs nothing more). Manifests written before these
checksums (no "files", no "manifest_crc32c") are read as before; their keys are checked
against the manifest's keys_sha256. `check_set` (for `snowfire fsck`) names each damaged file
with what was recorded and what was found; `repair_set` rebuilds what the other files allow
and adds the checksums to a set written before them, once its files agree with each other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .errors import ExampleNotFoundError, StoreCorruptError
from .keys import digest, encoder_id, example_key
from .segment import crc32c

MANIFEST, COPY, KEYS, TEXTS = ".json", ".json.copy", ".keys", ".texts.jsonl"
FILES = "files"  # manifest field: {suffix: [crc32c hex, size]} of its keys and texts
SELF_CRC = "manifest_crc32c"  # manifest field: crc32c of its own bytes, these digits zeroed
_SELF = re.compile(rb'\n  "manifest_crc32c": "([0-9a-f]{8})"')  # top level (indent 2) only
_BLANK = b"00000000"
_REQUIRED = ("id", "encoder", "encoder_id", "num_examples", "num_layers", "dim", "dtype")
#: What fsck says of a set written before these checksums.
UNCOVERED = "not covered by checksums (written before snowfire recorded them)"


def rel(fs_id: str, suffix: str) -> str:
    """A feature set file's name in the store."""
    return f"featuresets/{fs_id}{suffix}"


# ---------------------------------------------------------------- the bytes written
def render_keys(keys: Sequence[str]) -> bytes:
    return "".join(k + "\n" for k in keys).encode()


def render_texts(texts: Sequence[dict]) -> bytes:
    return "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts).encode()


def render_manifest(manifest: dict[str, Any]) -> bytes:
    """The manifest's bytes: sorted JSON, its own crc32c filled in last."""
    body = {k: v for k, v in manifest.items() if k != SELF_CRC}
    data = json.dumps({**body, SELF_CRC: _BLANK.decode()}, indent=2, sort_keys=True).encode()
    at = _SELF.search(data)
    assert at is not None  # the blank SELF_CRC was just written
    return data[: at.start(1)] + crc32c(data).encode() + data[at.end(1) :]


def featureset_files(
    manifest: dict[str, Any], keys: Sequence[str], texts: Sequence[dict] | None
) -> tuple[list[tuple[str, bytes]], dict[str, Any]]:
    """[(file, bytes)] of a feature set in the order they must be written, and the manifest
    as it records them."""
    fs_id = manifest["id"]
    out = [] if texts is None else [(TEXTS, render_texts(texts))]
    out.append((KEYS, render_keys(keys)))
    files = {suffix: [crc32c(data), len(data)] for suffix, data in out}
    manifest = {k: v for k, v in manifest.items() if k != SELF_CRC} | {FILES: files}
    data = render_manifest(manifest)
    out += [(COPY, data), (MANIFEST, data)]
    return [(rel(fs_id, suffix), data) for suffix, data in out], manifest


# ---------------------------------------------------------------- reading them back
def parse_manifest(data: bytes) -> tuple[dict[str, Any] | None, bool, str | None]:
    """(content, covered by checksums, why it is damaged or None) of a manifest's bytes."""
    own = _SELF.search(data)
    if own is not None:
        found = crc32c(data[: own.start(1)] + _BLANK + data[own.end(1) :])
        if found != own[1].decode():
            return None, True, f"crc32c {found}, recorded {own[1].decode()} ({len(data)} bytes)"
    try:
        content = json.loads(data)
    except ValueError as err:
        return None, own is not None, f"not whole JSON ({err}; {len(data)} bytes)"
    if not isinstance(content, dict) or not all(k in content for k in _REQUIRED):
        return None, own is not None, f"not a manifest (expected the fields {_REQUIRED})"
    if own is None and (FILES in content or SELF_CRC.encode() in data):
        return None, True, f"lists its files' checksums but its own {SELF_CRC} is unreadable"
    content.pop(SELF_CRC, None)
    return content, own is not None, None


def load_manifest(store, fs_id: str, data: bytes) -> dict[str, Any]:
    """A manifest's content; StoreCorruptError naming the file when damaged."""
    content, _, why = parse_manifest(data)
    if content is not None and content["id"] != fs_id:
        why = f"its id is {content['id']!r}, its file name says {fs_id!r}"
    if why is not None or content is None:  # (content is None only with a why)
        raise _corrupt(store, fs_id, rel(fs_id, MANIFEST), why or "unreadable")
    return content


def load_keys(store, info) -> list[str]:
    """A feature set's keys, checked against its manifest (crc32c, or keys_sha256 for a set
    written before the checksums)."""
    data = _checked(store, info, KEYS)
    if data is None:
        raise _corrupt(store, info.id, rel(info.id, KEYS), "missing")
    keys = data.decode().split()
    want = info.manifest.get("keys_sha256")
    if FILES not in info.manifest and want is not None and digest(keys, 64) != want:
        why = f"keys_sha256 {digest(keys, 64)}, recorded {want}"
        raise _corrupt(store, info.id, rel(info.id, KEYS), why)
    return keys


def load_texts(store, info) -> list[dict[str, Any]]:
    """A feature set's texts, checked against its manifest's crc32c when it recorded one."""
    recorded = FILES not in info.manifest or TEXTS in info.manifest[FILES]
    data = _checked(store, info, TEXTS) if recorded else None
    if data is None:
        raise ExampleNotFoundError(f"feature set {info.id!r} was stored without its texts")
    return [json.loads(line) for line in data.decode().splitlines()]


def _checked(store, info, suffix: str) -> bytes | None:
    """A file's bytes, whole (None if absent and unrecorded); StoreCorruptError when they
    differ from what the manifest recorded."""
    recorded = info.manifest.get(FILES, {}).get(suffix)
    data = _get(store, rel(info.id, suffix))
    if recorded is not None:
        why = _differs(data, recorded)
        if why is not None:
            raise _corrupt(store, info.id, rel(info.id, suffix), why)
    return data


def _differs(data: bytes | None, recorded: list) -> str | None:
    """Why bytes (None: missing) differ from their recorded [crc32c hex, size], or None."""
    if data is None:
        return "missing"
    if len(data) != recorded[1]:
        return f"{len(data)} bytes, recorded {recorded[1]}"
    found = crc32c(data)
    return None if found == recorded[0] else f"crc32c {found}, recorded {recorded[0]}"


def _corrupt(store, fs_id: str, name: str, why: str) -> StoreCorruptError:
    return StoreCorruptError(
        f"feature set {fs_id} is damaged: {store.path}/{name}: {why}; "
        f"run `snowfire fsck --store {store.path} --repair`"
    )


def _get(store, name: str) -> bytes | None:
    try:
        return store.backend.get(name)
    except FileNotFoundError:
        return None


# ---------------------------------------------------------------- fsck
@dataclass
class SetCheck:
    """What `check_set` found of one feature set's own files."""

    fs_id: str
    manifest: dict[str, Any] | None = None  # its content (its copy's if only that is sound)
    raw: bytes | None = None  # the sound manifest bytes (the manifest's, else its copy's)
    covered: bool = False  # written with checksums
    problems: dict[str, str] = field(default_factory=dict)  # file -> "file: what is wrong"
    keys: list[str] | None = None  # when sound
    texts: list[dict] | None = None  # when sound and stored

    def damaged(self, name: str, why: str) -> None:
        self.problems[name] = f"{name}: {why}"


def check_set(store, fs_id: str) -> SetCheck:
    """Every file of a feature set against what its manifest records; for a set written
    before the checksums, its keys against keys_sha256 and its texts against its keys."""
    out = SetCheck(fs_id)
    man, spare = _read_manifest(store, fs_id, MANIFEST), _read_manifest(store, fs_id, COPY)
    if man.why is not None:
        out.damaged(rel(fs_id, MANIFEST), man.why)
    if spare.data is not None and spare.why is not None:
        out.damaged(rel(fs_id, COPY), spare.why)
    elif spare.data is None and man.covered:  # a manifest with checksums follows its copy
        out.damaged(rel(fs_id, COPY), "missing")
    best = man if man.content is not None else spare
    if best.content is None:
        return out
    out.manifest, out.raw, out.covered = best.content, best.data, best.covered
    if out.covered:
        _check_recorded(store, out)
    else:
        _check_uncovered(store, out)
    return out


class _Manifest(NamedTuple):
    data: bytes | None
    content: dict[str, Any] | None
    covered: bool
    why: str | None


def _read_manifest(store, fs_id: str, suffix: str) -> _Manifest:
    data = _get(store, rel(fs_id, suffix))
    if data is None:
        return _Manifest(None, None, False, "missing")
    content, covered, why = parse_manifest(data)
    if content is not None and content["id"] != fs_id:
        why = f"its id is {content['id']!r}, its file name says {fs_id!r}"
        content = None
    return _Manifest(data, content, covered, why)


def _check_recorded(store, out: SetCheck) -> None:
    assert out.manifest is not None  # check_set found one sound
    for suffix, recorded in out.manifest[FILES].items():
        name = rel(out.fs_id, suffix)
        data = _get(store, name)
        why = _differs(data, recorded)
        if why is not None or data is None:  # (data is None only with a why: "missing")
            out.damaged(name, why or "missing")
        elif suffix == KEYS:
            out.keys = data.decode().split()
        elif suffix == TEXTS:
            out.texts = [json.loads(line) for line in data.decode().splitlines()]


def _check_uncovered(store, out: SetCheck) -> None:
    """What a manifest written before the checksums allows: its keys against keys_sha256, its
    texts by their example keys, its pool id against its encoder and its count of examples."""
    m, fs_id = out.manifest, out.fs_id
    assert m is not None  # check_set found one sound
    data = _get(store, rel(fs_id, KEYS))
    keys = None if data is None else data.decode(errors="replace").split()
    why = "missing" if keys is None else _unlike_keys(m, keys)
    if why is None:
        out.keys = keys
    else:
        out.damaged(rel(fs_id, KEYS), why)
    data = _get(store, rel(fs_id, TEXTS))
    if data is not None:
        texts, why = _parse_texts(data)
        if texts is not None:  # (why is None)
            why = _unlike_keys(m, [example_key(m["encoder_id"], t) for t in texts], out.keys)
        if why is None:
            out.texts = texts
        else:
            out.damaged(rel(fs_id, TEXTS), why)
    pool = encoder_id(m["encoder"], m["dtype"])
    if m["encoder_id"] != pool:
        why = f"encoder_id {m['encoder_id']}, its encoder and dtype give {pool}"
        out.damaged(rel(fs_id, MANIFEST), why)
    elif out.keys is not None and m["num_examples"] != len(out.keys):
        why = f"num_examples {m['num_examples']}, its keys file lists {len(out.keys)}"
        out.damaged(rel(fs_id, MANIFEST), why)


def _unlike_keys(manifest, keys: list[str], known: list[str] | None = None) -> str | None:
    """Why `keys` (read, or derived from texts) are not the set's: against the manifest's
    keys_sha256, or the `known` keys when it has none; None when they are."""
    want = manifest.get("keys_sha256")
    if want is not None and digest(keys, 64) != want:
        return f"keys_sha256 {digest(keys, 64)}, recorded {want}"
    if want is None and known is not None and keys != known:
        return "its example keys are not the keys file's"
    return None


def _parse_texts(data: bytes) -> tuple[list[dict] | None, str | None]:
    try:
        lines = data.decode().splitlines()
    except UnicodeDecodeError as err:
        return None, f"not UTF-8 ({err})"
    texts = []
    for n, line in enumerate(lines, 1):
        try:
            texts.append(json.loads(line))
        except ValueError as err:
            return None, f"line {n} is not JSON ({err})"
    return texts, None


# ---------------------------------------------------------------- repair
def repair_set(
    store, check: SetCheck, source_texts: Callable[[dict[str, Any]], list[dict]] | None = None
) -> list[str]:
    """Rebuild what a set's other files allow, each file checked against what was recorded
    before it is written: its texts from `source_texts(manifest)` (its source file), its keys
    from its texts, its manifest from its copy and the copy from the manifest. A set written
    before the checksums gets them once its files agree. What was done, or why not, a line
    each."""
    fs_id, m, done = check.fs_id, check.manifest, []
    if m is None:
        return [f"feature set {fs_id}: cannot rebuild: neither its manifest nor its copy is sound"]
    names = {suffix: rel(fs_id, suffix) for suffix in (MANIFEST, COPY, KEYS, TEXTS)}
    texts, keys = check.texts, check.keys
    if names[TEXTS] in check.problems:
        texts, line = _rebuild_texts(check, source_texts)
        if texts is not None:
            store.backend.put(names[TEXTS], render_texts(texts))
        done.append(f"{names[TEXTS]}: {line}")
    if names[KEYS] in check.problems:
        keys = None if texts is None else [example_key(m["encoder_id"], t) for t in texts]
        why = "its texts are not sound" if keys is None else _unlike_record(check, KEYS, keys)
        if why is None and keys is not None:
            store.backend.put(names[KEYS], render_keys(keys))
            done.append(f"{names[KEYS]}: rebuilt from its texts (each text's example key)")
        else:
            keys = None
            done.append(f"{names[KEYS]}: cannot rebuild: {why}")
    if check.covered:
        for name, source in ((names[MANIFEST], "its copy"), (names[COPY], "the manifest")):
            if name in check.problems:
                store.backend.put(name, check.raw)
                done.append(f"{name}: restored from {source}")
        return done
    left = [why for n, why in check.problems.items() if n not in (names[KEYS], names[TEXTS])]
    if keys is None or (texts is None and names[TEXTS] in check.problems) or left:
        why = "; ".join(left) or "its keys or texts could not be rebuilt"
        return done + [f"feature set {fs_id}: {UNCOVERED}; checksums not added: {why}"]
    files, _ = featureset_files(m, keys, texts)
    for name, data in files:
        store.backend.put(name, data)
    checked = "its keys matched keys_sha256" + (", its texts their keys" if texts else "")
    return done + [f"feature set {fs_id}: checksums added ({checked})"]


def _rebuild_texts(check: SetCheck, source_texts) -> tuple[list[dict] | None, str]:
    """Texts from the set's source file, and what was done (or why not)."""
    assert check.manifest is not None  # repair_set has one
    source = check.manifest.get("source") or {}
    if source_texts is None or not source.get("path"):
        return None, "cannot rebuild: the manifest records no source file"
    try:
        texts = source_texts(check.manifest)
    except (OSError, ValueError) as err:
        return None, f"cannot rebuild from its source: {err}"
    keys = [example_key(check.manifest["encoder_id"], t) for t in texts]
    why = _unlike_record(check, TEXTS, keys, texts)
    if why is not None:
        return None, f"cannot rebuild from its source {source['path']}: {why}"
    return texts, f"rebuilt from its source {source['path']} (its sha256 as recorded)"


def _unlike_record(check: SetCheck, suffix: str, keys: list[str], texts=None) -> str | None:
    """Why a rebuilt file (keys, or texts with their example keys) is not what was recorded:
    its crc32c and size, or for a set written before them, keys_sha256; None when it is."""
    assert check.manifest is not None  # repair_set has one
    if check.covered:
        data = render_keys(keys) if suffix == KEYS else render_texts(texts)
        return _differs(data, check.manifest[FILES][suffix])
    return _unlike_keys(check.manifest, keys, check.keys)
