"""The job queue: one SQLite database (WAL) on the shared data directory.

A job moves queued -> running -> done | failed | cancelled. A worker claims the oldest queued
job of its kind in one write transaction (BEGIN IMMEDIATE, then UPDATE ... RETURNING), which
gives it a fresh lease token and `lease_until`; it heartbeats to extend the lease while the job
runs. Every later write of the worker names its token, so a worker that lost its lease (it
stopped heartbeating, the job was re-queued and claimed again) changes nothing: a job is never
completed twice. An expired lease puts the job back in the queue (attempts are kept), or fails
it after `max_attempts` claims, or cancels it when a cancel was asked for.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .errors import InvalidJobError, JobConflictError, JobNotFoundError, JobStateError
from .kinds import JOB_KINDS

STATUSES = ("queued", "running", "done", "failed", "cancelled")
FINAL = ("done", "failed", "cancelled")

Beat = Literal["running", "cancel", "lost"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'queued',
    attempts INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    worker TEXT,
    lease TEXT,
    lease_until REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    metrics TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status, kind, seq);
CREATE TABLE IF NOT EXISTS workers (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, host TEXT NOT NULL, seen_at REAL NOT NULL
);
"""
#: Columns added after the first release (ALTER TABLE on an older queue file).
_ADDED = {"idempotency_key": "TEXT", "request_sha": "TEXT"}
_KEY_INDEX = (
    "CREATE UNIQUE INDEX IF NOT EXISTS jobs_by_key ON jobs (idempotency_key) "
    "WHERE idempotency_key IS NOT NULL"
)


@dataclass(frozen=True)
class Job:
    id: str
    kind: str
    params: dict[str, Any]
    status: str
    attempts: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    worker: str | None
    lease: str | None  # the current claim's token; every write of its worker names it
    lease_until: float | None
    cancel_requested: bool
    metrics: dict[str, Any] | None
    error: str | None
    idempotency_key: str | None = None  # the client's key for a retry-safe submission

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Job:
        d = dict(row)
        d.pop("seq")
        d.pop("request_sha", None)
        d["params"] = json.loads(d["params"])
        d["metrics"] = None if d["metrics"] is None else json.loads(d["metrics"])
        d["cancel_requested"] = bool(d["cancel_requested"])
        return cls(**d)


def new_job_id() -> str:
    return uuid.uuid4().hex[:16]


class JobQueue:
    """The queue in the SQLite file `path` (created on first use).

    clock: the wall clock every time the queue stores or compares (created, leases, heartbeats,
    workers' beats) is read from: epoch seconds, shared by the processes that open the file, so
    time.time; a test passes its own and moves it instead of sleeping past a lease."""

    def __init__(
        self, path: str | Path, *, max_attempts: int = 3, clock: Callable[[], float] = time.time
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts: expected >= 1, got {max_attempts}")
        self.path = Path(path)
        self.max_attempts = max_attempts
        self.clock = clock
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._use_wal()
        # several processes open one file at once (snowfire up starts them together): the schema
        # and the migration of an older file happen under the write lock, read again inside it
        with self._write() as conn:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            have = {row["name"] for row in conn.execute("PRAGMA table_info(jobs)")}
            for name, sql_type in _ADDED.items():
                if name not in have:
                    conn.execute(f"ALTER TABLE jobs ADD COLUMN {name} {sql_type}")
            conn.execute(_KEY_INDEX)

    def _use_wal(self, wait: float = 30.0) -> None:
        # switching the journal mode does not wait on the busy handler: retry while another
        # process holds the file for its own switch
        deadline = time.monotonic() + wait
        while True:
            try:
                with self._connect() as conn:
                    conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # one short-lived connection per operation: safe across threads and processes
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout = 30000")
        try:
            yield conn
        finally:
            conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that holds the database's write lock from its first statement."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- the API's side
    def submit(
        self,
        kind: str,
        params: dict[str, Any],
        job_id: str | None = None,
        *,
        key: str | None = None,
        request: Any = None,
    ) -> Job:
        """Queue a job (as `job_id`, default a new id); returns it once it is committed.

        key: the client's idempotency key. A key already used returns that earlier job (its own
        id, not `job_id`) when `request` (the request as the client sent it, JSON-able) is the
        same, so a client that lost the answer can retry without queueing the job twice; with
        another request it is a JobConflictError (409).
        """
        if kind not in JOB_KINDS:
            raise InvalidJobError(
                f"unknown job kind {kind!r}: expected one of {', '.join(JOB_KINDS)}"
            )
        job_id = job_id or new_job_id()
        sha = None
        if key is not None:
            text = json.dumps({"kind": kind, "request": request}, sort_keys=True)
            sha = hashlib.sha256(text.encode()).hexdigest()
        with self._write() as conn:  # the look-up and the insert in one write transaction
            row = None
            if key is not None:
                row = conn.execute(
                    "SELECT id, request_sha FROM jobs WHERE idempotency_key = ?", (key,)
                ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO jobs (id, kind, params, created_at, idempotency_key, "
                    "request_sha) VALUES (?, ?, ?, ?, ?, ?)",
                    (job_id, kind, json.dumps(params), self.clock(), key, sha),
                )
            elif row["request_sha"] != sha:
                raise JobConflictError(
                    f"Idempotency-Key {key!r} was used for another request "
                    f"(job {row['id']}): use a new key for a new job"
                )
            else:
                job_id = row["id"]  # a retry of a request already queued
        return self.get(job_id)

    def get(self, job_id: str) -> Job:
        self.reap()
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise JobNotFoundError(f"no job {job_id!r}")
        return Job.from_row(row)

    def lease_state(self, job_id: str) -> tuple[str, str | None, float | None] | None:
        """(status, lease token, lease_until) of a job, read only (no reaping); None if absent."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT status, lease, lease_until FROM jobs WHERE id = ?", (job_id,)
            ).fetchone()
        return None if row is None else (row["status"], row["lease"], row["lease_until"])

    def peek(self, job_id: str) -> Job:
        """The job as stored, read only (no reaping of expired leases)."""
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise JobNotFoundError(f"no job {job_id!r}")
        return Job.from_row(row)

    def counts(self) -> dict[tuple[str, str], int]:
        """{(kind, status): number of jobs} (for the service's metrics)."""
        self.reap()
        with self._connect() as conn:
            rows = conn.execute("SELECT kind, status, COUNT(*) FROM jobs GROUP BY kind, status")
            return {(kind, status): n for kind, status, n in rows.fetchall()}

    def list(
        self, kind: str | None = None, status: str | None = None, limit: int = 100
    ) -> list[Job]:
        """Newest first."""
        self.reap()
        sql, args = "SELECT * FROM jobs WHERE 1 = 1", []
        for column, value in (("kind", kind), ("status", status)):
            if value is not None:
                sql += f" AND {column} = ?"
                args.append(value)
        with self._connect() as conn:
            rows = conn.execute(sql + " ORDER BY seq DESC LIMIT ?", (*args, limit)).fetchall()
        return [Job.from_row(r) for r in rows]

    def cancel(self, job_id: str) -> Job:
        """Cancel a queued job at once; flag a running one (its worker stops it)."""
        with self._write() as conn:
            row = conn.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise JobNotFoundError(f"no job {job_id!r}")
            if row["status"] in FINAL:
                raise JobStateError(f"job {job_id} is already {row['status']}: nothing to cancel")
            conn.execute(
                "UPDATE jobs SET cancel_requested = 1, "
                "status = CASE status WHEN 'queued' THEN 'cancelled' ELSE status END, "
                "finished_at = CASE status WHEN 'queued' THEN ? ELSE finished_at END "
                "WHERE id = ?",
                (self.clock(), job_id),
            )
        return self.get(job_id)

    # -- the workers' side
    def claim(self, kind: str, worker: str, lease: float) -> Job | None:
        """The oldest queued job of `kind`, now running under a new lease of `lease` seconds
        held by `worker`; None when nothing is queued."""
        now = self.clock()
        with self._write() as conn:
            self._reap(conn, now)
            row = conn.execute(
                "UPDATE jobs SET status = 'running', worker = ?, lease = ?, lease_until = ?, "
                "attempts = attempts + 1, started_at = ? "
                "WHERE seq = (SELECT seq FROM jobs WHERE status = 'queued' AND kind = ? "
                "ORDER BY seq LIMIT 1) AND status = 'queued' RETURNING *",
                (worker, uuid.uuid4().hex, now + lease, now, kind),
            ).fetchone()
        return None if row is None else Job.from_row(row)

    def heartbeat(self, job_id: str, lease_token: str, lease: float) -> Beat:
        """Extend the lease by `lease` seconds. "cancel": a cancel was asked for; "lost": the
        lease is no longer this worker's (stop the job, write nothing)."""
        with self._write() as conn:
            row = conn.execute(
                "UPDATE jobs SET lease_until = ? WHERE id = ? AND lease = ? "
                "AND status = 'running' RETURNING cancel_requested",
                (self.clock() + lease, job_id, lease_token),
            ).fetchone()
        if row is None:
            return "lost"
        return "cancel" if row["cancel_requested"] else "running"

    def finish(
        self,
        job_id: str,
        lease_token: str,
        status: str,
        metrics: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> bool:
        """The completion write; False (and no change) unless the lease is still held."""
        if status not in FINAL:
            raise ValueError(f"finish: status must be one of {FINAL}, got {status!r}")
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE jobs SET status = ?, metrics = ?, error = ?, finished_at = ?, "
                "lease_until = NULL WHERE id = ? AND lease = ? AND status = 'running'",
                (
                    status,
                    None if metrics is None else json.dumps(metrics),
                    error,
                    self.clock(),
                    job_id,
                    lease_token,
                ),
            )
            return cur.rowcount == 1

    def release(self, job_id: str, lease_token: str) -> bool:
        """Give a running job back to the queue (a worker shutting down); attempts are kept."""
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE jobs SET status = CASE cancel_requested WHEN 1 THEN 'cancelled' "
                "ELSE 'queued' END, worker = NULL, lease = NULL, lease_until = NULL "
                "WHERE id = ? AND lease = ? AND status = 'running'",
                (job_id, lease_token),
            )
            return cur.rowcount == 1

    def retry(self, job_id: str, lease_token: str, error: str) -> str | None:
        """A run killed from outside (the OOM killer, an operator's kill -9): queued again
        unless it has had `max_attempts`, then failed with `error`. The new status, or None
        when the lease is no longer held."""
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE jobs SET status = CASE WHEN cancel_requested = 1 THEN 'cancelled' "
                "WHEN attempts >= ? THEN 'failed' ELSE 'queued' END, "
                "error = CASE WHEN attempts >= ? THEN ? ELSE error END, "
                "finished_at = CASE WHEN attempts >= ? THEN ? ELSE finished_at END, "
                "worker = NULL, lease = NULL, lease_until = NULL "
                "WHERE id = ? AND lease = ? AND status = 'running'",
                (
                    self.max_attempts,
                    self.max_attempts,
                    error,
                    self.max_attempts,
                    self.clock(),
                    job_id,
                    lease_token,
                ),
            )
            if cur.rowcount != 1:
                return None
            row = conn.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()
            return row["status"]

    def reap(self) -> None:
        """Apply expired leases now (claims do it too)."""
        with self._write() as conn:
            self._reap(conn, self.clock())

    def _reap(self, conn: sqlite3.Connection, now: float) -> None:
        expired = "status = 'running' AND lease_until < ?"
        lost = "worker lost: its lease expired"
        conn.execute(
            f"UPDATE jobs SET status = 'cancelled', finished_at = ?, error = '{lost}' "
            f"WHERE {expired} AND cancel_requested = 1",
            (now, now),
        )
        conn.execute(
            f"UPDATE jobs SET status = 'failed', finished_at = ?, "
            f"error = '{lost} on each of ' || attempts || ' attempts' "
            f"WHERE {expired} AND attempts >= ?",
            (now, now, self.max_attempts),
        )
        conn.execute(
            f"UPDATE jobs SET status = 'queued', worker = NULL, lease = NULL, lease_until = NULL "
            f"WHERE {expired}",
            (now,),
        )

    # -- liveness of workers (healthchecks)
    def beat_worker(self, worker: str, kind: str) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO workers (id, kind, host, seen_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at",
                (worker, kind, socket.gethostname(), self.clock()),
            )

    def worker_alive(self, kind: str, within: float, host: str | None = None) -> bool:
        """Whether a worker of `kind` (on `host`, default this one) was seen `within` s."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT 1 FROM workers WHERE kind = ? AND host = ? AND seen_at >= ?",
                (kind, host or socket.gethostname(), self.clock() - within),
            ).fetchone()
        return row is not None
