"""Many partial-method 🔥 runs served by one pretrained encoder, each switched in around its
forward pass, none copying it.

A run of method adapter, lora or bitfit keeps only what it trained (RUN/best.pt; methods.py).
Loaded on its own (`load_run`), each would hold its own copy of the encoder plus a few MB of
its own; here they share one encoder, and each run's parts stand in for the shared ones while
it is the active run:

    bitfit   its bias vectors stand in for the encoder's: the module's parameter entries are
             pointed at the run's tensors and pointed back afterwards, never written into
    adapter  its bottleneck adapters, applied by one forward hook per insertion point (the
             active run's adapter, or the output as it is when the active run has none), and
             its layer norms, swapped in as bitfit's biases are
    lora     one named peft adapter per run on the query and value projections
             (`inject_adapter_in_model(..., adapter_name=...)`, peft's multi-adapter layers),
             chosen by `set_adapter`; disabled while a run of another method is active

The active run computes exactly what its solo model computes (the same modules, the same
operations in the same order), so a run predicts the same numbers shared or alone; and the
shared encoder's own tensors stay bitwise the pretrained ones (tests/test_shared_encoder.py).
One run is active at a time (`active(slot)` holds a lock).

Shapes: D hidden size, m adapter bottleneck, r LoRA rank.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from snowfire.rundir import BEST

from .methods import Adapter, adapter_points, insert_lora

#: The methods whose runs share the encoder (a full run carries its own: `load_run`).
SHARED_METHODS = ("adapter", "lora", "bitfit")
_LORA = (".lora_A.", ".lora_B.")


@dataclass(frozen=True)
class Slot:
    """A run's place on a shared encoder: what `BertFinetuner(shared=...)` is given."""

    shared: SharedEncoder
    name: str

    def active(self):
        return self.shared.active(self.name)


class SharedEncoder:
    """One pretrained Hugging Face encoder (the spec a service loads: minilm, hf:DIR) and the
    runs switched onto it."""

    def __init__(self, encoder: str, device: str | None = None) -> None:
        from transformers import AutoConfig, AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        from snowfire.extractor import hf_identity

        from .model import model_source

        hf_logging.set_verbosity_error()
        if encoder != "minilm" and not encoder.startswith("hf:"):
            raise ValueError(
                f"a shared encoder for {', '.join(SHARED_METHODS)} runs is BERT-family "
                f"(minilm or hf:DIR), got {encoder!r}"
            )
        self.spec = encoder
        self.model_dir, name = model_source(encoder)
        config = AutoConfig.from_pretrained(self.model_dir)
        self.identity = hf_identity(self.model_dir, config, name=name, spec=encoder)
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_dir, add_prefix_space=True)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.encoder = AutoModel.from_pretrained(self.model_dir, dtype=torch.float32)
        self.encoder.to(self.device).eval()
        self._lock = threading.RLock()
        self._names = (f"run{i}" for i in itertools.count())
        self._active: str | None = None
        self._swaps: dict[str, dict[str, tuple]] = {}  # slot -> {name: (module, leaf, tensor)}
        self._adapters: dict[str, nn.ModuleDict] = {}  # slot -> its adapters by point
        self._lora: set[str] = set()  # slots with a peft adapter of that name
        self._hooked = False
        self._layers: list = []  # peft's LoRA layers, for the runs in `_lora`
        self._lora_found = 0

    # ------------------------------------------------------------------ adding runs
    def add(
        self,
        method: str,
        state: dict[str, torch.Tensor],
        *,
        adapter_size: int,
        lora_rank: int,
        lora_alpha: float,
        lora_targets: str = "attention",
    ) -> Slot:
        """Switch a run's trained tensors onto the encoder: `state` is its RUN/best.pt less
        its output layer (keys as the solo model's: "encoder.…", "adapters.…"). Every tensor
        is placed, or ValueError names the first that fits nowhere."""
        if method not in SHARED_METHODS:
            raise ValueError(
                f"a {method} run carries its whole encoder; shared methods: "
                f"{', '.join(SHARED_METHODS)}"
            )
        with self._lock:
            slot = next(self._names)
            if method == "lora":
                insert_lora(self.encoder, lora_rank, lora_alpha, lora_targets, name=slot)
                self._lora.add(slot)
            own = dict(self.encoder.named_parameters())
            lora = {n for n in own if f".{slot}." in n}  # the slot's LoRA, filled below
            swaps, adapters = {}, {}
            for key, tensor in state.items():
                name = key.removeprefix("encoder.")
                if key.startswith("adapters.") and method == "adapter":
                    adapters[key.removeprefix("adapters.")] = tensor
                elif method == "lora" and any(t in name for t in _LORA):
                    name = name.replace(".default.", f".{slot}.")
                    if name not in lora:
                        raise ValueError(f"{key}: no such LoRA weight on the shared encoder")
                    own[name].data.copy_(tensor)  # the run's own LoRA weights, no shared one
                    lora.discard(name)
                elif key.startswith("encoder.") and self._is_base(name):
                    module, leaf = self._owner(name)
                    held = module._parameters[leaf]
                    if held is None or held.shape != tensor.shape:
                        raise ValueError(
                            f"{key}: shape {tuple(tensor.shape)}, the shared encoder's "
                            f"{None if held is None else tuple(held.shape)}"
                        )
                    swapped = nn.Parameter(tensor.to(self.device), requires_grad=False)
                    swaps[name] = (module, leaf, swapped)  # where it goes, found once
                else:
                    raise ValueError(f"{key}: no place for it on the shared {self.spec} encoder")
            if lora:
                raise ValueError(f"the run's weights hold no {sorted(lora)[0]}")
            self._swaps[slot] = swaps
            if method == "adapter":
                self._adapters[slot] = self._load_adapters(adapters, adapter_size)
            self._disable_lora()
            return Slot(self, slot)

    def remove(self, slot: str) -> None:
        """Take a run off the encoder (it was retrained: its new weights get a new slot)."""
        with self._lock:
            self._swaps.pop(slot, None)
            self._adapters.pop(slot, None)
            if slot in self._lora:
                self._lora.discard(slot)
                for layer in self._lora_layers():
                    layer.delete_adapter(slot)
                self._disable_lora()

    def _load_adapters(self, tensors: dict[str, torch.Tensor], size: int) -> nn.ModuleDict:
        """The run's adapters, one per insertion point, and the hooks that call the active
        run's (installed once)."""
        points = adapter_points(self.encoder)
        adapters = nn.ModuleDict({k: Adapter(m.out_features, size) for k, m in points})
        adapters.load_state_dict(tensors)  # strict: every point's adapter, nothing else
        adapters.to(self.device).eval()
        if not self._hooked:
            for key, module in points:
                module.register_forward_hook(self._hook(key))
            self._hooked = True
        return adapters

    def _hook(self, key: str):
        def call_active(_module, _inputs, out):
            adapters = self._adapters.get(self._active) if self._active else None
            return None if adapters is None else adapters[key](out)  # None: output unchanged

        return call_active

    # ------------------------------------------------------------------ switching
    @contextmanager
    def active(self, slot: str) -> Iterator[None]:
        """Run `slot`'s variant of the encoder inside the block: its tensors swapped in, its
        adapters and LoRA on; everything pointed back on the way out."""
        if slot not in self._swaps:
            raise KeyError(f"no run in slot {slot!r} of the shared encoder")
        with self._lock:
            saved = {}
            for name, (module, leaf, tensor) in self._swaps[slot].items():
                saved[name] = (module, leaf, module._parameters[leaf])
                module._parameters[leaf] = tensor
            self._active = slot
            if slot in self._lora:
                self._set_lora(slot)
            try:
                yield
            finally:
                self._active = None
                self._disable_lora()
                for module, leaf, tensor in saved.values():
                    module._parameters[leaf] = tensor

    def _owner(self, name: str) -> tuple[nn.Module, str]:
        """(module, attribute) of a pretrained tensor by its name in the plain encoder; a
        projection peft wrapped keeps its tensors in its `base_layer`."""
        path, _, leaf = name.rpartition(".")
        module = self.encoder.get_submodule(path)
        base = getattr(module, "base_layer", None)
        if leaf not in module._parameters and isinstance(base, nn.Module):
            module = base
        return module, leaf

    def _is_base(self, name: str) -> bool:
        try:
            module, leaf = self._owner(name)
        except AttributeError:
            return False
        return leaf in module._parameters and ".lora_" not in name

    def _lora_layers(self) -> list:
        """peft's LoRA layers (found again only when a LoRA run came or went)."""
        if self._lora_found != len(self._lora):
            from peft.tuners.tuners_utils import BaseTunerLayer

            self._layers = [m for m in self.encoder.modules() if isinstance(m, BaseTunerLayer)]
            self._lora_found = len(self._lora)
        return self._layers

    def _set_lora(self, slot: str) -> None:
        for layer in self._lora_layers():
            layer.enable_adapters(True)
            layer.set_adapter(slot)

    def _disable_lora(self) -> None:
        for layer in self._lora_layers():
            layer.enable_adapters(False)  # the base layer alone: the pretrained projection

    # ------------------------------------------------------------------ accounting
    def base_state(self) -> dict[str, torch.Tensor]:
        """The shared encoder's pretrained tensors by their names in the plain encoder (what
        no run may change); runs' LoRA weights left out."""
        return {
            n.replace(".base_layer.", "."): p
            for n, p in self.encoder.named_parameters()
            if ".lora_" not in n
        }

    def base_bytes(self) -> int:
        """Bytes of the pretrained tensors, held once for every run."""
        return sum(p.numel() * p.element_size() for p in self.base_state().values())

    def slot_bytes(self, slot: str) -> int:
        """Bytes a run adds to the shared encoder: its swapped tensors, adapters and LoRA."""
        own = [tensor for _, _, tensor in self._swaps.get(slot, {}).values()]
        if slot in self._adapters:
            own += list(self._adapters[slot].parameters())
        if slot in self._lora:
            own += [p for n, p in self.encoder.named_parameters() if f".{slot}." in n]
        return sum(p.numel() * p.element_size() for p in own)


def load_shared_run(run: str | Path, shared: SharedEncoder):
    """(the model, the task spec, its slot) of a finished partial-method 🔥 run, switched onto
    `shared`: its output layer its own, the encoder the shared one. ValueError when the run is
    full fine-tuning (it carries its encoder: `load_run`) or trained on another encoder."""
    from .model import build_model
    from .predict import IDENTITY_KEYS, check_encoder, read_run

    path, record, cfg, spec = read_run(run)
    if cfg.method not in SHARED_METHODS:
        raise ValueError(f"{path}: a {cfg.method} run carries its whole encoder (load_run)")
    check_encoder(path, record["encoder"], shared.identity, IDENTITY_KEYS)
    state = torch.load(path / BEST, map_location=shared.device, weights_only=True)
    output = {k.removeprefix("output."): v for k, v in state.items() if k.startswith("output.")}
    rest = {k: v for k, v in state.items() if not k.startswith("output.")}
    slot = shared.add(
        cfg.method,
        rest,
        adapter_size=cfg.adapter_size,
        lora_rank=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha,
        lora_targets=cfg.lora_targets,
    )
    model, _ = build_model(cfg, spec, shared=slot)
    model.output.load_state_dict(output)
    return model.to(shared.device).eval(), spec, slot
