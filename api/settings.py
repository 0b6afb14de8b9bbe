"""Service settings: a `snowfire serve` or `up` flag, else the environment (prefix SNOWFIRE_),
else the default."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from snowfire.extractor import TOKEN_BUDGET

#: Default cap on the feature values of one JSON response (N tokens x layers x dim).
MAX_JSON_VALUES = 100_000
#: Default cap on the bytes of one safetensors response body.
MAX_BODY_BYTES = 256 * 2**20
#: Default cap on the bytes of one request body (api/body.py): 256 texts of 16,384 words, a
#: read of ~800,000 indices; a 60 MB body is refused from its Content-Length.
MAX_REQUEST_BYTES = 8 * 2**20
#: Default bound on the requests handled at once, and on the embed requests waiting for the
#: encoder (api/limits.py).
MAX_IN_FLIGHT = 32
EMBED_MAX_QUEUE = 16
#: Default bound on the POST /v1/predict requests waiting for the compute thread.
PREDICT_MAX_QUEUE = 16
#: Settings read from the environment only, never a flag: a flag's value shows in `ps`.
ENV_ONLY = ("api_keys",)


class Settings(BaseSettings):
    """What `snowfire serve` needs; every field can be set as SNOWFIRE_<NAME>, and each but
    `ENV_ONLY` by its flag (`--name`, derived from the field: cli/flags.py)."""

    model_config = SettingsConfigDict(env_prefix="SNOWFIRE_", frozen=True)

    home: Path | None = Field(
        None,
        description="the data directory shared with the workers (store, runs, job queue); "
        "without it the service serves a store and no jobs",
    )
    store: str = Field(
        "store",
        description="the store: a directory or s3://bucket/prefix (with a home: HOME/store "
        "unless given)",
    )
    host: str = Field("127.0.0.1", description="interface uvicorn binds")
    port: int = Field(8000, ge=0, le=65535, description="TCP port (0: any free port)")
    log_level: Literal["critical", "error", "warning", "info", "debug", "trace"] = Field(
        "info", description="uvicorn log level (warning hides access logs)"
    )
    max_json_values: int = Field(
        MAX_JSON_VALUES,
        gt=0,
        description="413 when an application/json response would hold more feature values "
        "(tokens x layers x dim) than this; JSON is for small requests only",
    )
    max_body_bytes: int = Field(
        MAX_BODY_BYTES,
        gt=0,
        description="413 when an application/x-safetensors body would be larger than this",
    )
    max_request_bytes: int = Field(
        MAX_REQUEST_BYTES,
        gt=0,
        description="413 when a request body is larger than this: refused from its "
        "Content-Length before it is read, or as soon as a streamed body passes it",
    )
    read_chunk_examples: int = Field(
        256,
        gt=0,
        description="examples read from the store at a time while a JSON or reduced (mix, "
        "pool) response is checked against its cap (bounds memory to the cap plus one chunk); "
        "an unreduced safetensors answer is sized before reading and streamed instead",
    )

    encoder: str | None = Field(
        None,
        description="encoder for POST /v1/embed (e.g. minilm, hf:DIR): texts missing from the "
        "store are computed with it and stored; none: /v1/embed answers 503",
    )
    device: str | None = Field(None, description="embed encoder device (default: cuda if any)")
    embed_max_texts: int = Field(256, gt=0, description="413 above this many texts per request")
    embed_max_words: int = Field(
        16384, gt=0, description="413 above this many words (both texts of pairs) per request"
    )
    embed_token_budget: int = Field(
        TOKEN_BUDGET,
        gt=0,
        description="padded tokens per encoder batch (extract's --token-budget: the same "
        "budget gives the same batches, so the same bytes)",
    )
    embed_max_wait_ms: float = Field(
        5.0, ge=0, description="how long the encoder waits for more requests to batch together"
    )
    max_in_flight: int = Field(
        MAX_IN_FLIGHT,
        gt=0,
        description="requests handled at once (all but /healthz and /metrics); one more is "
        "answered 429 with Retry-After at once (api/limits.py); about the cores' number keeps "
        "the accepted requests' latency near the unloaded one",
    )
    embed_max_queue: int = Field(
        EMBED_MAX_QUEUE,
        gt=0,
        description="POST /v1/embed requests waiting for the encoder at once (cache hits do not "
        "wait); one more is answered 429 with Retry-After",
    )
    runs: Path | None = Field(
        None,
        description="the runs POST /v1/predict serves, by their path under it (with a home: "
        "HOME/runs unless given; none: no runs); predictions need --encoder",
    )
    predict_max_runs: int = Field(
        8, gt=0, description="413 above this many runs named in one POST /v1/predict"
    )
    predict_max_queue: int = Field(
        PREDICT_MAX_QUEUE,
        gt=0,
        description="POST /v1/predict requests waiting for the compute thread at once; one more "
        "is answered 429 with Retry-After",
    )
    predict_timeout: float = Field(
        60.0,
        gt=0,
        description="seconds a POST /v1/predict may take, encoder pass included; past it the "
        "request is answered 504 (one still waiting is dropped, not computed)",
    )
    retry_after: int = Field(
        1, ge=1, description="seconds a refused request is told to wait (Retry-After, on a 429)"
    )

    ray: str | None = Field(
        None,
        description="run the jobs of `home` as Ray tasks on this cluster (an address, auto, or "
        "local to start one) instead of `snowfire worker` processes",
    )
    ray_slots: int = Field(4, gt=0, description="jobs of each kind running at once on Ray")

    api_keys: str | None = Field(
        None,
        description="comma-separated API keys, `KEY` (read) or `KEY:write` (may submit and "
        "cancel jobs); none: the service is open",
    )
    api_keys_file: Path | None = Field(
        None, description="a file of API keys: one `KEY [read|write]` per line, # comments"
    )
    cors_origins: str | None = Field(
        None, description="comma-separated origins allowed by CORS (none: CORS off)"
    )

    @model_validator(mode="before")
    @classmethod
    def _store_in_home(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("home") and not data.get("store"):
            data = {**data, "store": str(Path(data["home"]) / "store")}
        if isinstance(data, dict) and data.get("home") and not data.get("runs"):
            data = {**data, "runs": Path(data["home"]) / "runs"}
        if isinstance(data, dict) and isinstance(data.get("store"), Path):
            data = {**data, "store": str(data["store"])}
        return data
