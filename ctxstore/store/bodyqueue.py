"""Bodies put inside a repository transaction, compressed together instead of one by one.

Compressing each ~750-byte event body as it is put cost 25–35 µs in the middle of the batch
against ~6 µs in a tight loop: between two puts the interpreter's own work evicts zstd's
dictionary tables from the cache. Inside a transaction nothing names a new object before the
commit flushes the store (docs/format.md, "Write ordering" 1), so a put may instead queue the
body; every `BATCH` bodies are compressed by one `Compressor.compress_many` call — on a worker
thread, which compresses in C without the GIL while the writer encodes the next batch — and
the store appends their records when the next batch is started or anything drains the queue
(a read, a flush, a seal, the transaction's end).

The worker only compresses: records are framed and written by the writer's own thread, in put
order, and an exception raised on the worker is raised again by the call that collects its
batch (`rotate` or `drain`), never swallowed.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .. import codec

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

#: Bodies compressed per call.
BATCH = 512

Item = tuple[str, str, bytes]  # (id, type name, body)
Compressed = tuple[Item, tuple[bytes, int, int]]  # and (payload, compression, dict id)


class BodyQueue:
    """Queued bodies and the batch being compressed; `obj_id in queue` for either."""

    def __init__(self, batch: int = BATCH, background: bool = True) -> None:
        self.batch = batch
        self.background = background
        self._waiting: list[Item] = []
        self._ids: set[str] = set()
        self._running: tuple[list[Item], Future] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0

    def __contains__(self, obj_id: object) -> bool:
        return obj_id in self._ids

    def __bool__(self) -> bool:
        return bool(self._ids)

    def add(self, obj_id: str, type_name: str, body: bytes) -> bool:
        """Queue a body; True when a batch is full (the caller then `rotate`s)."""
        self._waiting.append((obj_id, type_name, body))
        self._ids.add(obj_id)
        return len(self._waiting) >= self.batch

    def rotate(self, compressor: codec.Compressor) -> list[Compressed]:
        """Start compressing the waiting bodies (on the worker, if `background`) and return the
        batch started before, compressed, for the caller to write."""
        done = self._collect(compressor)
        items, self._waiting = self._waiting, []
        if not self.background:
            return done + self._compress(items, compressor)
        if self._pool is None or self._pool_pid != os.getpid():
            # (a forked child inherits the pool but not its thread: it needs its own)
            from concurrent.futures import ThreadPoolExecutor  # imports logging: not at start-up

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="ctxstore-compress")
            self._pool_pid = os.getpid()
        self._running = (items, self._pool.submit(compressor.compress_many,
                                                  [b for _, _, b in items]))
        return done

    def drain(self, compressor: codec.Compressor) -> list[Compressed]:
        """Every queued body, compressed, in put order: the running batch, then the waiting
        bodies (compressed here)."""
        done = self._collect(compressor)
        items, self._waiting = self._waiting, []
        if items:
            done += self._compress(items, compressor)
        return done

    def _compress(self, items: list[Item], compressor: codec.Compressor) -> list[Compressed]:
        try:
            frames = compressor.compress_many([b for _, _, b in items])
        except BaseException:
            self._ids.difference_update(obj_id for obj_id, _, _ in items)
            raise
        return self._finished(items, frames)

    def _collect(self, compressor: codec.Compressor) -> list[Compressed]:
        running, self._running = self._running, None
        if running is None:
            return []
        items, future = running
        if self._pool_pid != os.getpid() and not future.done():
            return self._compress(items, compressor)  # forked meanwhile: no worker here
        try:
            frames = future.result()  # the worker's exception, if any, is raised here
        except BaseException:
            self._ids.difference_update(obj_id for obj_id, _, _ in items)
            raise
        return self._finished(items, frames)

    def _finished(self, items: list[Item], frames: list) -> list[Compressed]:
        self._ids.difference_update(obj_id for obj_id, _, _ in items)
        return list(zip(items, frames, strict=True))

    def close(self) -> None:
        """Stop the worker (after `drain`: it has nothing left to do)."""
        if self._pool is not None and self._pool_pid == os.getpid():
            self._pool.shutdown(wait=True)
            self._pool = None
