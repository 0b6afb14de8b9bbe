"""Pydantic models at the HTTP boundary: what the service accepts and what it answers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from snowfire.cache import POOLS, WIRE_FORMAT
from snowfire.extractor import PAIR_ENCODINGS
from snowfire.tasks import TEXT_PATTERN, WORD_PATTERN, WORDS_PATTERN, integral, text_fault

#: A JSON-Schema integer: an int or an integral float (2.0), not a bool, a string or 2.5
#: (a bound goes before the validator, or pydantic leaves it out of the JSON schema).
Integer = Annotated[StrictInt, BeforeValidator(integral)]


def keeps_text_rule(value: str) -> str:
    """The text rule (tasks/text_rule.py) as a pydantic validator: a NUL or an unpaired
    surrogate is refused naming the character (the field is named by pydantic's path)."""
    fault = text_fault(value)
    if fault:
        raise ValueError(fault)
    return value


#: Any string of a request: the text rule (every body is also checked whole, api/body.py).
RuleText = Annotated[
    StrictStr,
    AfterValidator(keeps_text_rule),
    Field(json_schema_extra={"pattern": TEXT_PATTERN}),
]
#: A text: the rule, and at least one character that is not white space (else it has no
#: words). Every model of texts to encode (embed, predict) says a text with this type.
Text = Annotated[
    StrictStr,
    AfterValidator(keeps_text_rule),
    Field(json_schema_extra={"pattern": WORDS_PATTERN}),
]
#: A word given as is: the rule, not empty, no white space. The route checks the last two
#: (api/embed_routes.py, naming the text); the schema says all, so a client knows before it
#: asks.
Word = Annotated[
    StrictStr,
    AfterValidator(keeps_text_rule),
    Field(json_schema_extra={"pattern": WORD_PATTERN}),
]

#: Layer indices to read (default all): at least one, none negative.
Layers = Annotated[
    list[Annotated[StrictInt, Field(ge=0), BeforeValidator(integral)]] | None,
    Field(min_length=1, description="layer indices; default all"),
]
#: Reduce each example to one row before sending (mean or max over its word pieces, special
#: tokens left out; first: its first token; cls: its [CLS] state, refused where the first token
#: is a word piece); none: every token's features. The pools are cache.POOLS.
if TYPE_CHECKING:  # a Literal built at run time is opaque to the type checker: a str to it
    PoolName = str
else:
    _POOL_NAMES = ("none", *POOLS)
    PoolName = Literal[_POOL_NAMES]
Pool = Annotated[
    PoolName,
    Field(
        description="none: every token; mean or max over each example's word pieces "
        "(specials left out); first: its first token; cls: its [CLS] state (a 409 where the "
        "first token is not a special token, e.g. ELMo)"
    ),
]


def exactly_one_of(*names: str):
    """A json_schema_extra for "exactly one of these fields, none of them null": the fields
    lose their null branch and the object gets a oneOf of required sets."""

    def extra(schema: dict[str, Any]) -> None:
        for name in names:
            prop = schema["properties"][name]
            branches = [b for b in prop.pop("anyOf", []) if b.get("type") != "null"]
            if branches:
                prop.update(branches[0])
            prop.pop("default", None)
        schema["oneOf"] = [{"required": [name]} for name in names]

    return extra


def _features_schema(schema: dict[str, Any]) -> None:
    """FeaturesRequest's checks as JSON Schema: exactly one of indices and keys, and
    pool_sides true only with a pool given (if/then)."""
    exactly_one_of("indices", "keys")(schema)
    schema["if"] = {"properties": {"pool_sides": {"const": True}}, "required": ["pool_sides"]}
    schema["then"] = {"properties": {"pool": {"enum": list(POOLS)}}, "required": ["pool"]}


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("null is not a value here: leave the field out")
    return value


class Limits(BaseModel):
    max_json_values: int = Field(description="feature values one JSON response may hold")
    max_body_bytes: int = Field(description="bytes one safetensors response may hold")
    max_request_bytes: int = Field(description="bytes one request body may hold (413 beyond)")
    max_in_flight: int = Field(description="requests handled at once (429 beyond)")
    embed_max_queue: int = Field(description="embed requests waiting for the encoder (429 beyond)")
    predict_max_queue: int = Field(
        description="predict requests waiting for the compute thread (429 beyond)"
    )


class Threads(BaseModel):
    """The service's torch threads and why (`options.ThreadBudget`)."""

    threads: int = Field(description="torch threads of the embed encoder")
    cores: int = Field(description="cores available: min(CPU affinity, cgroup CPU quota)")
    affinity: int | None = Field(description="CPUs in the process's affinity mask")
    quota: float | None = Field(description="its cgroup's CPU quota in CPUs (none: no limit)")
    share: int = Field(description="torch processes its launcher split the cores among")
    override: str | None = Field(description="what fixed the count (e.g. SNOWFIRE_THREADS=2)")
    why: str = Field(description="the count and where it came from, in words")


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    store: str = Field(description="the store directory served")
    featuresets: int = Field(description="number of feature sets in the store")
    version: str = Field(description="snowfire version")
    store_format: int = Field(description="store format version this service reads")
    limits: Limits
    threads: Threads


class FeatureSetSummary(BaseModel):
    """`FeatureSetInfo.summary()`."""

    id: str
    encoder: dict[str, Any]
    encoder_id: str
    task: str | None
    split: str | None
    num_examples: int
    num_layers: int
    dim: int
    dtype: str


class FeatureSetDetail(FeatureSetSummary):
    manifest: dict[str, Any] = Field(description="everything that made the set")


class FeatureSetKeys(BaseModel):
    id: str
    keys: list[str] = Field(description="example keys, in feature-set order")


class FeatureSetLengths(BaseModel):
    id: str
    lengths: list[int] = Field(
        description="tokens of each example, in the set's order: what a client sizes its "
        "pages of features by (cache/paging.py)"
    )


class FeatureSetOrder(BaseModel):
    id: str
    order: list[int] = Field(
        description="feature-set indices in on-disk order: reading consecutive runs of it is "
        "fast (a streaming trainer shuffles blocks of it)"
    )


class FeatureSetTexts(BaseModel):
    id: str
    texts: list[dict[str, Any]] = Field(description='words of each example: {"a": [...], "b"}')


class Mix(BaseModel):
    """A scalar mix applied by the service: `gamma * sum_l weights[l] * h_l` over the layers
    read (`weights`: the normalised ones, a run's scalar_mix.json "mix"; one per layer)."""

    model_config = ConfigDict(extra="forbid")

    weights: list[float] = Field(min_length=1, description="one per layer read, in order")
    gamma: float = Field(1.0, description="the mix's scale")


class FeaturesRequest(BaseModel):
    """Select examples by position (`indices`) or by key (`keys`), exactly one; all layers
    unless `layers` names some; optionally mixed (`mix`) and/or pooled (`pool`) by the
    service. Pooled, example i owns rows offsets[i]:offsets[i+1] of `features` (one row, or
    two with `pool_sides`: type_ids 0 = text a, 1 = text b); mixed, `features` has one layer
    and `layers` names the layers mixed. Reduced features are float32."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=_features_schema,
    )

    indices: list[Integer] | None = Field(
        None, description="positions in the feature set", examples=[[0, 1, 2]]
    )
    keys: list[RuleText] | None = Field(None, description="example keys")
    layers: Layers = None
    pool: Pool = "none"
    pool_sides: bool = Field(
        False, description="pool each side of a pair on its own: two rows per example (a, b)"
    )
    mix: Mix | None = Field(None, description="mix the layers read into one before sending")
    _given = field_validator("indices", "keys", mode="before")(_not_null)

    @model_validator(mode="after")
    def _exactly_one(self) -> FeaturesRequest:
        if self.indices is None and self.keys is None:
            raise ValueError("give exactly one of 'indices' or 'keys' (got neither)")
        if self.indices is not None and self.keys is not None:
            raise ValueError("give exactly one of 'indices' or 'keys' (got both)")
        if self.pool_sides and self.pool == "none":
            raise ValueError(f"pool_sides needs a pool ({', '.join(POOLS)}), got pool 'none'")
        return self


class FeaturesJSON(BaseModel):
    """The JSON form of an `ExampleBatch` (small requests only)."""

    format: Literal["snowfire-features/1"] = WIRE_FORMAT
    featureset: str
    dtype: str
    layers: list[int]
    keys: list[str]
    shape: list[int] = Field(description="(N tokens, layers, dim) of `features`")
    features: list[list[list[float]]] = Field(description="(N, layers, dim)")
    offsets: list[int] = Field(description="(n + 1,) example i owns rows offsets[i]:offsets[i+1]")
    word_ids: list[int] = Field(description="(N,) word within its segment, -1 for specials")
    type_ids: list[int] = Field(description="(N,) 0 first text, 1 second text")
    pair_starts: list[int] = Field(description="(n,) token where text b starts, -1 if none")


class ErrorBody(BaseModel):
    detail: str = Field(description="what was wrong")
    error: str | None = Field(None, description="the store's exception class, when it raised")


class EmbedRequest(BaseModel):
    """Texts to embed: exactly one of `texts` (split on whitespace), `pairs` (two texts each)
    or `tokens` (words given). Examples already in the store are read; the rest are computed by
    the service's encoder and stored where `snowfire extract` would store them."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=exactly_one_of("texts", "pairs", "tokens"),
    )

    texts: list[Text] | None = Field(
        None, description="one text per example", examples=[["A man plays a guitar ."]]
    )
    pairs: list[tuple[Text, Text]] | None = Field(None, description="[a, b] per example")
    tokens: list[Annotated[list[Word], Field(json_schema_extra={"minItems": 1})]] | None = Field(
        None, description="words per example (at least one each)"
    )
    _given = field_validator("texts", "pairs", "tokens", mode="before")(_not_null)
    layers: Layers = None
    pool: Pool = "none"
    pair_encoding: Literal[PAIR_ENCODINGS] = Field(  # type: ignore[valid-type]
        "joint", description="pairs as one sequence (joint) or each text on its own"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> EmbedRequest:
        given = [n for n in ("texts", "pairs", "tokens") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of 'texts', 'pairs' or 'tokens' (got {given or 'none'})"
            )
        return self


class EmbedJSON(FeaturesJSON):
    """The JSON answer of /v1/embed: the features of the texts (pooled as asked: then example
    i owns row i), with the pool they are stored in and which were already there."""

    format: Literal["snowfire-features/1"] = WIRE_FORMAT
    featureset: str | None = None  # type: ignore[assignment]  # texts may span no one set
    encoder_id: str = Field(description="the pool the examples are stored in")
    cached: list[bool] = Field(description="true where the example was already in the store")
    pool: PoolName
