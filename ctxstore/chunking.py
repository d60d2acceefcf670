"""Large artifact content split into content-defined chunks, read back as one stream.

Content above `threshold` bytes is cut by FastCDC (the maintained `pyfastcdc` package; the
parameters are pinned in the store config under "chunking" so every writer cuts the same way)
into chunks stored as ordinary "blob" objects, plus one "chunks" manifest:

    {"size": total bytes, "id_of_whole": id the whole content has as a single blob,
     "chunks": [[chunk blob id, length], ...]}

An artifact's `content` names the manifest instead of a blob. A log that grows, or a file edited
in place, re-cuts to mostly the same chunks, so versions share their unchanged bytes. Without
pyfastcdc, or below the threshold, content is stored whole as one blob (same reader).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import blake3

from . import codec
from .errors import CorruptObject, CtxError, InvalidInput

_UNSET: Any = object()
#: pyfastcdc's FastCDC class, None without the optional `chunking` extra; imported on first use
#: (`_fastcdc()`), since most commands never store large content and it costs start-up time.
FastCDC: Any = _UNSET


def _fastcdc() -> Any:
    global FastCDC
    if FastCDC is _UNSET:
        try:  # optional: `pip install ctxstore[chunking]`
            from pyfastcdc import FastCDC as cls
        except ImportError:  # pragma: no cover - exercised only where pyfastcdc is absent
            cls = None
        FastCDC = cls
    return FastCDC

DEFAULTS = {"threshold": 1 << 20, "min": 64 << 10, "avg": 256 << 10, "max": 1 << 20}
_READ = 1 << 20


@dataclass(frozen=True, slots=True)
class ChunkParams:
    threshold: int = DEFAULTS["threshold"]
    min: int = DEFAULTS["min"]
    avg: int = DEFAULTS["avg"]
    max: int = DEFAULTS["max"]

    @classmethod
    def from_config(cls, config: dict[str, Any] | None) -> ChunkParams:
        cfg = dict(DEFAULTS)
        cfg.update((config or {}).get("chunking") or {})
        params = cls(*(int(cfg[k]) for k in ("threshold", "min", "avg", "max")))
        if not (64 <= params.min <= params.avg <= params.max <= 16 << 20):
            raise InvalidInput(f"chunking parameters must satisfy 64 <= min <= avg <= max <= "
                               f"16 MiB: {params}")
        return params


def available() -> bool:
    return _fastcdc() is not None


def whole_id(size: int, pieces) -> str:
    """The blob id of content given as an iterable of byte pieces totalling `size` bytes."""
    h = blake3.blake3(codec.id_header("blob", size))
    for p in pieces:
        h.update(p)
    return h.hexdigest()


def _stream_size(stream: BinaryIO) -> int | None:
    try:
        return os.fstat(stream.fileno()).st_size - stream.tell()
    except (AttributeError, OSError, io.UnsupportedOperation):
        pass
    try:
        pos = stream.tell()
        end = stream.seek(0, io.SEEK_END)
        stream.seek(pos)
        return end - pos
    except (AttributeError, OSError, io.UnsupportedOperation):
        return None


def put_large(store, data: bytes | bytearray | memoryview | BinaryIO,
              params: ChunkParams | None = None) -> str:
    """Store content; returns the blob id (small, or no FastCDC) or the manifest id (chunked)."""
    params = params or ChunkParams()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        size = _stream_size(data)
        if size is None or size <= params.threshold or _fastcdc() is None:
            data = data.read()
        else:
            return _put_chunked(store, data, size, params)
    if len(data) <= params.threshold or _fastcdc() is None:
        return store.put("blob", bytes(data))
    return _put_chunked(store, data, len(data), params)


def _put_chunked(store, source, size: int, params: ChunkParams) -> str:
    cdc = _fastcdc()(params.avg, min_size=params.min, max_size=params.max)
    cuts = cdc.cut_buf(source) if isinstance(source, (bytes, bytearray, memoryview)) \
        else cdc.cut_stream(source)
    h = blake3.blake3(codec.id_header("blob", size))
    chunks: list[list[Any]] = []
    total = 0
    for chunk in cuts:
        piece = bytes(chunk.data)
        h.update(piece)
        total += len(piece)
        chunks.append([store.put("blob", piece), len(piece)])
    if total != size:
        raise InvalidInput(f"content changed while it was stored ({total} bytes, expected {size})")
    return store.put("chunks", {"size": size, "id_of_whole": h.hexdigest(), "chunks": chunks})


def put_artifact_content(repo, data) -> tuple[str, int]:
    """(content id, size) of artifact bytes, chunked per the repository's config."""
    params = ChunkParams.from_config(repo.config)
    size = len(data) if isinstance(data, (bytes, bytearray, memoryview)) else _stream_size(data)
    cid = put_large(repo.objects, data, params)
    if size is None:
        size = content_size(repo.objects, cid)
    return cid, size


def _manifest(store, obj_id: str) -> tuple[str, Any]:
    type_name, body = store.get_raw(obj_id)
    if type_name == "blob":
        return type_name, body
    if type_name != "chunks":
        raise CorruptObject(f"object {obj_id} is a {type_name}, not content (blob or chunks)",
                            id=obj_id)
    manifest = codec.unpack_value(body)
    check_manifest(obj_id, manifest)
    return type_name, manifest


def check_manifest(obj_id: str, manifest: Any) -> None:
    """CorruptObject unless `manifest` is well formed and its lengths add up to its size."""
    ok = (isinstance(manifest, dict) and isinstance(manifest.get("size"), int)
          and isinstance(manifest.get("id_of_whole"), str)
          and isinstance(manifest.get("chunks"), list)
          and all(isinstance(c, list) and len(c) == 2 and isinstance(c[0], str)
                  and codec.is_full_id(c[0]) and isinstance(c[1], int) and c[1] >= 0
                  for c in manifest["chunks"]))
    if not ok or sum(c[1] for c in manifest["chunks"]) != manifest["size"]:
        raise CorruptObject(f"chunks manifest {obj_id} is malformed", id=obj_id)


def iter_content(store, obj_id: str, verify: bool = False) -> Iterator[bytes]:
    """The content's bytes piece by piece (one chunk in memory at a time). With `verify`, a
    chunked content is re-hashed as it streams and CorruptObject is raised after the last piece
    if the whole does not hash to the id its manifest records (each chunk is checked anyway)."""
    type_name, value = _manifest(store, obj_id)
    if type_name == "blob":
        yield value
        return
    h = blake3.blake3(codec.id_header("blob", value["size"])) if verify else None
    for chunk_id, length in value["chunks"]:
        t, piece = store.get_raw(chunk_id)
        if t != "blob" or len(piece) != length:
            raise CorruptObject(f"chunk {chunk_id} of {obj_id} is not a {length}-byte blob",
                                id=chunk_id)
        if h is not None:
            h.update(piece)
        yield piece
    if h is not None and h.hexdigest() != value["id_of_whole"]:
        raise CorruptObject(f"content {obj_id} does not hash to {value['id_of_whole']}", id=obj_id)


def content_size(store, obj_id: str) -> int:
    type_name, value = _manifest(store, obj_id)
    return len(value) if type_name == "blob" else value["size"]


def content_id(store, obj_id: str) -> str:
    """The blob id of the whole content (the manifest records it; a blob is its own)."""
    type_name, value = _manifest(store, obj_id)
    return obj_id if type_name == "blob" else value["id_of_whole"]


def read_content(store, obj_id: str, verify: bool = True) -> bytes:
    """All the bytes; with `verify`, a chunked content's whole id is re-checked."""
    data = b"".join(iter_content(store, obj_id))
    if verify:
        expected = content_id(store, obj_id)
        if codec.compute_id("blob", data) != expected:
            raise CorruptObject(f"content {obj_id} does not hash to {expected}", id=obj_id)
    return data


class ContentReader(io.RawIOBase):
    """A read-only stream over blob or chunked content: `open_content(store, id).read()`."""

    def __init__(self, store, obj_id: str) -> None:
        super().__init__()
        self._pieces = iter_content(store, obj_id)
        self._buf = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self._buf:
            piece = next(self._pieces, None)
            if piece is None:
                return 0
            self._buf = memoryview(piece)
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def open_content(store, obj_id: str) -> io.BufferedReader:
    """Stream the content named by a blob or chunks-manifest id."""
    return io.BufferedReader(ContentReader(store, obj_id), buffer_size=_READ)


def text_start(store, obj_id: str, limit: int) -> str | None:
    """The first LIMIT bytes of the content as text, for the search indexes; None when it is
    binary (a NUL early on) or cannot be read (fsck's business: what names it stays findable
    by its name)."""
    try:
        with open_content(store, obj_id) as f:
            data = f.read(limit)
    except CtxError:
        return None
    if b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", "replace")
