"""Each cell that trains runs in a process of its own, so what its run records about its cost
is its own: the resident set of a process that trained earlier cells still holds what they
left (memory the allocator kept, feature shards still mapped), and the peak memory column of
a long comparison would grow cell after cell (measured: four identical ❄️ probes in one
process peaked at 3.5, 4.1, 4.6 and 5.2 GB).

    run_in_child(fn, *args)   fn(*args) in a fresh child process; its result, or its
                              exception raised here (its cause: the child's traceback)

The children come from a fork server (multiprocessing's "forkserver": a clean process that
imported torch and the trainers once, and forks one child per cell), so a cell costs a fork,
not a Python start-up; forking the comparison itself is not safe once torch's OpenMP threads
have run (the child hangs). A child takes the parent's working directory, environment, stdout
and stderr (the descriptors as they are now, passed over the pipe), logging level and thread
budget (options.apply_threads), and ends with its parent: the parent stops it on its way out
(an exception, SIGTERM through the ledger, ^C), and the fork server's exit, when the parent is
killed outright, sends it SIGTERM (PR_SET_PDEATHSIG). A finished run reads back in the parent:
only cells that train start a process.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

#: What the fork server imports once, so that its children start with it loaded.
PRELOAD = [
    "torch",
    "transformers.models.bert.modeling_bert",  # the BERT family: 3 s a 🔥 cell would pay
    "zarr",
    "snowfire.compare.run",
    "snowfire.compare.dispatch",
    "snowfire.heads.trainer",
    "snowfire.finetune.trainer",
]
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


@functools.cache
def _ctx():
    """The multiprocessing context children come from: one fork server per process."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(PRELOAD)
    return ctx


class CellTraceback(Exception):
    """The traceback of an error in a cell's process: the cause of the error raised here."""


def _die_with_parent() -> None:
    """SIGTERM this process when the process that forked it ends (Linux; elsewhere nothing)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _child(conn, fn: Callable[..., Any], args: tuple, setting: dict[str, Any]) -> None:
    from multiprocessing.reduction import recv_handle

    _die_with_parent()
    for fd in (1, 2):  # the parent's stdout and stderr as they are now
        os.dup2(recv_handle(conn), fd)
    os.chdir(setting["cwd"])
    os.environ.clear()
    os.environ.update(setting["env"])
    logging.basicConfig(level=setting["log_level"], format=setting["log_format"], force=True)
    if setting["threads"] is not None:
        from snowfire.options import apply_threads

        apply_threads(setting["threads"])
    try:
        result = fn(*args)
    except BaseException as err:  # noqa: BLE001 (handed to the parent, raised there)
        sys.stdout.flush()
        sys.stderr.flush()
        # first in words, then the exception itself where it can travel (the parent falls
        # back on the words when it cannot be rebuilt there)
        conn.send(("error", f"{type(err).__name__}: {err}", traceback.format_exc()))
        try:
            conn.send(err)
        except Exception:  # noqa: BLE001
            conn.send(None)
    else:
        sys.stdout.flush()
        sys.stderr.flush()
        conn.send(("ok", result))
    conn.close()


def _setting() -> dict[str, Any]:
    from snowfire.options import threads_in_use

    root = logging.getLogger()
    fmt = next((h.formatter._fmt for h in root.handlers if h.formatter), None)
    return {
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "log_level": root.level,
        "log_format": fmt or logging.BASIC_FORMAT,
        "threads": threads_in_use(),
    }


def run_in_child(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) in a fresh process (fn and args picklable: a module-level function and its
    data); its result, or its exception raised here from the child's traceback."""
    from multiprocessing.reduction import send_handle

    sys.stdout.flush()
    sys.stderr.flush()
    ctx = _ctx()
    here, there = ctx.Pipe()
    child = ctx.Process(target=_child, args=(there, fn, args, _setting()), name="snowfire-cell")
    child.start()
    there.close()
    try:
        for fd in (1, 2):
            send_handle(here, fd, child.pid)
        try:
            outcome = here.recv()
        except EOFError:
            child.join()
            raise RuntimeError(
                f"the cell's process (pid {child.pid}) ended without a result: exit code "
                f"{child.exitcode} (a negative code is the signal that ended it; -9: killed, "
                "e.g. out of memory)"
            ) from None
        if outcome[0] == "error":
            try:
                err = here.recv() or RuntimeError(outcome[1])
            except Exception:  # noqa: BLE001 (an exception class that cannot be rebuilt here)
                err = RuntimeError(outcome[1])
        child.join()
    finally:
        if child.is_alive():  # we are on our way out: an exception, SIGTERM, ^C
            child.terminate()
            child.join(10)
            if child.is_alive():
                child.kill()
                child.join()
        here.close()
    if outcome[0] == "ok":
        return outcome[1]
    raise err from CellTraceback(f"in the cell's process (pid {child.pid}):\n{outcome[2]}")
