"""The base image of the offline build, made without a registry: a Debian bookworm `minbase`
root made by debootstrap from the mirror apt already uses, with Python 3.11 and its venv
module, imported with `docker import`.

The root file system is cached as a tar under the check's own cache directory, named by a hash
of everything that makes it (the recipe below and the mirror), so a second run imports it in
seconds; a changed recipe makes a new one and the stale tars are removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

from .engine import Engine
from .steps import Log, StepFailed, run

RECIPE = {
    "suite": "bookworm",
    "variant": "minbase",
    # python3-venv: `python3 -m venv` with pip (ensurepip), which the Dockerfile uses
    "include": ["python3", "python3-venv"],
    # what the image does not need: apt's lists and caches, docs, man pages, translations
    "remove": [
        "var/cache/apt",
        "var/lib/apt/lists",
        "usr/share/doc",
        "usr/share/man",
        "usr/share/locale",
        "usr/share/info",
    ],
    "version": 1,  # bump when the way the root is made changes
}
DEFAULT_MIRROR = "http://deb.debian.org/debian"


def cache_dir() -> Path:
    """The check's cache: $XDG_CACHE_HOME/snowfire-compose (default ~/.cache/...)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "snowfire-compose"


def apt_mirror(etc: Path = Path("/etc/apt")) -> str:
    """The Debian mirror apt uses here (deb822 .sources or sources.list), else deb.debian.org."""
    for path in sorted(etc.glob("sources.list.d/*.sources")):
        for block in path.read_text().split("\n\n"):
            fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", block, re.M))
            if RECIPE["suite"] in fields.get("Suites", "").split() and "URIs" in fields:
                uri = fields["URIs"].split()[0]
                if "security" not in uri:
                    return uri
    lists = [etc / "sources.list", *sorted(etc.glob("sources.list.d/*.list"))]
    for path in lists:
        if path.is_file():
            for line in path.read_text().splitlines():
                words = re.sub(r"\[[^]]*\]", "", line).split()
                if len(words) >= 3 and words[0] == "deb" and words[2] == RECIPE["suite"]:
                    return words[1]
    return DEFAULT_MIRROR


def recipe_key(mirror: str) -> str:
    """The hash naming the cached root: canonical JSON of the recipe and the mirror."""
    text = json.dumps({**RECIPE, "mirror": mirror}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def base_image(engine: Engine, log: Log, cache: Path | None = None) -> str:
    """The tag of the base image in `engine`, made (or imported from the cache) if missing."""
    mirror = apt_mirror()
    key = recipe_key(mirror)
    tag = f"snowfire-base:{RECIPE['suite']}-{key}"
    step = "base image"
    if engine.docker("image", "inspect", tag, step=step, check=False).returncode == 0:
        return tag
    cache = cache or cache_dir()
    tar = cache / f"base-{RECIPE['suite']}-{key}.tar"
    if not tar.is_file():
        with log.timed(f"base image: debootstrap {RECIPE['suite']} from {mirror} (cached after)"):
            _debootstrap(engine.work / "rootfs", tar, mirror)
    with log.timed(f"base image: docker import {tar.name}"):
        engine.docker("import", str(tar), tag, step="base image: docker import")
    return tag


def _debootstrap(root: Path, tar: Path, mirror: str) -> None:
    step = "base image: debootstrap"
    if os.geteuid() != 0:
        raise StepFailed(step, "debootstrap needs root (or pass --base-image IMAGE)")
    shutil.rmtree(root, ignore_errors=True)
    try:
        run(
            [
                "debootstrap",
                f"--variant={RECIPE['variant']}",
                f"--include={','.join(RECIPE['include'])}",
                RECIPE["suite"],
                str(root),
                mirror,
            ],
            step,
            timeout=1800,
        )
        for rel in RECIPE["remove"]:
            target = root / rel
            for child in target.iterdir() if target.is_dir() else ():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        tar.parent.mkdir(parents=True, exist_ok=True)
        partial = tar.with_name(tar.name + ".partial")
        run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(partial), "."], step)
        os.replace(partial, tar)
        for stale in tar.parent.glob(f"base-{RECIPE['suite']}-*.tar"):
            if stale != tar:
                stale.unlink()
    finally:
        shutil.rmtree(root, ignore_errors=True)
