"""`RemoteStore`: the read side of `Store` over the snowfire REST service.

Same methods, same return types, same exceptions (the service names the store's exception
class in each error body), so a trainer cannot tell a URL from a directory.

A read is made in pages (paging.py): the selection is cut into runs of examples whose answer
stays within the page bound (and the service's body cap), from the examples' lengths (one
GET of /lengths per set, kept); the answer is allocated once and each page's body is read
straight into its place. A selection whose sizes the lengths cannot say (keys of other sets,
indices out of range) goes out as one request, halved while the service answers 413, so the
service names what is wrong with it.

A try that fails for a reason that may pass (refused, reset, a body cut short, 502/503/504, 429
with Retry-After) is tried again under the reader's `RetryPolicy` (retry.py); every request
here is a read, so repeating one is safe. A body cut short keeps the examples that arrived
whole, and the next try asks only for the rest: that is progress, from which the policy's
attempts and deadline count again. A try that brought nothing whole asks for half as many
examples (a smaller header), down to one. A JSON body is returned only whole: its length is
checked against Content-Length (or its chunked framing), and a short one is asked for again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import (
    FeatureSetNotFoundError,
    InvalidSelectionError,
    RequestTooLargeError,
    ServiceUnreachableError,
)
from .exchange import TryFailed, body_into_buffer, exchange, read_into, target
from .paging import Assembly, check_page_bytes, page_bytes_from_env, split_pages
from .plan import check_index_type, check_layers, read_dtype
from .retry import RetryPolicy, Tries
from .types import ExampleBatch, FeatureSetInfo
from .wire import SAFETENSORS, decode, example_bytes, header_bound

log = logging.getLogger(__name__)

PARALLEL_MIN_EXAMPLES = 32  # a read of fewer examples than twice this goes in one request


class RemoteStore:
    """Read feature sets from `snowfire serve` at `base_url` (e.g. "http://host:8000")."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 120.0,
        parallel: int = 1,
        retry: RetryPolicy | None = None,
        page_bytes: int | None = None,
    ):
        """timeout: seconds one try may wait for the service's next bytes. parallel: pages
        sent at once (one connection each; a read of one page is split in as many). 1 by
        default: the service streams one answer while it reads it, and on two cores a second
        connection gained nothing (benchmarks/README.md, stop 22). retry: what is tried again
        and for how long (default: `RetryPolicy.from_env()`). page_bytes: the most one answer
        may hold (default: SNOWFIRE_PAGE_BYTES, else paging.DEFAULT_PAGE_BYTES)."""
        import urllib3

        self.url = base_url.rstrip("/")
        # urllib3 reads a body of many MB in large pieces: 1.3x httpx's throughput on 47 MB
        # responses here (benchmarks/README.md); thread-safe, keeps connections alive. Its own
        # retries stay off: _request retries (retry.py), a body cut short included
        self._pool = urllib3.PoolManager(
            maxsize=8, retries=False, timeout=urllib3.Timeout(connect=10.0, read=timeout)
        )
        self._infos: dict[str, FeatureSetInfo] = {}
        self._keys: dict[str, list[str]] = {}
        self._lengths: dict[str, np.ndarray] = {}
        self._key_places: dict[str, dict[str, int]] = {}
        self._max_body: int | None = None
        self.parallel = max(1, parallel)
        self.retry = RetryPolicy.from_env() if retry is None else retry
        self.page_bytes = (
            page_bytes_from_env() if page_bytes is None else check_page_bytes(page_bytes)
        )

    def __repr__(self) -> str:
        return f"RemoteStore({self.url!r})"

    @property
    def path(self) -> str:
        """Where the features live (a `Store` answers its directory)."""
        return self.url

    def close(self) -> None:
        self._pool.clear()

    def __enter__(self) -> RemoteStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------- look-up
    def list_featuresets(self) -> list[FeatureSetInfo]:
        return [_info(d) for d in self._get("/v1/featuresets", params={"manifest": "true"})]

    def get_featureset(self, fs_id: str) -> FeatureSetInfo:
        if fs_id not in self._infos:  # a feature set never changes under its id
            self._infos[fs_id] = _info(self._get(f"/v1/featuresets/{_quote(fs_id)}"))
        return self._infos[fs_id]

    def find_featureset(
        self,
        *,
        encoder: str,
        task: str,
        split: str,
        pair_encoding: str | None = None,
        sha256: str | None = None,
        read: str | None = None,
    ) -> FeatureSetInfo:
        params = {"encoder": encoder, "task": task, "split": split}
        for name, value in (("pair_encoding", pair_encoding), ("sha256", sha256), ("read", read)):
            if value is not None:
                params[name] = value
        return _info(self._get("/v1/featuresets/find", params=params))

    def featureset_keys(self, fs_id: str) -> list[str]:
        if fs_id not in self._keys:
            self._keys[fs_id] = self._get(f"/v1/featuresets/{_quote(fs_id)}/keys")["keys"]
        return self._keys[fs_id]

    def featureset_lengths(self, fs_id: str) -> list[int]:
        return self._lengths_of(fs_id).tolist()

    def _lengths_of(self, fs_id: str) -> np.ndarray:
        if fs_id not in self._lengths:  # (n,) a feature set never changes under its id
            got = self._get(f"/v1/featuresets/{_quote(fs_id)}/lengths")["lengths"]
            self._lengths[fs_id] = np.asarray(got, dtype=np.int64)
        return self._lengths[fs_id]

    def storage_order(self, fs_id: str) -> list[int]:
        return self._get(f"/v1/featuresets/{_quote(fs_id)}/order")["order"]

    def featureset_texts(self, fs_id: str) -> list[dict[str, Any]]:
        return self._get(f"/v1/featuresets/{_quote(fs_id)}/texts")["texts"]

    # ---------------------------------------------------------------- reading
    def read(
        self,
        fs_id: str,
        indices: Sequence[int] | None = None,
        keys: Sequence[str] | None = None,
        layers: Sequence[int] | None = None,
        dtype: str | None = None,
    ) -> ExampleBatch:
        """Features of some examples of a feature set, by index in the set or by key (dtype as
        in `Store.read`: an int8 set comes over the wire as stored, dequantised here)."""
        if (indices is None) == (keys is None):
            raise InvalidSelectionError("give exactly one of indices or keys")
        if dtype is not None:
            read_dtype(dtype, self.get_featureset(fs_id).dtype)
        field = "indices" if indices is not None else "keys"
        given = indices if indices is not None else keys
        assert given is not None  # exactly one of them, checked above
        selection = [_plain(x) for x in given]
        if indices is not None:  # checked here, as the local store does (JSON's 1.0 is 1)
            for i in selection:
                check_index_type(i)
        layer_list = None if layers is None else [_plain(layer) for layer in layers]
        if layer_list is not None:  # checked here, as the local store does, with its message
            check_layers(layer_list, self.get_featureset(fs_id).num_layers)
        if not selection:
            return _as_dtype(self._read_one(fs_id, field, selection, layer_list), dtype)
        positions = self._positions(fs_id, field, selection)
        if positions is None:  # sizes unknown: the service says what is wrong, or answers
            return _as_dtype(self._read_split(fs_id, field, selection, layer_list), dtype)
        return _as_dtype(self._read_pages(fs_id, positions, layer_list), dtype)

    # ---------------------------------------------------------------- internals
    def _positions(self, fs_id: str, field: str, selection: list) -> np.ndarray | None:
        """(n,) the selection's places in the set, or None when some are not there (a key of
        another set of the pool, an index out of range)."""
        lengths = self._lengths_of(fs_id)
        if field == "indices":
            positions = np.asarray(selection, dtype=np.int64)
            return None if ((positions < 0) | (positions >= len(lengths))).any() else positions
        if fs_id not in self._key_places:
            self._key_places[fs_id] = {k: i for i, k in enumerate(self.featureset_keys(fs_id))}
        places = self._key_places[fs_id]
        if any(k not in places for k in selection):
            return None
        return np.array([places[k] for k in selection], dtype=np.int64)

    def _read_pages(self, fs_id: str, positions: np.ndarray, layers: list | None) -> ExampleBatch:
        """Examples `positions` of the set in pages under the page bound and the service's
        cap, each read into its place in one answer; pages go out `parallel` at a time."""
        info = self.get_featureset(fs_id)
        picked = layers if layers is not None else list(range(info.num_layers))
        lengths = self._lengths_of(fs_id)[positions]  # (n,)
        out = Assembly(lengths, picked, info.dim, info.dtype)
        sizes = example_bytes(lengths, len(picked), info.dim, info.dtype)
        limit = min(self.page_bytes - header_bound(fs_id, len(picked)), self._body_cap()) - 8
        most = None
        if self.parallel > 1 and len(positions) >= 2 * PARALLEL_MIN_EXAMPLES:
            most = -(-len(positions) // self.parallel)  # at least one page per connection
        pages = split_pages(sizes, limit, most)
        if self.parallel == 1 or len(pages) == 1:
            for lo, hi in pages:
                self._fetch(fs_id, positions, layers, out, lo, hi)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(self.parallel, len(pages))) as pool:
                done = pool.map(lambda p: self._fetch(fs_id, positions, layers, out, *p), pages)
                list(done)
        return out.batch()

    def _fetch(
        self,
        fs_id: str,
        positions: np.ndarray,
        layers: list | None,
        out: Assembly,
        lo: int,
        hi: int,
    ) -> None:
        """Examples lo:hi of `positions` into `out`: one request, or, after a cut, one for
        the examples still missing (fewer when a try brought none whole, or the service
        answers 413); the tries count from the last progress."""
        path = f"/v1/featuresets/{_quote(fs_id)}/features"
        tries = Tries(self.retry, target(self.url, "POST", path), ServiceUnreachableError)
        ask = hi - lo
        while lo < hi:
            end = min(hi, lo + ask)
            body: dict[str, Any] = {"indices": positions[lo:end].tolist()}
            if layers is not None:
                body["layers"] = layers

            def read(response, a=lo, b=end):
                length = response.headers.get("Content-Length")
                out.receive(read_into(response), a, b, None if length is None else int(length))
                response.release_conn()

            try:
                exchange(
                    self._send,
                    self.url,
                    "POST",
                    path,
                    json=body,
                    headers={"Accept": SAFETENSORS},
                    read=read,
                )
            except TryFailed as retry:
                if retry.whole:
                    lo += retry.whole
                    tries.progressed()
                elif retry.cut:
                    ask = max(1, ask // 2)
                tries.failed(retry.cause, retry.after)
                continue
            except RequestTooLargeError:
                if end - lo == 1:
                    raise
                ask = (end - lo) // 2
                log.info(
                    "%s: %d examples too large for one answer; trying %d", fs_id, end - lo, ask
                )
                continue
            lo = end
            tries.progressed()

    def _read_split(self, fs_id: str, field: str, chunk: list, layers: list | None):
        """One request for `chunk`, halved (recursively) while the service answers 413."""
        try:
            return self._read_one(fs_id, field, chunk, layers)
        except RequestTooLargeError:
            if len(chunk) == 1:
                raise
        half = len(chunk) // 2
        log.info("%s: %d examples too large for one response; trying %d", fs_id, len(chunk), half)
        parts = [self._read_split(fs_id, field, c, layers) for c in (chunk[:half], chunk[half:])]
        return ExampleBatch.concat(parts)

    def _read_one(self, fs_id: str, field: str, chunk: list, layers: list | None) -> ExampleBatch:
        body: dict[str, Any] = {field: chunk}
        if layers is not None:
            body["layers"] = layers
        data = self._request(
            "POST",
            f"/v1/featuresets/{_quote(fs_id)}/features",
            json=body,
            headers={"Accept": SAFETENSORS},
            read=body_into_buffer,
        )
        return decode(data)

    def _body_cap(self) -> int:
        if self._max_body is None:
            self._max_body = int(self._get("/healthz")["limits"]["max_body_bytes"])
        return self._max_body

    def _get(self, path: str, params: dict | None = None) -> Any:
        return json.loads(self._request("GET", path, params=params))

    def _send(self, method: str, url: str, body: bytes | None, headers: dict[str, str]):
        """One HTTP exchange (a seam for tests); the urllib3 response, its body not yet read
        (`.data` reads it; `exchange.body_into_buffer` reads a large one without copies)."""
        return self._pool.request(method, url, body=body, headers=headers, preload_content=False)

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict | None = None,
        json: Any = None,
        headers: dict[str, str] | None = None,
        read: Callable[[Any], Any] | None = None,
    ):
        """The body of a 2xx answer, whole (read by `read`); a failure that may pass is tried
        again under `self.retry`, and ServiceUnreachableError names the tries when it gives up;
        any other answer raises the store's exception the service names."""
        what = target(self.url, method, path, params)
        tries = Tries(self.retry, what, ServiceUnreachableError)
        while True:
            try:
                return exchange(
                    self._send,
                    self.url,
                    method,
                    path,
                    params=params,
                    json=json,
                    headers=headers,
                    read=read,
                )
            except TryFailed as retry:
                tries.failed(retry.cause, retry.after)


def _plain(x: Any) -> Any:
    """numpy scalars as Python ones, so they travel as JSON; anything else as given (the
    service rejects it with the store's message)."""
    return x.item() if isinstance(x, np.generic) else x


def _quote(fs_id: str) -> str:
    """The id as one path segment; an empty one names no set (its URL is the listing's)."""
    from urllib.parse import quote

    if not fs_id:
        raise FeatureSetNotFoundError(f"no feature set {fs_id!r}")
    return quote(fs_id, safe="")


def _info(d: dict[str, Any]) -> FeatureSetInfo:
    return FeatureSetInfo.from_dict(d, d.get("manifest", {}))


def _as_dtype(batch: ExampleBatch, dtype: str | None) -> ExampleBatch:
    """A batch as it came over the wire, in the dtype `Store.read` would give."""
    if dtype == "int8":
        return batch
    if batch.scales is not None:
        return batch.dequantized(dtype or "float32")
    return batch if dtype is None else batch.dequantized(dtype)
