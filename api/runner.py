"""The child process that runs one job: `python -m api.runner --home HOME JOB_ID`.

Its worker starts it with stdout and stderr sent to HOME/jobs/<id>.log, heartbeats the lease
while it runs and kills its process group to cancel it. On success it writes what the job
returned to HOME/jobs/<id>.result.json (atomically) and exits 0; the worker makes the
completion write. It never writes to the queue.

    extract   runs `snowfire extract` with the params as options; returns the summaries of
              the feature sets it made: {"featuresets": [...]}
    train     heads.train(TrainConfig(...)); returns {split: {metric: value}} (metrics.json)
    finetune  finetune.train(FinetuneConfig(...)); the same
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from .home import Home
from .queue import JobQueue


def run_extract(params: dict[str, Any]) -> dict[str, Any]:
    from extractor import run_extract as extract

    return {"featuresets": [info.summary() for info in extract(params)]}


def run_train(params: dict[str, Any]) -> dict[str, Any]:
    from heads import TrainConfig, train

    options = {k: v for k, v in params.items() if k != "featureset"}
    return train(TrainConfig(**options, featureset_prefix=params["featureset"]))


def run_finetune(params: dict[str, Any]) -> dict[str, Any]:
    from finetune import FinetuneConfig, train

    return train(FinetuneConfig(**params))


RUNNERS = {"extract": run_extract, "train": run_train, "finetune": run_finetune}


def write_result(path: Path, result: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(result, indent=2, default=float))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m api.runner", description=__doc__)
    p.add_argument("--home", required=True)
    p.add_argument("job_id")
    args = p.parse_args(argv)
    home = Home.resolve(args.home)
    job = JobQueue(home.queue).get(args.job_id)
    print(f"{job.kind} job {job.id}: {json.dumps(job.params)}", flush=True)
    result = RUNNERS[job.kind](dict(job.params))
    write_result(home.result(job.id), result)
    print(f"{job.kind} job {job.id} done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
