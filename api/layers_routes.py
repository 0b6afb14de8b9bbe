"""GET /v1/featuresets/{id}/layers?task=...: which layer of this feature set's encoder carries
the task? A layer sweep (`snowfire layers`, compare/layers/) answered from its cache, or run as
a `layers` job when it has not been computed yet. Thin: the query is checked as a submitted
layers job's params are (jobs.validate_params: the same 422s), whose `out` is HOME/layers/<the
sweep's content key>; a finished sweep there is the answer, read without training.

    200  {"status": "done", "key", "featureset", "task", "result": layers.json, "plot"}
    202  {"status": "queued" | "running", ..., "job": the job}; Location: /v1/jobs/{id};
         GET the same URL again (the same job while it runs: one job per key)
    409  the latest job of this key failed or was cancelled (its error); `retry=true` queues
         a new one
    404  unknown feature set, or the task's files; 403 a path outside HOME; 409 options that
         fit the schema but not the sweep; 422 a query that does not fit it (the reason);
         503 no data directory (the sweep runs as a job of HOME's queue)

The query's options are the sweep's own (compare.LayersConfig's fields that change its answer,
with their help, bounds and choices), derived from the layers job's parameter model.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from snowfire.jobs import FINAL, JOB_KINDS, JobStateError, new_job_id, params_model, validate_params
from snowfire.rundir import LAYERS
from snowfire.tasks import load_spec_file

from .deps import SettingsDep, StoreDep
from .job_routes import HomeDep, QueueDep
from .job_schemas import JobDetail
from .schemas import ErrorBody

router = APIRouter(tags=["layers"])

#: The sweep's params the route fills itself (the path's set, the service's store) or that
#: name no answer (where it runs); the query takes every other field of the config.
_FIXED = ("store", "encoder", "featureset", "data", "pair_encoding", "deadline")
_LIVE = ("queued", "running")


def _query_model() -> type[BaseModel]:
    """The query: the layers job's params but those of `_FIXED` and the volatile ones, with
    the config's help as descriptions; a spec file's path (HOME's) for a user's task; and
    `retry`. Not strict: a query's values come as text."""
    config = JOB_KINDS["layers"].config()
    helps = {f.name: f.metadata["help"] for f in dataclasses.fields(config)}
    volatile = {f.name for f in dataclasses.fields(config) if f.metadata.get("volatile")}
    fields: dict[str, Any] = {}
    for name, info in params_model("layers").model_fields.items():
        if name in _FIXED or name in volatile:
            continue
        fields[name] = (info.annotation, FieldInfo.merge_field_infos(info, description=helps[name]))
    fields["task_spec"] = (
        str | None,
        Field(None, description="your own task: a spec file under the data directory (HOME)"),
    )
    fields["retry"] = (
        bool,
        Field(False, description="queue the sweep again after its latest job failed"),
    )
    return create_model("LayersQuery", __config__=ConfigDict(extra="forbid"), **fields)


LayersQuery = _query_model()


class LayersAnswer(BaseModel):
    """A sweep's state: its answer when done, else the job computing it."""

    status: Literal["done", "queued", "running"]
    key: str = Field(description="the sweep's content key (HOME/layers/<key>/)")
    featureset: str
    task: str = Field(description="the task probed (its name)")
    result: dict[str, Any] | None = Field(
        None,
        description="done: layers.json, what `snowfire layers` writes (the recommendation in "
        "words, every layer's probes with intervals, mixes, weights, selectivity)",
    )
    plot: str | None = Field(None, description="done: the URL of the sweep's plot (PNG)")
    job: JobDetail | None = Field(None, description="queued or running: the job computing it")


def _error(text: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": text}


@router.get(
    "/v1/featuresets/{fs_id}/layers",
    response_model=LayersAnswer,
    responses={
        202: {"model": LayersAnswer, "description": "not computed yet: the job computing it"},
        403: _error("a path outside the data directory (a task spec, the service's store)"),
        404: _error("unknown feature set, or the task's data files"),
        409: _error(
            "the latest job of this sweep failed or was cancelled (retry=true), or options "
            "that fit the schema but not the sweep (the reason)"
        ),
        422: _error("bad query, task or options; features of a split missing (the reason)"),
        503: _error("no data directory: the sweep runs as a job"),
    },
)
def featureset_layers(
    fs_id: str,
    query: Annotated[LayersQuery, Query()],  # type: ignore[valid-type]
    store: StoreDep,
    settings: SettingsDep,
    home: HomeDep,
    queue: QueueDep,
    response: Response,
) -> LayersAnswer:
    """Which layer of this feature set's encoder carries `task`: per-layer and cumulative
    probes with seeds and intervals, the expected layer, selectivity and the words."""
    store.get_featureset(fs_id)  # 404 before anything else
    asked = query.model_dump(exclude_unset=True)  # type: ignore[attr-defined]
    retry = asked.pop("retry", False)
    job_id = new_job_id()
    params = validate_params(
        "layers", asked | {"featureset": fs_id, "store": settings.store}, home, job_id
    )
    out = Path(params["out"])
    task = _task_name(params)
    shown = {"key": out.name, "featureset": fs_id, "task": task}
    if (out / LAYERS).is_file():
        result = json.loads((out / LAYERS).read_text())
        return LayersAnswer(status="done", result=result, plot=plot_url(out.name), **shown)
    mine = [j for j in queue.list(kind="layers", limit=1000) if j.params.get("out") == str(out)]
    job = next((j for j in mine if j.status in _LIVE), None)
    if job is None:
        if mine and mine[0].status in ("failed", "cancelled") and not retry:
            raise JobStateError(
                f"the sweep's latest job {mine[0].id} {mine[0].status}: "
                f"{mine[0].error or 'no error recorded'}; GET with retry=true to queue it again"
            )
        finished = sum(j.status in FINAL for j in mine)  # one key per attempt: GETs at once
        job = queue.submit(
            "layers", params, job_id=job_id, key=f"layers/{out.name}/{finished}", request=params
        )
    response.status_code = 202
    response.headers["Location"] = f"/v1/jobs/{job.id}"
    return LayersAnswer(status=job.status, job=JobDetail.of(job, home), **shown)


def _task_name(params: dict[str, Any]) -> str:
    """The task's name: registered, or the one its spec file gives (checked valid already)."""
    if params.get("task") is not None:
        return params["task"]
    return str(load_spec_file(params["task_spec"])["name"])


def plot_url(key: str) -> str:
    """Where the page and a client fetch a finished sweep's plot."""
    return f"/ui/layers/{key}/layers.png"
