"""The job system's exceptions, mixed with builtins so callers can catch either; the service
maps them to HTTP status codes in one handler (api/errors.py)."""


class JobError(Exception):
    """Base class of the errors the job system raises on purpose."""


class JobNotFoundError(JobError, KeyError):
    """No job with that id (HTTP 404)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "job not found"


class InvalidJobError(JobError, ValueError):
    """A submission with bad parameters: params that do not fit their schema (HTTP 422)."""


class JobConflictError(InvalidJobError):
    """A submission the schema cannot refuse: params that fit it but not the command's own
    checks (a head that cannot model the task, the options of another method, an encoder spec
    no loader reads), or an Idempotency-Key already used for another request (HTTP 409)."""


class JobInputNotFoundError(InvalidJobError):
    """Params naming what is not there: a task's data, an input or spec file (HTTP 404)."""


class JobPathForbiddenError(InvalidJobError):
    """A path param outside the data directory and SNOWFIRE_ALLOWED_PATHS (HTTP 403)."""


class JobStateError(JobError, ValueError):
    """The job is in a state that does not allow the request, e.g. cancelling a done job (409)."""


class JobsDisabledError(JobError, RuntimeError):
    """The service runs without a data directory, so without a queue (HTTP 503)."""
