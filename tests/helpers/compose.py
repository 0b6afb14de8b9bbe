"""The compose files read as Compose reads them, and their commands run as local processes.

interpolate                      Compose's ${NAME:-default} substitution
load_yaml, merge, load_compose   a compose file as Compose reads it, an override merged
command                          a service's command as a list
local_command, LOCAL_ENV         a container command run from this checkout instead
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from . import REPO, SHARED

#: The Compose Specification's JSON schema (in ../shared: no download in tests).
SCHEMA = SHARED / "schemas" / "compose-spec.json"
#: docker-compose.yml's services -> the job kind each worker runs (None: the api).
SERVICES = {
    "api": None,
    "extractor": "extract",
    "trainer": "train",
    "finetuner": "finetune",
    "comparer": "compare",
    "prober": "layers",
}
#: This checkout's `snowfire` executable.
SNOWFIRE = REPO / ".venv" / "bin" / "snowfire"
#: This checkout importable as the image's installed package is (an editable install made
#: before a package existed does not map it), and one thread per process on a small machine.
LOCAL_ENV = {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}

_VARIABLE = re.compile(r"\$(?:\$|\{(\w+)(?:(:?[-?])([^}]*))?\})")


def interpolate(text: str, env: dict[str, str] | None = None) -> str:
    """Compose's variable substitution: ${NAME}, ${NAME:-default}, ${NAME-default}; $$ is $.
    ${NAME:?message} with NAME unset or empty is an error, as in Compose."""
    env = env or {}

    def value(m: re.Match) -> str:
        name, op, arg = m.groups()
        if name is None:
            return "$"
        got = env.get(name)
        if op == ":-":
            return got or arg
        if op == "-":
            return arg if got is None else got
        if op in (":?", "?") and not got:
            raise ValueError(f"{name} is required: {arg}")
        return got or ""

    return _VARIABLE.sub(value, text)


def load_yaml(text: str, env: dict[str, str] | None = None):
    """A compose file as Compose reads it: YAML with merge keys (`<<:`) applied, then the
    variables of `env` (none set by default) substituted in every string value (after parsing,
    so `${NAME:-}` is an empty string, not null)."""
    import yaml

    def walk(node):
        if isinstance(node, dict):
            return {key: walk(value) for key, value in node.items()}
        if isinstance(node, list):
            return [walk(value) for value in node]
        return interpolate(node, env) if isinstance(node, str) else node

    return walk(yaml.safe_load(text))


def merge(base: dict, override: dict) -> dict:
    """Compose's merge of an override file, for mappings."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def load_compose(name: str = "docker-compose.yml", env: dict[str, str] | None = None) -> dict:
    return load_yaml((REPO / name).read_text(), env)


def command(service: dict) -> list[str]:
    cmd = service["command"]
    return shlex.split(cmd) if isinstance(cmd, str) else list(cmd)


def local_command(args: list[str], home: Path, port: int) -> list[str]:
    """A container command as a local one: /data -> home, 8000 -> port, our executables."""
    exe = {
        "snowfire": str(
            SNOWFIRE if SNOWFIRE.exists() else Path(sys.executable).parent / "snowfire"
        ),
        "python": sys.executable,
    }
    out = []
    for i, arg in enumerate(args):
        if i == 0 or (args[0] == "CMD" and i == 1):
            arg = exe.get(arg, arg)
        out.append(arg.replace("/data", str(home)).replace("8000", str(port)))
    return out
