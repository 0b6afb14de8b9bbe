"""Why a prediction was refused: one exception per reason, each mixed with the builtin it is
a case of; the service maps each to its HTTP status in one place (api/errors.py)."""

from __future__ import annotations


class ServingError(Exception):
    """Base of the predictor's refusals."""


class RunNotFoundError(ServingError, LookupError):
    """No run of that name is registered (404)."""


class RunNotReadyError(ServingError, RuntimeError):
    """The run exists but is not finished: no metrics.json, or its weights are missing (409)."""


class RunEncoderError(ServingError, ValueError):
    """The run was made with another encoder than the one the predictor loaded (409)."""


class InputFormError(ServingError, ValueError):
    """The input is not in the form a named run's task reads: pairs for a pair task, texts
    or words for a single-text one; or it is empty (422)."""


class PredictBusyError(ServingError, RuntimeError):
    """The compute thread's queue is full: refused at once, before waiting (429)."""

    def __init__(self, waiting: int) -> None:
        super().__init__(f"{waiting} predictions are already waiting for the compute thread")
        self.waiting = waiting


class PredictTimeoutError(ServingError, TimeoutError):
    """The request's deadline passed before its predictions were computed (504)."""
