"""`RemoteStore`: the read side of `Store` over the snowfire REST service.

Same methods, same return types, same exceptions (the service names the store's exception
class in each error body), so a trainer cannot tell a URL from a directory. A large read is
split into several requests, each sized to about half the service's body cap from what the
earlier ones weighed; a request the service still refuses (413) is halved and retried.

A try that fails for a reason that may pass (refused, reset, a body cut short, 502/503/504, 429
with Retry-After) is tried again under the reader's `RetryPolicy` (retry.py); every request
here is a read, so repeating one is safe. A body is returned only whole: its length is checked
against Content-Length (or its chunked framing), and a short one is asked for again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import errors
from .errors import (
    FeatureSetNotFoundError,
    InvalidSelectionError,
    RequestTooLargeError,
    ServiceUnreachableError,
    StoreError,
)
from .plan import check_index_type, check_layers, read_dtype
from .retry import RATE_LIMITED, RETRY_STATUSES, RetryPolicy, Tries, retry_after
from .types import ExampleBatch, FeatureSetInfo
from .wire import SAFETENSORS, decode

log = logging.getLogger(__name__)

#: Store errors by class name, as the service reports them in `"error"`.
_ERRORS = {
    name: cls
    for name, cls in vars(errors).items()
    if isinstance(cls, type) and issubclass(cls, StoreError)
}
#: When the body names no class: what each status means.
_BY_STATUS: dict[int, type[StoreError]] = {
    404: FeatureSetNotFoundError,
    413: RequestTooLargeError,
    422: InvalidSelectionError,
}
_GUESS_TOKENS = 64  # tokens per example assumed before a set reports its num_tokens
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
    ):
        """timeout: seconds one try may wait for the service's next bytes. parallel: requests
        a large read is split into and sent at once (one connection each). 1 by default: the
        service streams one answer while it reads it, and one body is decoded in place, where
        parts would be copied into one batch at the end (benchmarks/README.md, stop 22).
        retry: what is tried again and for how long (default: `RetryPolicy.from_env()`)."""
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
        self._max_body: int | None = None
        self.parallel = max(1, parallel)
        self.retry = RetryPolicy.from_env() if retry is None else retry

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
        step = self._first_step(fs_id, layer_list)
        if len(selection) >= 2 * PARALLEL_MIN_EXAMPLES and self.parallel > 1:
            step = min(step, -(-len(selection) // self.parallel))  # one part per connection
        chunks = [selection[i : i + step] for i in range(0, len(selection), step)]
        if len(chunks) == 1:
            parts = [self._read_split(fs_id, field, chunks[0], layer_list)]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(self.parallel, len(chunks))) as pool:
                parts = list(
                    pool.map(lambda c: self._read_split(fs_id, field, c, layer_list), chunks)
                )
        return _as_dtype(parts[0] if len(parts) == 1 else ExampleBatch.concat(parts), dtype)

    # ---------------------------------------------------------------- internals
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
            read=_body_into_buffer,
        )
        return decode(data)

    def _first_step(self, fs_id: str, layers: list | None) -> int:
        """Examples in the first request: about half the body cap at the set's mean length."""
        try:
            info = self.get_featureset(fs_id)
        except FeatureSetNotFoundError:
            return 1  # let the read itself raise, with the service's message
        mean_tokens = info.manifest.get("num_tokens", _GUESS_TOKENS * info.num_examples) / max(
            info.num_examples, 1
        )
        n_layers = len(layers) if layers is not None else info.num_layers
        per_token = info.bytes_per_token(n_layers) + 5  # + word, type ids
        per_example = max(1.0, mean_tokens * per_token + 48)  # + offsets, pair start, key
        return max(1, int(self._body_cap() // 2 / per_example))

    def _body_cap(self) -> int:
        if self._max_body is None:
            self._max_body = int(self._get("/healthz")["limits"]["max_body_bytes"])
        return self._max_body

    def _get(self, path: str, params: dict | None = None) -> Any:
        return json.loads(self._request("GET", path, params=params))

    def _send(self, method: str, url: str, body: bytes | None, headers: dict[str, str]):
        """One HTTP exchange (a seam for tests); the urllib3 response, its body not yet read
        (`.data` reads it; `_body_into_buffer` reads a large one without copies)."""
        return self._pool.request(method, url, body=body, headers=headers, preload_content=False)

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict | None = None,
        json: Any = None,
        headers: dict[str, str] | None = None,
        read: Callable[[Any], bytes | memoryview] | None = None,
    ):
        """The body of a 2xx answer, whole (read by `read`); a failure that may pass is tried
        again under `self.retry`, and ServiceUnreachableError names the tries when it gives up;
        any other answer raises the store's exception the service names."""
        import json as json_lib
        from urllib.parse import urlencode

        url = self.url + path + (f"?{urlencode(params)}" if params else "")
        headers = dict(headers or {})
        body = None
        if json is not None:
            body = json_lib.dumps(json).encode()
            headers["Content-Type"] = "application/json"
        read = read or _whole_body
        transient = _transient()
        tries = Tries(self.retry, f"{method} {url}", ServiceUnreachableError)
        while True:
            try:
                response = self._send(method, url, body, headers)
            except transient as err:  # refused, reset before an answer, connect timeout
                tries.failed(f"cannot reach the snowfire service at {self.url}: {_cause(err)}")
                continue
            status = response.status
            if 200 <= status < 300:
                try:
                    return read(response)
                except transient as err:  # reset or closed mid-body: never returned short
                    _discard(response)
                    tries.failed(f"HTTP {status}, the body cut short: {_cause(err)}")
                    continue
            try:
                text = response.data.decode("utf-8", "replace")
            except transient as err:
                _discard(response)
                tries.failed(f"HTTP {status}, the body cut short: {_cause(err)}")
                continue
            try:
                payload = json_lib.loads(text)
                detail, name = str(payload.get("detail")), payload.get("error")
            except (ValueError, AttributeError):
                detail, name = text.strip()[:300], None
            after = retry_after(response.headers.get("Retry-After"))
            if status in RETRY_STATUSES or (status == RATE_LIMITED and after is not None):
                tries.failed(f"HTTP {status}: {detail}", after)
                continue
            cls = _ERRORS.get(name) or _BY_STATUS.get(status)
            if cls is None:
                raise StoreError(f"{method} {self.url}{path}: HTTP {status}: {detail}")
            raise cls(detail)


def _transient() -> tuple[type[BaseException], ...]:
    """What a failed exchange raises when the network, not the request, was at fault."""
    import http.client

    import urllib3

    return (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)


def _cause(err: BaseException) -> str:
    """One line for a network failure: urllib3 nests the socket's error in its reason."""
    reason = getattr(err, "reason", None) or err
    return f"{type(reason).__name__}: {reason}"


def _discard(response) -> None:
    """Close a response whose connection broke, so the pool opens a new one."""
    try:
        response.close()
    finally:
        response.release_conn()


def _whole_body(response) -> bytes:
    """The body; urllib3 raises (ProtocolError) when fewer bytes than Content-Length or a
    broken chunked framing came, rather than return them."""
    data = response.data
    response.release_conn()
    return data


def _body_into_buffer(response) -> memoryview | bytes:
    """The body read straight into one writable buffer of its Content-Length, which `decode`
    then views without copying; `.data` when the length is not given. The buffer is not
    zero-filled first (np.empty, not bytearray): for a large body that fill cost as much as
    receiving it."""
    length = response.headers.get("Content-Length")
    if length is None:
        return response.data
    buf = np.empty(int(length), dtype=np.uint8).data  # a memoryview of it
    # urllib3's readinto reads into a temporary bytes and copies it over; the http.client
    # response under it reads into the buffer itself (the body is never content-encoded here)
    raw = getattr(response, "_fp", None)
    readinto = getattr(raw, "readinto", None) or response.readinto
    view, got = buf, 0
    while got < len(buf):
        n = readinto(view[got:])
        if not n:
            raise ConnectionError(f"the service sent {got} of {len(buf)} body bytes, then closed")
        got += n
    response.release_conn()
    return buf


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
