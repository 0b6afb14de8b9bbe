"""Optional API keys, and CORS only when configured.

Keys come from SNOWFIRE_API_KEYS (comma-separated `KEY` or `KEY:write`) and/or a keys file
(SNOWFIRE_API_KEYS_FILE: one `KEY [read|write]` per line, `#` comments). With no key
configured the service is open (it binds 127.0.0.1 by default). With keys, every route but
`/healthz` needs `Authorization: Bearer KEY`: a missing or unknown key is a 401 with
`WWW-Authenticate: Bearer`; a read key may read everything, and submitting or cancelling a job
needs a write key (403 otherwise); a method a path does not take is 405 for any key. Keys
are kept as sha256 digests and compared in constant time against every configured digest.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from pathlib import Path

from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

OPEN_PATHS = ("/healthz", "/ui/login")
#: The page's sign-in cookie (api/page.py): HttpOnly, SameSite=Strict, holds the key itself.
COOKIE = "snowfire_key"
SCOPES = ("read", "write")


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def load_keys(inline: str | None, file: Path | None) -> dict[bytes, str]:
    """{sha256 of key: scope}; ValueError naming the bad entry (and line) otherwise."""
    entries: list[tuple[str, str, str]] = []
    for i, item in enumerate((inline or "").split(",")):
        if item.strip():
            key, _, scope = item.strip().partition(":")
            entries.append((key, scope or "read", f"SNOWFIRE_API_KEYS entry {i + 1}"))
    if file is not None:
        for n, line in enumerate(Path(file).read_text().splitlines(), start=1):
            text = line.split("#", 1)[0].strip()
            if text:
                key, *rest = text.split()
                entries.append((key, rest[0] if rest else "read", f"{file}:{n}"))
    keys = {}
    for key, scope, where in entries:
        if scope not in SCOPES:
            raise ValueError(f"{where}: scope {scope!r}, expected one of {', '.join(SCOPES)}")
        if len(key) < 16:
            raise ValueError(f"{where}: a key of {len(key)} characters; use at least 16")
        keys[_digest(key)] = scope
    return keys


def _write_operations() -> list[re.Pattern[str]]:
    """The paths of the operations that need a write key: the jobs router's POSTs (submit,
    cancel). Any other method or path is a read, or no operation at all: the router answers
    it (405 for a method a listed path does not take, 404 for an unknown path), whatever the
    key's scope."""
    from .job_routes import router

    routes = [r for r in router.routes if isinstance(r, Route)]  # every one: an APIRoute
    return [r.path_regex for r in routes if "POST" in (r.methods or ())]


def _needs_write(method: str, path: str, writes: list[re.Pattern[str]]) -> bool:
    return method == "POST" and any(rx.match(path) for rx in writes)


class KeyRing:
    """The configured keys (as digests) and the scope a presented key has."""

    def __init__(self, keys: dict[bytes, str]) -> None:
        self.keys = keys

    def scope_of(self, header: str | None) -> str | None:
        if not header or not header.startswith("Bearer "):
            return None
        given = _digest(header[len("Bearer ") :].strip())
        found = None
        for digest, scope in self.keys.items():  # every one compared: no early exit
            if hmac.compare_digest(given, digest):
                found = scope
        return found


def _cookie(header: str | None) -> str | None:
    for part in (header or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            return f"Bearer {value}"
    return None


class APIKeys:
    """ASGI middleware enforcing the keys (a no-op without keys). The key comes from the
    Authorization header or, for the page in a browser, the sign-in cookie."""

    def __init__(self, app: ASGIApp, ring: KeyRing) -> None:
        self.app, self.ring, self.keys = app, ring, ring.keys
        self.writes = _write_operations()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.keys or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        granted = self.ring.scope_of(headers.get("authorization") or _cookie(headers.get("cookie")))
        response: Response
        if granted is None and scope["path"] == "/" and scope["method"] == "GET":
            response = RedirectResponse("/ui/login", status_code=303)
        elif granted is None:
            response = JSONResponse(
                {
                    "detail": "an API key is needed: Authorization: Bearer KEY",
                    "error": "Unauthorized",
                },
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="snowfire"'},
            )
        elif granted != "write" and _needs_write(scope["method"], scope["path"], self.writes):
            response = JSONResponse(
                {
                    "detail": "this key may read, not submit or cancel jobs (a write key can)",
                    "error": "Forbidden",
                },
                status_code=403,
            )
        else:
            await self.app(scope, receive, send)
            return
        await response(scope, receive, send)
