"""Pydantic models of POST /v1/predict and GET /v1/runs (their own file: the request models
of the other routes are schemas.py's)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator, model_validator

from .schemas import Text, Word, _not_null, exactly_one_of

#: A run's name: its path under the runs directory (GET /v1/runs).
RunName = Annotated[StrictStr, Field(min_length=1, max_length=512)]


class PredictRequest(BaseModel):
    """Runs to predict with and the examples, in exactly one form: `texts` (each split on
    white space), `pairs` (two texts each, for pair tasks) or `tokens` (words given, e.g. for
    a tagger). Every run named must read that form."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=exactly_one_of("texts", "pairs", "tokens"),
    )

    runs: list[RunName] = Field(
        min_length=1,
        description="run names (GET /v1/runs), each once",
        examples=[["sst2-linear"]],
    )
    texts: list[Text] | None = Field(
        None, description="one text per example", examples=[["a gripping , funny film ."]]
    )
    pairs: list[tuple[Text, Text]] | None = Field(None, description="[a, b] per example")
    tokens: list[Annotated[list[Word], Field(json_schema_extra={"minItems": 1})]] | None = Field(
        None, description="words per example (at least one each)"
    )
    _given = field_validator("texts", "pairs", "tokens", mode="before")(_not_null)

    @model_validator(mode="after")
    def _exactly_one(self) -> PredictRequest:
        given = [n for n in ("texts", "pairs", "tokens") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of 'texts', 'pairs' or 'tokens' (got {given or 'none'})"
            )
        return self


class Span(BaseModel):
    type: str = Field(description="the entity type (PER of B-PER)")
    start: int = Field(description="first word")
    end: int = Field(description="one past the last word")
    text: str = Field(description="its words, joined by spaces")


class Prediction(BaseModel):
    """One example's answer: `label` and `probabilities` (classification), `score`
    (regression), or `tags` and, for BIO tags, `spans` (tagging)."""

    label: str | None = None
    probabilities: dict[str, float] | None = Field(None, description="softmax per label")
    score: float | None = None
    tags: list[str] | None = None
    spans: list[Span] | None = None


class RunPredictions(BaseModel):
    run: str
    side: Literal["snow", "fire"] = Field(description="snow: a ❄️ head; fire: a 🔥 run")
    kind: str = Field(description="the head (❄️) or the method (🔥: full, adapter, lora, bitfit)")
    task: str
    task_kind: Literal["classification", "regression", "tagging"]
    predictions: list[Prediction] = Field(description="one per example, in order")


class PredictResponse(BaseModel):
    runs: list[RunPredictions] = Field(description="one per run named, in that order")
    cached: list[bool] | None = Field(
        None,
        description="with ❄️ runs: true where the example's features were already stored "
        "(no encoder time); absent without ❄️ runs",
    )
    encoded: int = Field(description="examples the encoder computed for this request")
    seconds: float = Field(description="time taken by the service")


class RunSummary(BaseModel):
    """A run the service may serve (status ready), or why not."""

    name: str = Field(description="what POST /v1/predict names it by")
    side: Literal["snow", "fire"]
    kind: str = Field(description="the head (❄️) or the method (🔥)")
    task: str
    task_kind: str | None
    input: Literal["texts", "pairs"] | None = Field(
        description="the form it reads: texts (or tokens), or pairs"
    )
    metric: str | None = Field(description="the task's metric")
    score: float | None = Field(description="the run's score on `split` (its metrics.json)")
    split: str | None
    size_bytes: int = Field(description="bytes the run keeps to predict (its weights)")
    encoder: str | None = Field(description="the encoder it was made with")
    status: Literal["ready", "unfinished", "other-encoder"]
    reason: str | None = Field(description="why it is not ready")
    memory_bytes: int | None = Field(
        description="bytes it holds in the service once loaded (🔥 full: its whole model; "
        "shared-encoder runs: their own parts; the shared encoder is listed once)"
    )


class RunList(BaseModel):
    runs: list[RunSummary]
    shared_encoder_bytes: int | None = Field(
        description="the shared encoder of the adapter, LoRA and BitFit runs, once loaded"
    )
