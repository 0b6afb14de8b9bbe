"""The page's layer sweeps: for every finished sweep of the data directory (HOME/layers/<key>/,
what `GET /v1/featuresets/{id}/layers` and layers jobs compute), its feature set, task and
encoder, the answer in words and its plot (served at /ui/layers/<key>/layers.png)."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response

from snowfire.rundir import LAYERS, LAYERS_PLOT

from .layers_routes import plot_url

router = APIRouter(include_in_schema=False)
#: The newest sweeps the page shows.
SHOWN = 20
_KEY = re.compile(r"[0-9a-f]{32}")


def _sweeps(root: Path) -> list[tuple[str, dict]]:
    """(key, layers.json) of the finished sweeps under `root`, newest first."""
    if not root.is_dir():
        return []
    done = sorted(
        (p for p in root.glob(f"*/{LAYERS}") if _KEY.fullmatch(p.parent.name)),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    out = []
    for path in done[:SHOWN]:
        try:
            out.append((path.parent.name, json.loads(path.read_text())))
        except (OSError, ValueError):
            continue  # being replaced, or damaged: the page shows the others
    return out


def layers_html(home) -> str:
    """The page's section: one figure per finished sweep (feature set and task)."""
    if home is None:
        return '<p class="muted">no data directory: start with <code>--home DIR</code></p>'
    sweeps = _sweeps(home.layers)
    if not sweeps:
        return (
            '<p class="muted">no layer sweeps yet: <code>GET /v1/featuresets/{id}/layers'
            "?task=TASK</code></p>"
        )
    parts = []
    for key, answer in sweeps:
        train = answer.get("featuresets", {}).get("train", "?")
        title = f"{answer.get('task', {}).get('name', '?')} on {answer.get('encoder', '?')}"
        parts.append(
            f"<h3>{escape(title)} <code>{escape(train)}</code></h3>"
            f"<p>{escape(answer.get('recommendation', ''))}</p>"
            f'<img alt="{escape(title)}: probes by layer" src="{plot_url(key)}">'
        )
    return "".join(parts)


@router.get(f"/ui/layers/{{key}}/{LAYERS_PLOT}")
def layers_png(key: str, request: Request) -> Response:
    home = request.app.state.home
    path = home.layers / key / LAYERS_PLOT if home is not None else None
    if path is None or not _KEY.fullmatch(key) or not path.is_file():
        return Response(status_code=404)
    return FileResponse(path, media_type="image/png")
