"""Pydantic models of the job endpoints: what a client submits and what it is shown."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from snowfire.jobs import JOB_KINDS, STATUSES, Home, Job, progress_of, read_tail, tail_lines

if TYPE_CHECKING:  # a Literal built at run time is opaque to the type checker: a str to it
    Kind = str
    Status = str
else:
    Kind = Literal[tuple(JOB_KINDS)]
    Status = Literal[STATUSES]


class JobRequest(BaseModel):
    """A job to queue: its kind and the matching command's options by name."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "kind": "train",
                    "params": {"encoder": "minilm", "task": "stsb", "head": "esim"},
                }
            ]
        },
    )

    kind: Kind
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="extract: `snowfire extract` options; train: `snowfire train` options; "
        "finetune: FinetuneConfig fields. Defaults: store HOME/store, out HOME/runs/<id>, "
        "data HOME/tasks",
    )


def _time(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=timezone.utc)


class JobSummary(BaseModel):
    id: str
    kind: Kind
    status: Status
    attempts: int = Field(description="times a worker claimed it")
    created_at: datetime
    started_at: datetime | None = Field(description="the latest claim")
    finished_at: datetime | None
    cancel_requested: bool
    worker: str | None = Field(description="the worker of the latest claim")
    error: str | None

    @classmethod
    def of(cls, job: Job) -> JobSummary:
        return cls(
            id=job.id,
            kind=job.kind,
            status=job.status,
            attempts=job.attempts,
            created_at=_time(job.created_at),
            started_at=_time(job.started_at),
            finished_at=_time(job.finished_at),
            cancel_requested=job.cancel_requested,
            worker=job.worker,
            error=job.error,
        )


class JobDetail(JobSummary):
    params: dict[str, Any] = Field(description="the resolved parameters")
    progress: float | None = Field(
        description="0..1: 1 when done, else the latest progress bar in the log; null if none"
    )
    log: list[str] = Field(description="the last lines of HOME/jobs/<id>.log")
    metrics: dict[str, Any] | None = Field(
        description="when done: train/finetune metrics.json ({split: {metric: value}}); "
        "extract {'featuresets': [summaries]}"
    )

    @classmethod
    def of(cls, job: Job, home: Home | None = None, tail: int = 20) -> JobDetail:
        text = read_tail(home.log(job.id)) if home is not None else ""
        progress = 1.0 if job.status == "done" else progress_of(text)
        if job.status == "queued":
            progress = 0.0 if job.attempts == 0 else progress
        return cls(
            **JobSummary.of(job).model_dump(),
            params=job.params,
            progress=progress,
            log=tail_lines(text, tail),
            metrics=job.metrics,
        )
