"""Where a comparison's cells train (compare/run.py's `_run_stage` reads them as they finish):

    here(cfg, cells, extraction, race)     one after another: a cell that trains does so in a
                                           process of its own (--cell-processes,
                                           compare/cellproc.py), a finished one is read back
    on_ray(cfg, cells, extraction, race)   at once as Ray tasks (a worker per cell under
                                           --cell-processes)

Each yields (cell, (metrics, wall seconds, the attempt's host load)) as the cell finishes;
`race` maps a cell to its rung's (pause_at, stop_at).
"""

from __future__ import annotations

from pathlib import Path

from .cell import Cell, Mode
from .config import CompareConfig


def _timed(
    cfg: CompareConfig, cell: Cell, pair_encoding: str, race: tuple = (None, None)
) -> tuple[dict, float, dict]:
    """(metrics, wall seconds, the attempt's host load: {} for a run finished before it)."""
    from snowfire.rundir import METRICS, HostLoad

    from .run import run_cell

    reused = (Path(cell.run) / METRICS).is_file()
    with HostLoad() as load:
        metrics = run_cell(cfg, cell, pair_encoding, *race)
    return metrics, load.elapsed()[0], {} if reused else load.record()


def here(cfg: CompareConfig, cells: list[Cell], extraction: dict, race: dict):
    """The cells one after another, each as it finishes: one that trains in a process of its
    own (--cell-processes, compare/cellproc.py), a finished one read back here."""
    from snowfire.rundir import METRICS

    from .cellproc import run_in_child

    for cell in cells:
        args = (cfg, cell, extraction["pair_encoding"], race.get(cell, (None, None)))
        trains = not (Path(cell.run) / METRICS).is_file()
        yield cell, run_in_child(_timed, *args) if cfg.cell_processes and trains else _timed(*args)


#: CPUs a cell's Ray task asks for; its torch threads are as many (options/threads.py).
CELL_CPUS = 1


def _cell_on_ray(cfg: CompareConfig, cell: Cell, pair_encoding: str, cpus: int, race: tuple):
    """A cell's Ray task: its torch threads from its num_cpus, then the cell (Ray runs many
    cells at once on one node: each with its default threads would oversubscribe the cores)."""
    from snowfire.options import use_threads

    use_threads(cpus, source="ray num_cpus")
    return _timed(cfg, cell, pair_encoding, race)


def on_ray(cfg: CompareConfig, cells: list[Cell], extraction: dict, race: dict):
    """The cells at once as Ray tasks (a GPU each for 🔥 when the cluster has GPUs), each as
    it finishes. A cell's seed is in its config, so its result is the sequential one."""
    import ray

    from snowfire.extractor import cluster_gpus, connect_ray

    assert cfg.ray is not None  # run.py's _run_stage calls it only under --ray
    connect_ray(cfg.ray)
    gpu = cluster_gpus() > 0
    # a worker per cell (max_calls=1) for the same reason as a process per cell here
    task = ray.remote(max_calls=1 if cfg.cell_processes else 0)(_cell_on_ray)
    refs = {
        task.options(num_cpus=CELL_CPUS, num_gpus=1 if gpu and c.mode is Mode.FIRE else 0).remote(
            cfg, c, extraction["pair_encoding"], CELL_CPUS, race.get(c, (None, None))
        ): c
        for c in cells
    }
    while refs:
        ready, _ = ray.wait(list(refs), num_returns=1)
        yield refs.pop(ready[0]), ray.get(ready[0])
