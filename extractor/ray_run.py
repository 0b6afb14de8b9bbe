"""Extraction on Ray (`snowfire extract ... --ray ADDRESS`, extra 'ray'): the same plan, its
segments encoded by a pool of actors.

The driver plans exactly as a single-process run (run.py: same segments, same batches, same
ids) and skips committed segments. Each actor loads the encoder once (`--gpus-per-actor`
GPUs, or a CPU) and, per segment it is given, encodes the planned batches and writes the
segment into the store itself (a directory every node mounts, or s3://): content-addressed,
renamed or put into place as in one process. The driver then writes the feature set's
manifest. Actors restart when their process dies and Ray retries the segment they held; a
segment already committed by a first attempt is not written twice. The stored bytes equal a
single-process run's: the batches are the same and each is encoded the same way.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from snowfire.cache import is_bucket
from snowfire.options import use_threads


def cluster_gpus() -> float:
    """GPUs in the Ray cluster this process is connected to."""
    import ray

    return ray.cluster_resources().get("GPU", 0)


def connect_ray(address: str) -> None:
    """Join the Ray cluster at `address` ('local': start one in this process) once."""
    try:
        import ray
    except ImportError:
        raise RuntimeError("--ray needs Ray: pip install -e '.[ray]'") from None
    if ray.is_initialized():
        return
    if address == "local":
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    else:
        ray.init(address=address, log_to_driver=False, configure_logging=False)


class SegmentWorker:
    """One actor: an encoder and the store; encodes and writes the segments it is given."""

    def __init__(self, factory: Callable[[], Any], store: str, threads: int):
        from snowfire.cache import open_store

        use_threads(threads, source="ray num_cpus")  # before the encoder loads
        self.encoder = factory()
        self.store = open_store(store)

    def run(self, pool: str, seg_id: str, batches: list, fmt: tuple) -> tuple[int, int]:
        """(examples, tokens) of one segment, written unless a first attempt committed it
        (fmt: the segment's dtype and tiles)."""
        from .run import encode_segment

        if self.store.has_segment(pool, seg_id):
            return sum(len(b) for b in batches), 0
        keys, parts = encode_segment(self.encoder, batches)
        self.store.write_segment(pool, seg_id, keys, parts, *fmt)
        return len(keys), sum(p[0].shape[0] for p in parts)


class RayRunner:
    """extract(..., runner=RayRunner(...)): the planned segments on `actors` Ray actors."""

    def __init__(
        self,
        factory: Callable[[], Any],
        store: str,
        *,
        address: str = "local",
        actors: int | None = None,
        gpus_per_actor: float | None = None,
        cpus_per_actor: float = 1.0,
    ):
        self.factory, self.store, self.address = factory, str(store), address
        self.actors, self.gpus, self.cpus = actors, gpus_per_actor, cpus_per_actor
        self.pool: list = []

    def start(self) -> list:
        """Start the actors (once; `extract` calls this through __call__)."""
        import ray

        connect_ray(self.address)
        if self.pool:
            return self.pool
        gpus = self.gpus
        if gpus is None:  # a GPU each when the cluster has them
            gpus = 1.0 if cluster_gpus() else 0.0
        n = self.actors or (int(cluster_gpus() // gpus) if gpus else 2)
        # an s3:// store: the driver's AWS_* settings (endpoint, region, keys) go to the actors
        env = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
        remote = ray.remote(SegmentWorker).options(
            runtime_env={"env_vars": env} if is_bucket(self.store) and env else None,
            num_cpus=self.cpus,
            num_gpus=gpus,
            max_restarts=-1,  # a dead actor is started again...
            max_task_retries=-1,  # ...and the segment it held is retried on it
        )
        threads = max(1, int(self.cpus))  # its num_cpus: the cores Ray gives it
        self.pool = [remote.remote(self.factory, self.store, threads) for _ in range(max(n, 1))]
        return self.pool

    def __call__(self, pool: str, work: list, fmt: tuple, bar) -> None:
        import ray

        actors = self.start()
        todo = list(reversed(work))  # (segment id, batches), popped in plan order
        running: dict[Any, Any] = {}  # future -> actor
        start, tokens = time.perf_counter(), 0
        idle = list(actors)
        while todo or running:
            while todo and idle:
                seg_id, batches = todo.pop()
                actor = idle.pop()
                running[actor.run.remote(pool, seg_id, batches, fmt)] = actor
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                idle.append(running.pop(ref))
                examples, n = ray.get(ref)  # a segment's error stops the run, as in one process
                tokens += n
                bar.update(examples)
                bar.set_postfix(tok_s=f"{tokens / max(time.perf_counter() - start, 1e-9):.0f}")

    def close(self) -> None:
        import ray

        for actor in self.pool:
            ray.kill(actor)
        self.pool = []
