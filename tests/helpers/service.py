"""The service's test helpers: a feature set written through the store's own writer, the
service in a thread (a real socket, a real uvicorn) and its restart on a proxy's cue, and a
RemoteStore's requests counted."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np

from snowfire.cache import Store, digest, example_key

LENGTHS = [3, 5, 2, 4, 6]  # tokens per example
LAYERS, DIM = 3, 8


def build_featureset(
    store: Store, fs_id: str, dtype: str, lengths=LENGTHS, seed=0, split="dev"
) -> str:
    """One feature set of random pair examples, written through the store's own writer."""
    rng = np.random.default_rng(seed)
    identity = {"name": "fake", "spec": "fake", "seed": seed}
    pool = store.ensure_pool(identity, dtype, LAYERS, DIM)
    parts, keys, texts = [], [], []
    for i, n in enumerate(lengths):
        feats = rng.normal(size=(n, LAYERS, DIM)).astype(np.float32)  # (S, L, D)
        words = np.arange(n, dtype=np.int32) - 1  # (S,)
        types = (np.arange(n) >= n // 2).astype(np.int8)  # (S,)
        parts.append((feats, words, types, n // 2))
        texts.append({"a": [f"w{i}"], "b": [f"v{i}"]})
        keys.append(example_key(pool, texts[-1]))
    with store.writer(pool):
        store.write_segment(pool, digest(keys, 24), keys, parts, dtype)
    manifest = {
        "id": fs_id,
        "encoder": identity,
        "encoder_id": pool,
        "task": "sst2",
        "split": split,
        "num_layers": LAYERS,
        "dim": DIM,
        "dtype": dtype,
    }
    store.write_featureset(manifest, keys, texts)
    return fs_id


class Server:
    """uvicorn in a thread on a socket bound here, so the port is ours before it starts."""

    def __init__(self, settings, port: int = 0):
        """port: 0 for a free one; that of a server just stopped to start it again there."""
        import uvicorn

        from snowfire.api import create_app

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(settings=settings), log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start within 20 s")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
        self.sock.close()


class Counting:
    """Counts the features requests a RemoteStore sends (their bodies in `bodies`) and the
    413s it gets back."""

    def __init__(self, remote):
        self.features_requests = self.refused = 0
        self.bodies: list[bytes] = []
        self.send = remote._send
        remote._send = self

    def __call__(self, method, url, body, headers):
        if url.endswith("/features"):
            self.features_requests += 1
            self.bodies.append(body)
        response = self.send(method, url, body, headers)
        self.refused += response.status == 413
        return response


class Restart:
    """Stops the service behind the proxy and starts a new one on its port (a new app: what
    a restarted process holds) when request `at` arrives."""

    def __init__(self, server: Server, settings, at: int):
        self.server, self.settings, self.at = server, settings, at
        self.done = threading.Event()

    def __call__(self, n: int) -> None:
        if n != self.at:
            return
        old = self.server
        old.__exit__(None, None, None)
        self.server = Server(self.settings, port=old.port).__enter__()
        self.done.set()
