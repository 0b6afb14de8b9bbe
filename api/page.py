"""The page at `/`: feature sets, jobs (live), runs with their metrics, layer weights and ❄️/🔥
tables. Server-rendered HTML; a few lines of inline script re-fetch the jobs fragment every two
seconds and send cancels through the JSON API. No build step, no external asset.

With API keys on, a browser signs in once at /ui/login: the key goes into an HttpOnly,
SameSite=Strict cookie that the keys middleware accepts like the Authorization header.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from snowfire.cache import Store
from snowfire.rundir import CONFIG, METRICS, SCALAR_MIX, TABLE, TABLE_PLOT

from .job_schemas import JobDetail
from .layers_page import layers_html
from .security import COOKIE

router = APIRouter(include_in_schema=False)
_LIVE = ("queued", "running")

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5rem auto;max-width:1200px;color:#222}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{text-align:left;padding:.25rem .5rem;border-bottom:1px solid #eee;vertical-align:top}
th{background:#f6f6f6}td.n{text-align:right;font-variant-numeric:tabular-nums}
.done{color:#17803d}.failed{color:#b42318}.running{color:#1d4ed8}.cancelled{color:#777}
progress{width:8rem}pre{margin:0;font-size:12px;white-space:pre-wrap;max-width:40rem}
.muted{color:#777}img{max-width:100%}
"""

_SCRIPT = """
async function refreshJobs(){
  const r = await fetch('/ui/jobs', {credentials: 'same-origin'});
  if (r.ok) document.getElementById('jobs').innerHTML = await r.text();
}
document.addEventListener('click', async (e) => {
  const id = e.target.dataset && e.target.dataset.cancel;
  if (!id) return;
  e.target.disabled = true;
  const r = await fetch('/v1/jobs/' + encodeURIComponent(id) + '/cancel',
                        {method: 'POST', credentials: 'same-origin'});
  if (!r.ok) alert('cancel: ' + (await r.json()).detail);
  refreshJobs();
});
setInterval(refreshJobs, 2000);
"""


def _table(
    headers: list[str], rows: list[list[str]], numeric: frozenset[int] | set[int] = frozenset()
) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def featuresets_html(store: Store) -> str:
    try:
        infos = store.list_featuresets()
    except Exception as err:  # noqa: BLE001 - the page says what is wrong with the store
        return f'<p class="failed">the store cannot be read: {escape(str(err))}</p>'
    if not infos:
        return '<p class="muted">no feature sets yet: <code>snowfire extract</code></p>'
    rows = []
    for info in sorted(infos, key=lambda i: i.id):
        tokens = int(info.manifest.get("num_tokens", 0))
        size = tokens * info.bytes_per_token()
        name = info.encoder.get("name") or info.encoder.get("spec", "?")
        pairs = info.encoder.get("pair_encoding") or "—"
        rows.append(
            [
                f"<code>{escape(info.id)}</code>",
                escape(str(name)),
                escape(str(pairs)),
                escape(info.task or "—"),
                escape(info.split or "—"),
                f"{info.num_examples:,}",
                f"{tokens:,}",
                f"{info.num_layers} × {info.dim}",
                _size(size),
            ]
        )
    headers = [
        "id",
        "encoder",
        "pairs",
        "task",
        "split",
        "examples",
        "tokens",
        "layers × dim",
        "bytes",
    ]
    return _table(headers, rows, numeric={5, 6, 8})


def jobs_html(request: Request) -> str:
    queue, home = request.app.state.queue, request.app.state.home
    if queue is None:
        return '<p class="muted">no job queue: start with <code>--home DIR</code></p>'
    jobs = queue.list(limit=50)
    if not jobs:
        return '<p class="muted">no jobs yet: <code>POST /v1/jobs</code></p>'
    rows = []
    for job in jobs:
        d = JobDetail.of(job, home, tail=5)
        what = ", ".join(f"{k}={d.params[k]}" for k in ("task", "head", "input") if d.params.get(k))
        bar = "—"
        if d.progress is not None:
            bar = f'<progress max="1" value="{d.progress:.3f}"></progress> {d.progress:.0%}'
        cancel = (
            f'<button data-cancel="{escape(d.id)}">cancel</button>'
            if d.status in _LIVE and not d.cancel_requested
            else ""
        )
        status = d.status + (" (cancelling)" if d.cancel_requested and d.status in _LIVE else "")
        log = escape("\n".join(d.log[-5:]))
        rows.append(
            [
                f"<code>{escape(d.id)}</code>",
                escape(d.kind),
                escape(what),
                f'<span class="{escape(d.status)}" data-status="{escape(d.status)}">'
                f"{escape(status)}</span>",
                bar,
                str(d.attempts),
                f"<pre>{log}</pre>"
                + (f'<div class="failed">{escape(d.error)}</div>' if d.error else ""),
                cancel,
            ]
        )
    return _table(["job", "kind", "what", "status", "progress", "attempts", "log", ""], rows)


def _mix_svg(weights: list[float]) -> str:
    """Bars of a scalar mix's layer weights, drawn inline."""
    width, height, top = 18 * len(weights), 60, max(max(weights), 1e-9)
    bars = "".join(
        f'<rect x="{i * 18 + 2}" y="{height - 14 - w / top * (height - 18):.1f}" width="14" '
        f'height="{w / top * (height - 18):.1f}" fill="#4c78a8"><title>layer {i}: {w:.3f}'
        f'</title></rect><text x="{i * 18 + 9}" y="{height - 2}" font-size="9" '
        f'text-anchor="middle">{i}</text>'
        for i, w in enumerate(weights)
    )
    return (
        f'<svg role="img" aria-label="layer weights" width="{width}" height="{height}">{bars}</svg>'
    )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _markdown_table(text: str) -> str:
    """The first pipe table of a markdown file, as HTML."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|")]
    if len(lines) < 2:
        return ""
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    return _table(cells[0], [[escape(c).replace("**", "") for c in r] for r in cells[2:]])


def runs_html(runs_dir: Path | None) -> str:
    if runs_dir is None or not runs_dir.is_dir():
        return '<p class="muted">no runs yet</p>'
    rows, compares = [], []
    for run in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        config = _read_json(run / CONFIG) or {}
        if (run / TABLE).is_file():
            src = f"/ui/runs/{escape(run.name)}/{TABLE_PLOT}"
            img = (
                f'<img alt="{escape(run.name)} table" src="{src}">'
                if (run / TABLE_PLOT).is_file()
                else ""
            )
            compares.append(
                f"<h3>{escape(run.name)}: ❄️ or 🔥</h3>"
                + _markdown_table((run / TABLE).read_text())
                + img
            )
            continue
        metrics = _read_json(run / METRICS)
        kind = "🔥 fine-tune" if "finetune" in config else "❄️ head" if "train" in config else "?"
        cfg = config.get("train") or config.get("finetune") or {}
        dev = (metrics or {}).get("dev") or {}
        shown = ", ".join(f"{k} {v:.4f}" for k, v in dev.items() if isinstance(v, (int, float)))
        mix = (_read_json(run / SCALAR_MIX) or {}).get("mix")
        rows.append(
            [
                f"<code>{escape(run.name)}</code>",
                kind,
                escape(str(cfg.get("task", "—"))),
                escape(str(cfg.get("head", "—" if "train" in config else "encoder"))),
                escape(shown) if metrics else '<span class="muted">running or unfinished</span>',
                _mix_svg([float(w) for w in mix]) if mix else "",
            ]
        )
    html = _table(["run", "kind", "task", "head", "dev", "layer weights"], rows) if rows else ""
    return (html + "".join(compares)) or '<p class="muted">no runs yet</p>'


def _runs_dir(request: Request) -> Path | None:
    home = request.app.state.home
    return home.runs if home is not None else None


@router.get("/", response_class=HTMLResponse)
def page(request: Request) -> HTMLResponse:
    store: Store = request.app.state.store
    settings = request.app.state.settings
    embed = settings.encoder or "off (start with --encoder)"
    body = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>snowfire</title><meta name="viewport" content="width=device-width,initial-scale=1">
<style>{_STYLE}</style></head><body>
<h1>snowfire ❄️🔥</h1>
<p class="muted">store <code>{escape(str(store.path))}</code> · embed encoder
{escape(embed)} · <a href="/docs">API</a> · <a href="/metrics">metrics</a></p>
<h2>Feature sets</h2><div id="featuresets">{featuresets_html(store)}</div>
<h2>Jobs</h2><div id="jobs">{jobs_html(request)}</div>
<h2>Runs</h2><div id="runs">{runs_html(_runs_dir(request))}</div>
<h2>Which layer?</h2><div id="layers">{layers_html(request.app.state.home)}</div>
<script>{_SCRIPT}</script></body></html>"""
    return HTMLResponse(body)


@router.get("/ui/jobs", response_class=HTMLResponse)
def jobs_fragment(request: Request) -> HTMLResponse:
    return HTMLResponse(jobs_html(request))


@router.get(f"/ui/runs/{{run}}/{TABLE_PLOT}")
def run_table_png(run: str, request: Request) -> Response:
    runs = _runs_dir(request)
    path = (runs / run / TABLE_PLOT) if runs is not None else None
    if path is None or "/" in run or run.startswith(".") or not path.is_file():
        return Response(status_code=404)
    return FileResponse(path, media_type="image/png")


_LOGIN = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>snowfire: sign
in</title><style>{style}</style></head><body><h1>snowfire</h1><p>{message}</p>
<form method="post" action="/ui/login"><label>API key <input type="password" name="key"
autofocus></label> <button type="submit">sign in</button></form></body></html>"""


@router.get("/ui/login", response_class=HTMLResponse)
def login_form() -> HTMLResponse:
    return HTMLResponse(_LOGIN.format(style=_STYLE, message="This service needs an API key."))


@router.post("/ui/login")
async def login(request: Request) -> Response:
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    key = (form.get("key") or [""])[0].strip()
    if request.app.state.api_keys.scope_of(f"Bearer {key}") is None:
        message = "That key is not known here. Try again."
        return HTMLResponse(_LOGIN.format(style=_STYLE, message=message), status_code=401)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        COOKIE, key, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )
    return response
