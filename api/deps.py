"""Typed dependencies the routes declare: the store, the settings, the response format, the
torch threads."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Depends, Header, HTTPException, Request

from snowfire.cache import JSON, SAFETENSORS, Store
from snowfire.options import ThreadBudget

from .settings import Settings

Format = Literal["safetensors", "json"]

#: Media ranges a client may ask for, and what each gets. Wildcards get safetensors.
_MEDIA: dict[str, Format] = {
    SAFETENSORS: "safetensors",
    JSON: "json",
    "application/*": "safetensors",
    "*/*": "safetensors",
}


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_store(request: Request) -> Store:
    return request.app.state.store  # opened in the app's lifespan


def get_threads(request: Request) -> ThreadBudget:
    return request.app.state.threads  # decided in the app's lifespan


#: Content negotiation: the responses' media types document it, not a header parameter.
AcceptHeader = Annotated[str | None, Header(include_in_schema=False)]


def response_format(accept: AcceptHeader = None) -> Format:
    """The format an `Accept` header asks for: highest q wins, the first listed on a tie;
    safetensors when the header is absent or a wildcard; 406 when nothing we serve fits."""
    if not accept or not accept.strip():
        return "safetensors"
    best: tuple[float, Format] | None = None
    for item in accept.split(","):
        media, *params = (p.strip() for p in item.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        fmt = _MEDIA.get(media.lower())
        if fmt is not None and q > 0 and (best is None or q > best[0]):
            best = (q, fmt)
    if best is None:
        raise HTTPException(
            status_code=406,
            detail=f"cannot answer Accept: {accept!r}; this endpoint serves {SAFETENSORS} "
            f"(the default) or {JSON}",
        )
    return best[1]


SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[Store, Depends(get_store)]
ThreadsDep = Annotated[ThreadBudget, Depends(get_threads)]
FormatDep = Annotated[Format, Depends(response_format)]
