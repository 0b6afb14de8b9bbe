"""The readers' retry policy (cache/retry.py) by itself: the waits against the formula, the
deadline and the attempts with a fake clock, Retry-After, the environment, obstore's form."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from snowfire.cache import RetryPolicy, ServiceUnreachableError, StoreUnreachableError
from snowfire.cache.retry import Tries, retry_after


class FakeTime:
    """A clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now, self.slept = 100.0, []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_each_wait_is_between_half_and_all_of_the_capped_doubling():
    policy = RetryPolicy(backoff=0.2, backoff_max=15.0)
    rng = random.Random(0)
    for n, d in enumerate([0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 15.0, 15.0], start=1):
        waits = [policy.wait(n, rng) for _ in range(200)]
        assert d / 2 <= min(waits) and max(waits) <= d, n
        assert max(waits) - min(waits) > d / 4, n  # jittered, not one value


def test_tries_give_up_after_the_attempts_naming_what_the_count_and_the_cause():
    t = FakeTime()
    policy = RetryPolicy(attempts=4, backoff=1.0, backoff_max=2.0, deadline=1000)
    tries = Tries(
        policy,
        "GET http://h/x",
        ServiceUnreachableError,
        clock=t.clock,
        sleep=t.sleep,
        rng=random.Random(1),
    )
    for _ in range(3):
        tries.failed("HTTP 503: busy")
    assert len(t.slept) == 3 and tries.count == 4
    with pytest.raises(ServiceUnreachableError) as got:
        tries.failed("HTTP 503: still busy")
    message = str(got.value)
    assert message.startswith("GET http://h/x: gave up after ")
    assert "all 4 attempts failed; the last: HTTP 503: still busy" in message
    assert len(t.slept) == 3  # no wait before giving up
    assert isinstance(got.value, ConnectionError) and isinstance(got.value, StoreUnreachableError)


def test_no_try_starts_past_the_deadline():
    t = FakeTime()
    policy = RetryPolicy(attempts=100, backoff=4.0, backoff_max=4.0, deadline=10.0)
    tries = Tries(policy, "GET u", ServiceUnreachableError, clock=t.clock, sleep=t.sleep)
    with pytest.raises(ServiceUnreachableError, match="would start past the 10 s deadline"):
        for _ in range(100):
            tries.failed("reset")
    assert sum(t.slept) <= 10.0
    assert 2 <= len(t.slept) <= 5  # waits of 2..4 s fit 2 to 5 times in 10 s


def test_a_retry_after_is_waited_instead_of_the_backoff_unless_past_the_deadline():
    t = FakeTime()
    policy = RetryPolicy(attempts=10, backoff=0.1, backoff_max=0.1, deadline=30.0)
    tries = Tries(policy, "GET u", ServiceUnreachableError, clock=t.clock, sleep=t.sleep)
    tries.failed("HTTP 429", after=7.0)
    assert t.slept == [7.0]
    with pytest.raises(ServiceUnreachableError, match=r"after 60.0 s, would start past"):
        tries.failed("HTTP 429", after=60.0)


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after("3") == 3.0
    assert retry_after(" 0 ") == 0.0
    assert retry_after(None) is None
    assert retry_after("soon") is None
    when = datetime(2030, 1, 1, 0, 0, 30, tzinfo=timezone.utc)
    now = datetime(2030, 1, 1, tzinfo=timezone.utc).timestamp()
    assert retry_after(format_datetime(when, usegmt=True), now=now) == pytest.approx(30.0)
    assert retry_after(format_datetime(when, usegmt=True), now=now + 60) == 0.0


def test_the_environment_changes_each_field_and_a_bad_value_is_named():
    got = RetryPolicy.from_env(
        {
            "SNOWFIRE_RETRY_ATTEMPTS": "3",
            "SNOWFIRE_RETRY_BACKOFF": "0.5",
            "SNOWFIRE_RETRY_BACKOFF_MAX": "2",
            "SNOWFIRE_RETRY_DEADLINE": "600",
        }
    )
    assert got == RetryPolicy(attempts=3, backoff=0.5, backoff_max=2.0, deadline=600.0)
    assert RetryPolicy.from_env({}) == RetryPolicy()
    with pytest.raises(ValueError, match=r"SNOWFIRE_RETRY_ATTEMPTS='many': expected an integer"):
        RetryPolicy.from_env({"SNOWFIRE_RETRY_ATTEMPTS": "many"})
    with pytest.raises(ValueError, match=r"RetryPolicy.attempts: expected at least 1, got 0"):
        RetryPolicy.from_env({"SNOWFIRE_RETRY_ATTEMPTS": "0"})
    with pytest.raises(ValueError, match=r"max: expected at least backoff \(20.0\), got 15"):
        RetryPolicy.from_env({"SNOWFIRE_RETRY_BACKOFF": "20"})


def test_obstore_gets_the_same_policy():
    policy = RetryPolicy(attempts=5, backoff=0.3, backoff_max=9.0, deadline=120.0)
    assert policy.obstore() == {
        "max_retries": 4,
        "retry_timeout": timedelta(seconds=120),
        "backoff": {
            "init_backoff": timedelta(seconds=0.3),
            "max_backoff": timedelta(seconds=9),
            "base": 2,
        },
    }
