"""The job endpoints. Thin: validate, ask the queue, shape the answer; errors.py maps the
queue's exceptions to status codes.

POST /v1/jobs                  {"kind": ..., "params": {...}} -> 202 JobDetail (queued)
GET  /v1/jobs[?kind=&status=&limit=]   newest first
GET  /v1/jobs/{id}[?tail=N]    status, progress, log tail, metrics when done
POST /v1/jobs/{id}/cancel      queued: cancelled at once; running: flagged, its worker stops it
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request, Response

from snowfire.jobs import Home, JobQueue, JobsDisabledError, new_job_id, validate_params

from .job_schemas import JobDetail, JobRequest, JobSummary, Kind, Status
from .schemas import ErrorBody

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])


def get_home(request: Request) -> Home:
    home = getattr(request.app.state, "home", None)
    if home is None:
        raise JobsDisabledError(
            "this service has no data directory, so no job queue: start it with "
            "`snowfire serve --home DIR` (or SNOWFIRE_HOME)"
        )
    return home


def get_queue(request: Request, home: Annotated[Home, Depends(get_home)]) -> JobQueue:
    return request.app.state.queue  # opened in the app's lifespan


HomeDep = Annotated[Home, Depends(get_home)]
QueueDep = Annotated[JobQueue, Depends(get_queue)]


def _errors(**codes: str) -> dict:
    return {int(c[1:]): {"model": ErrorBody, "description": t} for c, t in codes.items()}


@router.post(
    "",
    status_code=202,
    response_model=JobDetail,
    responses=_errors(
        e403="this API key may read, not submit; or a path param outside the data directory "
        "(and SNOWFIRE_ALLOWED_PATHS)",
        e404="a task's data, an input file or a spec file the params name is not there",
        e409="params that fit the schema but not the command (a head that cannot model the "
        "task, another method's options, an encoder spec no loader reads), or an "
        "Idempotency-Key used for another request",
        e422="the body does not fit the schema: the kind, a param's name or type (the reason)",
        e503="no data directory",
    ),
)
def submit_job(
    body: JobRequest,
    queue: QueueDep,
    home: HomeDep,
    response: Response,
    idempotency_key: Annotated[
        str | None,
        Header(
            max_length=200,
            description="a key of the client's choosing: a retry with the same key and body "
            "returns the job the first request queued (header Idempotent-Replayed: true) "
            "instead of queueing it twice; the same key with another body is a 422",
        ),
    ] = None,
) -> JobDetail:
    """Queue a job; its params are checked now, not when a worker picks it up. The 202 is
    sent once the job is committed to the queue."""
    job_id = new_job_id()
    params = validate_params(body.kind, body.params, home, job_id)
    job = queue.submit(
        body.kind, params, job_id=job_id, key=idempotency_key, request=body.model_dump()
    )
    if job.id != job_id:
        response.headers["Idempotent-Replayed"] = "true"
    return JobDetail.of(job, home)


@router.get("", response_model=list[JobSummary])
def list_jobs(
    queue: QueueDep,
    kind: Kind | None = None,
    status: Status | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[JobSummary]:
    return [JobSummary.of(job) for job in queue.list(kind=kind, status=status, limit=limit)]


@router.get("/{job_id}", response_model=JobDetail, responses=_errors(e404="unknown job"))
def get_job(
    job_id: str,
    queue: QueueDep,
    home: HomeDep,
    tail: Annotated[int, Query(ge=0, le=1000, description="log lines")] = 20,
) -> JobDetail:
    return JobDetail.of(queue.get(job_id), home, tail)


@router.post(
    "/{job_id}/cancel",
    response_model=JobDetail,
    responses=_errors(e404="unknown job", e409="the job already finished"),
)
def cancel_job(job_id: str, queue: QueueDep, home: HomeDep) -> JobDetail:
    return JobDetail.of(queue.cancel(job_id), home)
