"""How a reader retries what is safe to retry: the one policy of the REST client (remote.py)
and of object storage (bucket.py, through obstore's own retry configuration).

A try that fails for a reason that may pass — the connection refused, reset or timed out, the
body cut short, HTTP 502/503/504, or 429 with a Retry-After — is tried again after a wait:

    wait(n) = d/2 + uniform(0, d/2),   d = min(backoff_max, backoff * 2**(n-1))

for the n-th retry (exponential backoff with "equal jitter": never less than half of d, so
clients that failed together spread out without retrying at once). A Retry-After the server
sends is waited instead. No try starts after `deadline` seconds without progress, and at most
`attempts` are made in a row without progress; then the caller gets one error naming the URL,
the tries, the time and the last cause. Anything else (4xx, 500) is an answer, not a transient
failure: not retried.

Progress: a try cut short that still delivered part of the answer whole (examples of a
features page, bytes of an object's range) is resumed, not restarted (paging.py, bucket.py),
and counts as progress: the attempts and the deadline start again from there, so a long read
over a link that cuts every answer still ends, as long as each try brings something whole.

Every request a reader sends is a read (GET, or POST of a selection that changes nothing),
so repeating one is always safe. Object storage writes are PUTs of whole objects: repeating
one puts the same bytes.

The defaults below are the policy; `RetryPolicy.from_env()` lets a user change a field with
`SNOWFIRE_RETRY_<FIELD>` (e.g. SNOWFIRE_RETRY_DEADLINE=600 for a link that drops for minutes).
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from datetime import timedelta
from email.utils import parsedate_to_datetime
from typing import Any

log = logging.getLogger(__name__)

#: Statuses a proxy or an overloaded server answers for a while: tried again.
RETRY_STATUSES = frozenset({502, 503, 504})
#: Too Many Requests: tried again only when the server says when (Retry-After).
RATE_LIMITED = 429
ENV_PREFIX = "SNOWFIRE_RETRY_"


@dataclass(frozen=True)
class RetryPolicy:
    """The retry policy of every reader (checked when built)."""

    #: tries of one request, the first included (1: never retry)
    attempts: int = 12
    #: seconds of the first wait; each later one doubles, up to backoff_max
    backoff: float = 0.2
    #: the longest wait between two tries (seconds)
    backoff_max: float = 15.0
    #: seconds from the first try, or from the last that made progress, after which no try
    #: starts (a try in flight runs to its own timeout); also bounds how long a request's
    #: credentials must stay valid on S3
    deadline: float = 180.0

    def __post_init__(self) -> None:
        if not isinstance(self.attempts, int) or isinstance(self.attempts, bool):
            raise TypeError(f"RetryPolicy.attempts: expected an int, got {self.attempts!r}")
        if self.attempts < 1:
            raise ValueError(f"RetryPolicy.attempts: expected at least 1, got {self.attempts}")
        for name in ("backoff", "backoff_max", "deadline"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"RetryPolicy.{name}: expected seconds >= 0, got {value!r}")
        if self.backoff_max < self.backoff:
            raise ValueError(
                f"RetryPolicy.backoff_max: expected at least backoff ({self.backoff}), "
                f"got {self.backoff_max}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RetryPolicy:
        """The defaults, with each field given as SNOWFIRE_RETRY_<FIELD> taken from the
        environment; ValueError naming the variable when its value is not a number."""
        env = os.environ if environ is None else environ
        changes: dict[str, Any] = {}
        for f in fields(cls):
            name = ENV_PREFIX + f.name.upper()
            text = env.get(name)
            if text is None or not text.strip():
                continue
            kind = int if f.type in (int, "int") else float
            try:
                changes[f.name] = kind(text)
            except ValueError:
                raise ValueError(
                    f"{name}={text!r}: expected {'an integer' if kind is int else 'seconds'}"
                ) from None
        try:
            return replace(cls(), **changes)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{err} (from the {ENV_PREFIX}* environment)") from None

    def wait(self, retry: int, rng: random.Random | None = None) -> float:
        """Seconds before retry number `retry` (1 for the first), jittered (see the module)."""
        d = min(self.backoff_max, self.backoff * 2 ** (retry - 1))
        return d / 2 + (rng or random).uniform(0, d / 2)

    def obstore(self) -> dict[str, Any]:
        """The same policy as obstore's `retry_config` (object_store's RetryConfig): its
        backoff draws its own jitter between backoff and the doubled previous wait."""
        return {
            "max_retries": self.attempts - 1,
            "retry_timeout": timedelta(seconds=self.deadline),
            "backoff": {
                "init_backoff": timedelta(seconds=self.backoff),
                "max_backoff": timedelta(seconds=self.backoff_max),
                "base": 2,
            },
        }


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a Retry-After header asks for (delta-seconds or an HTTP date); None when
    absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class Tries:
    """The tries of one request under a policy. After a failed try, `failed(cause)` waits
    for the next or raises `error` naming `what`, the tries, the time taken and the cause;
    `progressed()` after a try that brought part of the answer whole starts the count and the
    deadline again (the request goes on from there)."""

    def __init__(
        self,
        policy: RetryPolicy,
        what: str,
        error: type[Exception],
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.policy, self.what, self.error = policy, what, error
        self.clock, self.sleep, self.rng = clock, sleep, rng
        self.start = clock()
        self.count = 1  # the try under way, counted from the last progress

    def progressed(self) -> None:
        """The try under way delivered part of the answer whole: what failed so far no longer
        counts against the policy."""
        self.start = self.clock()
        self.count = 1

    def failed(self, cause: str, after: float | None = None) -> None:
        """The try under way failed with `cause` (a server's Retry-After: `after` seconds)."""
        elapsed = self.clock() - self.start
        wait = after if after is not None else self.policy.wait(self.count, self.rng)
        if self.count >= self.policy.attempts:
            why = f"all {self.policy.attempts} attempts failed"
        elif elapsed + wait > self.policy.deadline:
            why = (
                f"{self.count} attempt{'s' * (self.count > 1)} failed and the next, after "
                f"{wait:.1f} s, would start past the {self.policy.deadline:g} s deadline"
            )
        else:
            log.warning("%s: %s; try %d in %.2f s", self.what, cause, self.count + 1, wait)
            self.sleep(wait)
            self.count += 1
            return
        raise self.error(
            f"{self.what}: gave up after {elapsed:.1f} s without progress: {why}; "
            f"the last: {cause} (retries: SNOWFIRE_RETRY_ATTEMPTS, SNOWFIRE_RETRY_DEADLINE)"
        )
