"""The predictor's compute thread (serving/worker.py): work runs in arrival order on one
thread, one request more than the queue's bound is refused at once, a request past its
deadline is dropped before it runs, and a failure reaches the request that caused it."""

from __future__ import annotations

import threading
import time

import pytest

from snowfire.serving import PredictBusyError, PredictTimeoutError
from snowfire.serving.worker import ComputeThread


def _blocked(thread: ComputeThread) -> tuple[threading.Event, threading.Thread, list]:
    """A request holding the thread until the event is set."""
    gate, started, got = threading.Event(), threading.Event(), []

    def hold():
        started.set()
        gate.wait(30)
        return "held"

    t = threading.Thread(target=lambda: got.append(thread.run(hold, timeout=30)))
    t.start()
    assert started.wait(10)
    return gate, t, got


def test_work_runs_in_order_on_one_thread_and_errors_reach_their_request():
    thread = ComputeThread()
    names = []
    for i in range(3):
        assert thread.run(lambda i=i: names.append(threading.current_thread().name) or i, 5) == i
    assert names == ["snowfire-predict"] * 3
    with pytest.raises(KeyError, match="boom"):
        thread.run(lambda: {}["boom"], timeout=5)
    assert thread.run(lambda: "after", timeout=5) == "after"  # the thread survived
    thread.close()


def test_one_request_beyond_the_queue_bound_is_refused_at_once():
    thread = ComputeThread(max_queue=1)
    gate, holder, got = _blocked(thread)
    started = time.monotonic()
    with pytest.raises(PredictBusyError, match="1 predictions are already waiting") as err:
        thread.run(lambda: "refused", timeout=30)
    assert err.value.waiting == 1 and time.monotonic() - started < 1
    gate.set()
    holder.join(10)
    assert got == ["held"] and thread.run(lambda: "free again", 5) == "free again"
    thread.close()


def test_a_request_past_its_deadline_is_dropped_not_computed():
    thread = ComputeThread(max_queue=4)
    gate, holder, _ = _blocked(thread)
    ran = []
    with pytest.raises(PredictTimeoutError, match="within the request's deadline of 0.2 s"):
        thread.run(lambda: ran.append("late"), timeout=0.2)
    gate.set()
    holder.join(10)
    assert thread.run(lambda: "next", 5) == "next" and ran == []  # dropped when its turn came
    with pytest.raises(PredictTimeoutError, match="deadline passed before its predictions"):
        thread.run(lambda: None, timeout=0)
    with pytest.raises(ValueError, match="max_queue: expected >= 1 or None, got 0"):
        ComputeThread(max_queue=0)
    thread.close()
