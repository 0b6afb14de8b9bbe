"""Runs loaded for prediction, kept while their files are unchanged, with the bytes each holds.

    ❄️ a head (heads.load_head): a few KB to a few MB; it reads the features the encoder
       computed once for every ❄️ run (predictor.py)
    🔥 adapter, lora, bitfit: the run's parts on the one shared encoder (finetune/shared.py):
       its adapters, LoRA weights or biases, and its output layer
    🔥 full: a whole model of its own (finetune.load_run), counted whole

A run retrained in place (its metrics.json rewritten) is loaded again on its next request.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from snowfire.cache import identity_content
from snowfire.rundir import METRICS

from .errors import RunEncoderError
from .registry import RunInfo

if TYPE_CHECKING:
    from snowfire.finetune import SharedEncoder


@dataclass
class Loaded:
    """A run ready to predict: `model` (a ❄️ head or a 🔥 FireModel), its task spec, the bytes
    it holds on its own, and (❄️) the store layers it reads, pair encoding and dtype."""

    info: RunInfo
    model: Any
    spec: Any
    nbytes: int
    stamp: int  # metrics.json's mtime when loaded
    layers: list[int] | None = None
    pair_encoding: str = "joint"
    dtype: str | None = None
    slot: Any = None  # a shared-encoder run's finetune.Slot


def _bytes(module) -> int:
    return sum(t.numel() * t.element_size() for t in [*module.parameters(), *module.buffers()])


def snow_mismatch(identity: dict, served: dict) -> list[str]:
    """The encoder fields that make a ❄️ run's features differ from the served encoder's
    (pair encoding left out: the embed worker loads the encoder with any), named
    "field: run X, service Y"."""
    run, ours = identity_content(identity), identity_content(served)
    fields = sorted((set(run) | set(ours)) - {"pair_encoding"})
    return [
        f"{k}: run {run.get(k)}, service {ours.get(k)}" for k in fields if run.get(k) != ours.get(k)
    ]


def fire_mismatch(identity: dict, served: dict) -> list[str]:
    """The hashes that make a 🔥 run's starting encoder another than the served one."""
    from snowfire.finetune import IDENTITY_KEYS

    return [
        f"{k}: run {identity[k]}, service {served.get(k)}"
        for k in IDENTITY_KEYS
        if k in identity and identity[k] != served.get(k)
    ]


class Models:
    """The loaded runs by name, and the shared encoder of the partial-method runs (built on the
    first one, from `encoder`: the spec the predictor's embed worker loaded)."""

    def __init__(self, encoder: str, identity: dict, device: str | None = None) -> None:
        self.encoder, self.identity, self.device = encoder, identity, device
        self.shared: SharedEncoder | None = None  # once a partial-method run is asked for
        self._loaded: dict[str, Loaded] = {}
        self._lock = threading.Lock()

    def status(self, info: RunInfo) -> str | None:
        """Why the run cannot be served by this predictor's encoder, or None."""
        if info.side == "snow":
            wrong = snow_mismatch(info.identity, self.identity)
        elif info.kind == "full":
            return None  # it carries its own encoder
        else:
            wrong = fire_mismatch(info.identity, self.identity)
        if not wrong:
            return None
        made = info.identity.get("spec") or info.encoder
        return (
            f"run {info.name!r} was made with another encoder ({made}) than the one this "
            f"service loaded ({self.encoder}): {'; '.join(wrong[:3])}"
        )

    def get(self, info: RunInfo) -> Loaded:
        """The run loaded (once; again when its metrics.json changed). RunEncoderError when it
        was made with another encoder than the served one."""
        stamp = (info.path / METRICS).stat().st_mtime_ns
        with self._lock:
            found = self._loaded.get(info.name)
            if found is not None and found.stamp == stamp and found.info.path == info.path:
                return found
            if found is not None:
                self._drop(found)
            why = self.status(info)
            if why is not None:
                raise RunEncoderError(why)
            loaded = self._load(info, stamp)
            self._loaded[info.name] = loaded
            return loaded

    def _drop(self, loaded: Loaded) -> None:
        del self._loaded[loaded.info.name]
        if loaded.slot is not None and self.shared is not None:
            self.shared.remove(loaded.slot.name)

    def _load(self, info: RunInfo, stamp: int) -> Loaded:
        if info.side == "snow":
            from snowfire.heads import load_head, run_task

            head, meta = load_head(info.path)
            return Loaded(
                info,
                head,
                run_task(meta),
                _bytes(head),
                stamp,
                layers=meta.get("layers"),
                pair_encoding=meta["encoder"].get("pair_encoding") or "joint",
                dtype=meta.get("dtype"),
            )
        if info.kind == "full":
            from snowfire.finetune import load_run

            model, spec = load_run(info.path, self.device)
            return Loaded(info, model, spec, _bytes(model), stamp)
        from snowfire.finetune import SharedEncoder, load_shared_run

        if self.shared is None:
            self.shared = SharedEncoder(self.encoder, self.device)
        shared = self.shared
        model, spec, slot = load_shared_run(info.path, shared)
        own = shared.slot_bytes(slot.name) + _bytes(model.output)
        return Loaded(info, model, spec, own, stamp, slot=slot)

    def memory(self) -> dict[str, int]:
        """Bytes held per loaded run, and the shared encoder's once ("(shared encoder)")."""
        with self._lock:
            held = {name: loaded.nbytes for name, loaded in self._loaded.items()}
        if self.shared is not None:
            held["(shared encoder)"] = self.shared.base_bytes()
        return held
