"""One exception hierarchy for the store, mixed with builtins so callers can catch either.

The API maps these to HTTP status codes in a single handler (see api/errors.py).
"""


class StoreError(Exception):
    """Base class of every error the store raises on purpose."""


class FeatureSetNotFoundError(StoreError, KeyError):
    """No feature set with that id (HTTP 404)."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "feature set not found"


class ExampleNotFoundError(StoreError, KeyError):
    """An example key is not in the store (HTTP 404 for key look-ups)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "example not found"


class InvalidSelectionError(StoreError, ValueError):
    """A layer or index outside the feature set (HTTP 422)."""


class RequestTooLargeError(StoreError, ValueError):
    """A read larger than the documented cap (HTTP 413)."""


class IncompatibleStoreError(StoreError, ValueError):
    """The store was made by another encoder / format than the caller asked for."""


class StoreCorruptError(StoreError, RuntimeError):
    """On-disk data does not match its metadata."""


class ObjectNotFoundError(StoreError, FileNotFoundError):
    """A storage backend holds no object under that key (cache/backend.py): the key and the
    backend are named. A FileNotFoundError, so a caller may catch either."""


class ByteRangeError(StoreError, ValueError):
    """A byte range a backend cannot give: negative, or past the end of its object (the key,
    the range and the object's size are named)."""


class StoreUnreachableError(StoreError, OSError):
    """Object storage answered with an error or not at all (HTTP 503): the bucket, the
    endpoint or the credentials, named in the message."""


class ServiceUnreachableError(StoreUnreachableError, ConnectionError):
    """The snowfire service did not answer, or answered only with failures that may pass
    (a reset, a cut body, 502/503/504), until the retry policy gave up (cache/retry.py): the
    URL, the tries, the time and the last cause are in the message."""
