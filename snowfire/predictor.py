"""`snowfire.Predictor`: saved runs predicting in this process, by the service's own path
(snowfire.serving), so the answers are POST /v1/predict's.

    with snowfire.Predictor(["runs/sst2-linear", "runs/stsb-lora"]) as p:
        answer = p.predict(texts=["a gripping film ."], runs=["runs/sst2-linear"])
        answer.runs[0].predictions[0]    # {"label": "1", "probabilities": {...}}
        answer.to_json()                 # the REST body
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path


class Predictor:
    """runs: run directories (named as given) or {name: directory}; encoder: the encoder spec
    to load (default: the one the runs were made with, which must then be one); store: where
    ❄️ features are kept (default: a temporary store, removed by `close`; give the store the
    runs were trained from and its texts cost no encoder time); device: cpu or cuda;
    timeout: seconds one `predict` may take."""

    def __init__(
        self,
        runs: Sequence[str | Path] | Mapping[str, str | Path],
        *,
        encoder: str | None = None,
        store: str | Path | None = None,
        device: str | None = None,
        timeout: float = 600.0,
    ) -> None:
        from snowfire.cache import open_store
        from snowfire.extractor import EmbedWorker
        from snowfire.serving import Predictor as Serving
        from snowfire.serving import RunRegistry

        named = dict(runs) if isinstance(runs, Mapping) else {str(r): r for r in runs}
        if not named:
            raise ValueError("Predictor: expected at least one run directory, got none")
        self.registry = RunRegistry(runs=named)
        self._tmp = None
        if store is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="snowfire-predictor-")
            store = Path(self._tmp.name) / "store"
        config = _encoder_config(self.registry, encoder, str(store), device)
        self.embedder = EmbedWorker(open_store(str(store)), config)
        self.service = Serving(
            self.registry, self.embedder.store, self.embedder, device=device, timeout=timeout
        )

    def predict(
        self,
        runs: Sequence[str] | None = None,
        *,
        texts: list[str] | None = None,
        pairs: list[tuple[str, str]] | None = None,
        tokens: list[list[str]] | None = None,
    ):
        """`serving.PredictAnswer` of `runs` (default: every run given) for the examples, in
        exactly one form: texts, pairs or tokens."""
        names = list(runs) if runs is not None else list(self.registry.runs)
        return self.service.predict(names, texts=texts, pairs=pairs, tokens=tokens)

    def close(self) -> None:
        self.service.close()
        self.embedder.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> Predictor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _encoder_config(registry, encoder: str | None, store: str, device: str | None):
    """The ExtractConfig of the encoder to load: `encoder`, or the runs' own."""
    from snowfire.extractor import ExtractConfig

    if encoder is not None:
        return ExtractConfig(encoder=encoder, store=store, device=device, progress=False)
    infos = registry.list_runs()
    missing = sorted(set(registry.runs) - {i.name for i in infos})
    if missing:
        raise FileNotFoundError(f"Predictor: {missing[0]} is not a run directory (no config.json)")
    specs = sorted({i.identity.get("spec") or i.encoder or "?" for i in infos})
    if len(specs) != 1:
        raise ValueError(
            f"Predictor: the runs were made with {len(specs)} encoders ({', '.join(specs)}): "
            "serve one encoder's runs, or name it (encoder=...)"
        )
    snow = [i for i in infos if i.side == "snow" and i.identity]
    if snow:  # every option of the features' encoder (window length, ELMo state, ...)
        fields = {"store": store, "device": device, "progress": False}
        return ExtractConfig.from_identity(snow[0].identity, **fields)
    return ExtractConfig(encoder=specs[0], store=store, device=device, progress=False)
