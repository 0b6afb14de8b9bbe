"""The job system: a SQLite queue on the data directory, workers that claim jobs of one kind
and run each in a child process, and `snowfire up` to run them all on one host. No web
framework here: api/ serves the routes over it.

    queue = JobQueue(Home.resolve(DIR).queue)
    job = queue.submit("train", validate_params("train", params, home, job_id))
    Worker(home, "train").run()          # claims, heartbeats, runs `jobs.runner`, completes

The kinds and what each runs: kinds.py. Parameters (checked at submission): params.py, which
needs pydantic and is imported only when its names are first used, so that a worker and the
runner of a job load neither pydantic nor a web framework. Starting and stopping processes (a
free port, waiting for /healthz, SIGTERM then SIGKILL): processes.py, for the workers, `up`,
the demo, the scripts, the benchmarks and the tests.
"""

from snowfire.options import lazy_exports

from .errors import (
    InvalidJobError,
    JobConflictError,
    JobError,
    JobInputNotFoundError,
    JobNotFoundError,
    JobPathForbiddenError,
    JobsDisabledError,
    JobStateError,
)
from .home import HOME_ENV, Home
from .joblog import progress_of, read_tail, tail_lines
from .kinds import JOB_KINDS, JobKind, job_kind
from .launcher import run_up
from .processes import free_port, stop_process, stop_processes, wait_healthy
from .queue import FINAL, STATUSES, Job, JobQueue, new_job_id
from .ray_jobs import RayDispatch
from .worker import WorkerConfig, check_worker, run_worker

__all__ = [
    "FINAL",
    "HOME_ENV",
    "JOB_KINDS",
    "STATUSES",
    "Home",
    "InvalidJobError",
    "Job",
    "JobConflictError",
    "JobError",
    "JobInputNotFoundError",
    "JobKind",
    "JobNotFoundError",
    "JobPathForbiddenError",
    "JobQueue",
    "JobStateError",
    "JobsDisabledError",
    "RayDispatch",
    "WorkerConfig",
    "check_worker",
    "describe_validation",
    "free_port",
    "job_kind",
    "new_job_id",
    "params_model",
    "progress_of",
    "read_tail",
    "run_up",
    "run_worker",
    "stop_process",
    "stop_processes",
    "tail_lines",
    "validate_params",
    "wait_healthy",
]

#: loaded on first use: params.py needs pydantic, which a worker and a job's runner never load
__getattr__ = lazy_exports(
    __name__,
    {
        "describe_validation": ".params:describe_validation",
        "params_model": ".params:params_model",
        "validate_params": ".params:validate_params",
    },
)
