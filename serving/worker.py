"""The predictor's compute thread: every head and every 🔥 forward pass runs on it, one
request's work at a time, in arrival order; the encoder pass of ❄️ runs is the embed
worker's (extractor/embed.py), micro-batched across requests there.

Why one thread: torch already spreads one forward over the process's threads (its budget:
options/threads.py); two forwards at once would split the same cores and make both slower.
Why a request's examples are never merged into another request's forward: the examples that
share a batch change the last bits of every float of the output (the sums run in another
order), and an answer must not depend on who else asked at the same moment. A request's
examples are batched as `snowfire predict` batches a file holding them, so the service and
the command give the same numbers.

Bounds, as /v1/embed's (api/limits.py): at most `max_queue` requests wait for the thread
(one more: PredictBusyError at once, a 429); each request has a deadline, and one still
waiting when it passes is dropped (PredictTimeoutError) rather than computed for nobody.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from .errors import PredictBusyError, PredictTimeoutError

log = logging.getLogger(__name__)


@dataclass
class _Task:
    work: Callable[[], Any]
    deadline: float  # time.monotonic() after which nobody waits for it
    timeout: float
    done: Future = field(default_factory=Future)


class ComputeThread:
    """One thread running submitted work in order, with a bounded queue and deadlines."""

    def __init__(self, max_queue: int | None = None) -> None:
        if max_queue is not None and max_queue < 1:
            raise ValueError(f"max_queue: expected >= 1 or None, got {max_queue}")
        self.max_queue = max_queue
        self._queue: queue.Queue[_Task | None] = queue.Queue()
        self._waiting = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="snowfire-predict", daemon=True)
        self._thread.start()

    def run(self, work: Callable[[], Any], timeout: float) -> Any:
        """`work()`'s result, computed on the thread; its exception re-raised here.
        PredictBusyError when `max_queue` requests already wait; PredictTimeoutError when it
        is not done within `timeout` seconds."""
        if timeout <= 0:
            raise PredictTimeoutError("the request's deadline passed before its predictions began")
        task = _Task(work, time.monotonic() + timeout, timeout)
        with self._lock:
            if self.max_queue is not None and self._waiting >= self.max_queue:
                raise PredictBusyError(self._waiting)
            self._waiting += 1
        try:
            self._queue.put(task)
            return task.done.result(timeout=timeout)
        except FutureTimeout:
            raise PredictTimeoutError(
                f"no predictions within the request's deadline of {task.timeout:.3g} s"
            ) from None
        finally:
            with self._lock:
                self._waiting -= 1

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while (task := self._queue.get()) is not None:
            if time.monotonic() > task.deadline:
                task.done.set_exception(
                    PredictTimeoutError(
                        f"waited past the request's deadline of {task.timeout:.3g} s for "
                        "the compute thread"
                    )
                )
                continue
            try:
                task.done.set_result(task.work())
            except BaseException as err:  # noqa: BLE001 - the request gets the error
                log.debug("prediction failed: %s", err)
                task.done.set_exception(err)
