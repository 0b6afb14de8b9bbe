"""The compose files read as Compose reads them, and their commands run as local processes.

load_yaml, merge, load_compose   a compose file (`!reset` understood), an override merged
command                          a service's command as a list
local_command, LOCAL_ENV         a container command run from this checkout instead
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from . import REPO, SHARED

#: The Compose Specification's JSON schema (in ../shared: no download in tests).
SCHEMA = SHARED / "schemas" / "compose-spec.json"
#: docker-compose.yml's services -> the job kind each worker runs (None: the api).
SERVICES = {"api": None, "extractor": "extract", "trainer": "train", "finetuner": "finetune",
            "comparer": "compare"}  # fmt: skip
#: This checkout's `snowfire` executable.
SNOWFIRE = REPO / ".venv" / "bin" / "snowfire"
#: This checkout importable as the image's installed package is (an editable install made
#: before a package existed does not map it), and one thread per process on a small machine.
LOCAL_ENV = {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}

_RESET = object()


def load_yaml(text: str):
    """yaml.safe_load that also reads Compose's `!reset` tag (an override removing a key)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!reset", lambda loader, node: _RESET)
    return yaml.load(text, Loader=Loader)


def merge(base: dict, override: dict) -> dict:
    """Compose's merge of an override file for mappings (`!reset` removes the key)."""
    out = dict(base)
    for key, value in override.items():
        if value is _RESET:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def load_compose(name: str = "docker-compose.yml") -> dict:
    return load_yaml((REPO / name).read_text())


def command(service: dict) -> list[str]:
    cmd = service["command"]
    return shlex.split(cmd) if isinstance(cmd, str) else list(cmd)


def local_command(args: list[str], home: Path, port: int) -> list[str]:
    """A container command as a local one: /data -> home, 8000 -> port, our executables."""
    exe = {"snowfire": str(SNOWFIRE if SNOWFIRE.exists() else Path(sys.executable).parent
                           / "snowfire"), "python": sys.executable}  # fmt: skip
    out = []
    for i, arg in enumerate(args):
        if i == 0 or (args[0] == "CMD" and i == 1):
            arg = exe.get(arg, arg)
        out.append(arg.replace("/data", str(home)).replace("8000", str(port)))
    return out
