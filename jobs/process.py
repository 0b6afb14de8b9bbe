"""Starting snowfire's own child processes so that nothing in their working directory can
shadow a snowfire package.

`python -m X` and `python -c ...` put the working directory first on sys.path, so a folder
named `tasks/` or `cache/` there (HOME/tasks holds the task data!) would be imported instead of
the package. Python 3.11 has `-P` against it; 3.10 does not. `python_command` works the same on
both: the child starts with `-c BOOT`, and BOOT removes the working directory from sys.path
before it imports anything of snowfire, then runs the module as `python -m` would.
"""

from __future__ import annotations

import sys

#: Drop the working directory ('' from `-c`, or '.') from sys.path, then run argv[1] as
#: __main__ with the rest as its arguments.
BOOT = (
    "import runpy, sys; "
    "sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
    "sys.argv = sys.argv[1:]; "
    "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)"
)


def python_command(module: str, *args: str) -> list[str]:
    """argv that runs `python -m module args...` without the working directory on sys.path."""
    return [sys.executable, "-c", BOOT, module, *args]
