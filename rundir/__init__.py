"""Run directories: what every ❄️ head run, 🔥 fine-tuning run, grid and comparison shares.

    with hold_run(out):                            # one process at a time (RUN/.lock)
        done = finished_or_refuse(out, cfg, "train")
        if done is not None:                       # a finished run of the same config
            return done
        ...
        write_json(Path(out) / CONFIG, record)     # whole or absent (cache.atomic_write)
        write_json(Path(out) / METRICS, metrics)   # last: its presence says "finished"

files.py names every file of a run directory; lock.py holds one; write.py writes its files
atomically; reuse.py reuses a finished run of the same config and refuses another, reading
which config fields may change between attempts from the fields themselves (`volatile=True`);
pause.py keeps a paused run's end at its rung, and ends it from there when a race stops it.
Imports `cache` (the atomic writer, when a file is written) and `options`, nothing else.
"""

from .cost import SHARED, HostLoad, PeakMemory, busy_seconds, saved_bytes
from .files import (
    AT_PAUSE,
    BEST,
    CHECKPOINT,
    CONFIG,
    DEADLINE,
    ENCODER,
    FINAL_STATE,
    GRID,
    GRID_JSON,
    GRID_PLOT,
    GRID_TABLE,
    HEAD,
    LAYER_PLOT,
    LAYERS,
    LAYERS_PLOT,
    LAYERS_TABLE,
    LOCK,
    LOG,
    METRICS,
    PAUSED,
    PREDICTIONS,
    RESULTS,
    SCALAR_MIX,
    SELECTION,
    TABLE,
    TABLE_PLOT,
    WEIGHTS,
    epochs_done,
    prediction_file,
    scored_splits,
    selection_file,
    selection_scores,
)
from .lock import RunBusyError, hold_run
from .pause import finish_from_pause, forget_pause, pause_dir, recorded_end
from .reuse import RunConfigError, check_same_config, config_changes, finished_or_refuse
from .write import atomic_write, save_torch, write_json, write_lines

__all__ = [
    "HostLoad",
    "PeakMemory",
    "SHARED",
    "busy_seconds",
    "saved_bytes",
    "AT_PAUSE",
    "BEST",
    "CHECKPOINT",
    "CONFIG",
    "DEADLINE",
    "ENCODER",
    "FINAL_STATE",
    "GRID",
    "GRID_JSON",
    "GRID_PLOT",
    "GRID_TABLE",
    "HEAD",
    "LAYER_PLOT",
    "LAYERS",
    "LAYERS_PLOT",
    "LAYERS_TABLE",
    "LOCK",
    "LOG",
    "METRICS",
    "PAUSED",
    "PREDICTIONS",
    "SELECTION",
    "RESULTS",
    "SCALAR_MIX",
    "TABLE",
    "TABLE_PLOT",
    "scored_splits",
    "WEIGHTS",
    "RunBusyError",
    "RunConfigError",
    "atomic_write",
    "check_same_config",
    "config_changes",
    "epochs_done",
    "finish_from_pause",
    "finished_or_refuse",
    "forget_pause",
    "hold_run",
    "pause_dir",
    "prediction_file",
    "recorded_end",
    "selection_file",
    "selection_scores",
    "save_torch",
    "write_json",
    "write_lines",
]
