"""Predictions of saved runs for texts sent now: `POST /v1/predict` and `snowfire.Predictor`.

One request names runs and gives examples in one form (texts, pairs or words). Then:

 1. each run is looked up (registry.py: 404 missing, 409 unfinished) and loaded once
    (models.py: 409 when made with another encoder than the one loaded), and the form is
    checked against each run's task (422: pairs for a pair task, texts or words otherwise);
 2. ❄️ runs: the examples' features are made once per encoder variant the runs read (pair
    encoding, storage dtype; usually one) by the embed worker (`EmbedWorker.features`): texts
    the store holds cost no encoder time (`cached`), the others are encoded together with other
    requests' misses and stored, as /v1/embed and `snowfire extract` store them. The features
    come with every layer any requested head reads, as the store holds them: a text just encoded
    straight from the encoder's arrays (cast as stored) while its segment is written, a text
    encoded lately from memory, the rest read from the store; every ❄️ head reads those arrays;
 3. on the compute thread (worker.py), each ❄️ head runs on its layers of those features in
    the batches `snowfire predict` forms for a file of these texts (heads.head_predictions),
    and each 🔥 run on the texts as `snowfire predict` runs it (finetune.predict_outputs):
    one code path, so the same texts give the same digits;
 4. answers.py turns each run's outputs into labels with probabilities, scores, or tags with
    their spans.
"""

from __future__ import annotations

import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Protocol

from snowfire.cache import identity_content
from snowfire.tasks import Example

from .answers import answers
from .errors import InputFormError, PredictTimeoutError, RunEncoderError
from .models import Loaded, Models
from .registry import RunInfo, RunRegistry
from .worker import ComputeThread

#: The forms a request's examples come in.
FORMS = ("texts", "pairs", "tokens")


@dataclass(frozen=True)
class RunAnswer:
    """One run's predictions for the request's examples, in order."""

    run: str
    side: str
    kind: str
    task: str
    task_kind: str
    predictions: list[dict[str, Any]]


@dataclass(frozen=True)
class PredictAnswer:
    """runs: one answer per run named, in the order named; cached: for ❄️ runs, whether each
    example's features were already stored (no encoder time), None when no ❄️ run was named;
    encoded: how many examples the encoder computed for this request."""

    runs: list[RunAnswer]
    cached: list[bool] | None
    encoded: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        """The body POST /v1/predict answers (`cached` left out without ❄️ runs)."""
        body = {
            "runs": [vars(run) for run in self.runs],
            "cached": self.cached,
            "encoded": self.encoded,
            "seconds": round(self.seconds, 6),
        }
        return {k: v for k, v in body.items() if v is not None}


class Observer(Protocol):
    """What a predictor reports per run of each request (the service's /metrics)."""

    def predicted(self, run: str, examples: int, hits: int | None, seconds: float) -> None: ...


def examples_of(
    texts: list[str] | None = None,
    pairs: list[tuple[str, str]] | None = None,
    tokens: list[list[str]] | None = None,
) -> tuple[list[Example], str]:
    """(examples, form) of exactly one of texts (split on white space, as `--input` splits
    a line), pairs or tokens (words as given); InputFormError naming the example otherwise."""
    given = {
        n: v for n, v in (("texts", texts), ("pairs", pairs), ("tokens", tokens)) if v is not None
    }
    if len(given) != 1:
        raise InputFormError(
            f"give exactly one of 'texts', 'pairs' or 'tokens' (got {sorted(given) or 'none'})"
        )
    ((form, values),) = given.items()
    if not values:
        raise InputFormError(f"{form}: no examples")
    out = []
    for i, value in enumerate(values):
        if form == "texts":
            a, b = str(value).split(), None
        elif form == "pairs":
            if len(value) != 2:
                raise InputFormError(f"pairs.{i}: expected two texts, got {len(value)}")
            a, b = str(value[0]).split(), str(value[1]).split()
        else:
            a, b = list(value), None
        if not a or (b is not None and not b):
            raise InputFormError(f"{form}.{i}: empty text (no words after splitting on spaces)")
        if any(not w or any(c.isspace() for c in w) for w in a + (b or [])):
            raise InputFormError(f"{form}.{i}: a word is empty or holds white space")
        out.append(Example(index=i, words_a=tuple(a), words_b=None if b is None else tuple(b)))
    return out, form


class Predictor:
    """Runs of a registry served over one encoder (the embed worker's) and one store.

    registry: where run names are looked up; store: where ❄️ features are kept (a text is
    encoded once, ever); embedder: the extractor's EmbedWorker (its encoder, its thread);
    device: where 🔥 models run; max_queue: requests waiting for the compute thread (one
    more: PredictBusyError); timeout: seconds a request may take, the encoder pass included;
    observer: told what each run predicted (metrics).
    """

    def __init__(
        self,
        registry: RunRegistry,
        store,
        embedder,
        *,
        device: str | None = None,
        max_queue: int | None = None,
        timeout: float = 60.0,
        observer: Observer | None = None,
    ) -> None:
        self.registry, self.store, self.embedder = registry, store, embedder
        config = embedder.config
        identity = embedder.encoder(config.pair_encoding).identity
        self.models = Models(config.encoder, identity, device or config.device)
        self.compute = ComputeThread(max_queue)
        self.timeout = timeout
        self.observer = observer

    def close(self) -> None:
        self.compute.close()

    # ------------------------------------------------------------------ the listing
    def listing(self) -> list[tuple[RunInfo, str, str | None, int | None]]:
        """(run, status, why not ready, bytes held when loaded) for every registered run;
        status "ready", "unfinished" or "other-encoder"."""
        memory = self.models.memory()
        out = []
        for info in self.registry.list_runs():
            if not info.finished:
                status, why = "unfinished", info.reason
            elif (why := self.models.status(info)) is not None:
                status = "other-encoder"
            else:
                status = "ready"
            out.append((info, status, why, memory.get(info.name)))
        return out

    # ------------------------------------------------------------------ a request
    def predict(
        self,
        runs: list[str],
        *,
        texts: list[str] | None = None,
        pairs: list[tuple[str, str]] | None = None,
        tokens: list[list[str]] | None = None,
        timeout: float | None = None,
    ) -> PredictAnswer:
        """Every named run's predictions for the examples (see the module docstring)."""
        started = time.monotonic()
        deadline = started + (self.timeout if timeout is None else timeout)
        examples, form = examples_of(texts, pairs, tokens)
        if not runs:
            raise InputFormError("runs: name at least one run (GET /v1/runs lists them)")
        if len(set(runs)) != len(runs):
            twice = sorted({r for r in runs if runs.count(r) > 1})
            raise InputFormError(f"runs: {twice[0]!r} is named twice")
        infos = [self.registry.get(name) for name in runs]
        for info in infos:
            _check_form(info, form)
        loaded = [self.models.get(info) for info in infos]
        snow = [run for run in loaded if run.info.side == "snow"]
        features, cached, encoded = self._features(snow, examples, deadline)

        def work() -> list[tuple[Loaded, list, list | None]]:
            return [(run, *self._outputs(run, examples, features)) for run in loaded]

        done = self.compute.run(work, deadline - time.monotonic())
        out = []
        for run, preds, probs in done:
            info = run.info
            out.append(
                RunAnswer(
                    run=info.name,
                    side=info.side,
                    kind=info.kind,
                    task=run.spec.name,
                    task_kind=run.spec.kind,
                    predictions=answers(run.spec, examples, preds, probs),
                )
            )
        seconds = time.monotonic() - started
        if self.observer is not None:
            hits = None if cached is None else sum(cached)
            for run in loaded:
                side_hits = hits if run.info.side == "snow" else None
                self.observer.predicted(run.info.name, len(examples), side_hits, seconds)
        return PredictAnswer(out, cached, encoded, seconds)

    def _features(self, snow: list[Loaded], examples: list[Example], deadline: float):
        """({(pair encoding, dtype): features of every example with the layers the ❄️ runs
        read}, which examples were stored already, how many the encoder computed)."""
        if not snow:
            return {}, None, 0
        from snowfire.extractor import TextInput

        inputs = [TextInput(e.words_a, e.words_b) for e in examples]
        groups: dict[tuple[str, str | None], list[Loaded]] = {}
        for run in snow:
            groups.setdefault((run.pair_encoding, run.dtype), []).append(run)
        features, cached, encoded = {}, [True] * len(examples), 0
        for (pair_encoding, dtype), runs in groups.items():
            encoder = self.embedder.encoder(pair_encoding)
            for run in runs:
                if identity_content(encoder.identity) != identity_content(run.info.identity):
                    raise RunEncoderError(
                        f"run {run.info.name!r} was made with another encoder than this "
                        f"service's {self.models.encoder} with pair encoding {pair_encoding}"
                    )
            keys = self.embedder.keys(inputs, pair_encoding, dtype)
            layers = (
                None
                if any(r.layers is None for r in runs)
                else sorted({x for r in runs for x in r.layers or ()})
            )
            try:
                batch, hits = self.embedder.features(
                    inputs,
                    keys,
                    pair_encoding,
                    layers,
                    timeout=max(deadline - time.monotonic(), 0.0),
                    dtype=dtype,
                )
            except FutureTimeout:
                raise PredictTimeoutError(
                    "the encoder did not compute the texts within the request's deadline"
                ) from None
            cached = [c and h for c, h in zip(cached, hits, strict=True)]
            encoded += len({k for k, h in zip(keys, hits, strict=True) if not h})
            features[pair_encoding, dtype] = batch
        return features, cached, encoded

    def _outputs(self, run: Loaded, examples: list[Example], features) -> tuple[list, list | None]:
        """(predictions, probabilities) of one run: the commands' own loops."""
        if run.info.side == "snow":
            from snowfire.heads import PREDICT_BATCH as HEAD_BATCH
            from snowfire.heads import batches_in_order, head_predictions

            batch = features[run.pair_encoding, run.dtype].with_layers(run.layers)
            return head_predictions(
                run.model, run.spec.kind, batches_in_order(batch, HEAD_BATCH), len(examples)
            )
        import torch

        from snowfire.finetune import PREDICT_BATCH, predict_outputs

        device = next(run.model.parameters()).device
        return predict_outputs(run.model, examples, PREDICT_BATCH, torch.device(device))


def _check_form(info: RunInfo, form: str) -> None:
    wants = "pairs" if info.pair else "texts or tokens"
    if (form == "pairs") != bool(info.pair):
        raise InputFormError(
            f"run {info.name!r} ({info.task}, {info.task_kind}) reads "
            f"{'pairs of texts' if info.pair else 'one text per example'}: send {wants}, "
            f"got {form}"
        )
