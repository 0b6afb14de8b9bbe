"""The data directory the API and the workers share (`--home DIR` or SNOWFIRE_HOME).

HOME/store/              the feature store (cache.Store)
HOME/runs/<job id>/      run directories of train and fine-tune jobs (default `out`)
HOME/layers/<key>/       layer sweeps by content key (a layers job's default `out`)
HOME/tasks/              task data (default `data`), one folder per task
HOME/queue.sqlite        the job queue (WAL: also -wal and -shm files)
HOME/jobs/<id>.log       each job's log (stdout and stderr of its child process)
HOME/jobs/<id>.result.json   what a finished job returned (read by its worker)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import JobPathForbiddenError

#: The environment variable naming the data directory when `--home` is not given.
HOME_ENV = "SNOWFIRE_HOME"
#: Directories outside HOME that job parameters may name (os.pathsep-separated).
ALLOWED_ENV = "SNOWFIRE_ALLOWED_PATHS"


@dataclass(frozen=True)
class Home:
    root: Path
    #: the service's store when it is on object storage (s3://...): jobs use it by default
    store_url: str | None = None

    @classmethod
    def resolve(cls, given: str | os.PathLike | None = None) -> Home:
        """`given`, else $SNOWFIRE_HOME; ValueError when neither is set."""
        value = given if given is not None else os.environ.get(HOME_ENV)
        if not value:
            raise ValueError(f"no data directory: pass --home DIR or set {HOME_ENV}")
        return cls(Path(value).resolve())

    @property
    def store(self) -> Path:
        return self.root / "store"

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    @property
    def layers(self) -> Path:
        return self.root / "layers"

    @property
    def tasks(self) -> Path:
        return self.root / "tasks"

    @property
    def queue(self) -> Path:
        return self.root / "queue.sqlite"

    @property
    def jobs(self) -> Path:
        return self.root / "jobs"

    def store_param(self, value: str | None) -> str:
        """A job's `store`: by default the service's store on object storage if it has one,
        else HOME/store; a path must stay where `path` allows, and the one URL a job may name
        is the service's own (a job cannot reach another bucket with the service's keys)."""
        if value is None or (self.store_url is not None and value == self.store_url):
            return self.store_url or self.path("store")
        if "://" in value:
            raise JobPathForbiddenError(
                f"store: a job may use the service's store ({self.store_url or 'HOME/store'}) "
                f"or a directory under HOME, not {value}"
            )
        return self.path(value)

    def log(self, job_id: str) -> Path:
        return self.jobs / f"{job_id}.log"

    def result(self, job_id: str) -> Path:
        return self.jobs / f"{job_id}.result.json"

    def path(self, value: str) -> str:
        """A path parameter made absolute (relative paths are relative to HOME), refused
        (ValueError) unless it stays under HOME or a directory of $SNOWFIRE_ALLOWED_PATHS
        (os.pathsep-separated): a job cannot read or write elsewhere (JobPathForbiddenError, a
        ValueError). The check is on the
        normalised path (`..` resolved), so links placed inside HOME by its owner are kept."""
        path = Path(
            os.path.normpath(Path(value) if Path(value).is_absolute() else self.root / value)
        )
        for allowed in self.allowed():
            if path == allowed or allowed in path.parents:
                return str(path)
        raise JobPathForbiddenError(
            f"path {value!r} is outside the data directory {self.root}"
            + (f" and {ALLOWED_ENV}" if os.environ.get(ALLOWED_ENV) else "")
            + f": job paths must stay under it (or list a directory in {ALLOWED_ENV})"
        )

    def allowed(self) -> list[Path]:
        """HOME and the directories of $SNOWFIRE_ALLOWED_PATHS, normalised."""
        extra = [p for p in os.environ.get(ALLOWED_ENV, "").split(os.pathsep) if p]
        return [self.root] + [Path(os.path.normpath(os.path.abspath(p))) for p in extra]
