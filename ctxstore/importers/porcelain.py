"""The import entry point: files and directories in, an ImportReport out; never prints.

`--strict` runs the very same import against a scratch overlay first (reads fall through to
the real store and refs, writes stay in memory). If that run reports any warning, InvalidInput
is raised listing them and nothing was written; otherwise the import runs for real. Using the
same code for the check means strict mode can never disagree with what a real run would do.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

from ..errors import InvalidInput, NotFound
from ..refs import MemoryRefs, branch_ref
from ..repo import Repository
from ..store import MemoryStore, ObjectStore
from . import claude_code, codex, harnesses, neutral, pi
from .common import ImportContext, ImportReport, Progress
from .detect import FORMATS, collect_files, default_locations, format_mismatch

_IMPORTERS = {
    "claude-code": claude_code.import_file,
    "codex": codex.import_file,
    "pi": pi.import_file,
    "jsonl": neutral.import_file,
}


def _importer(fmt: str):
    if fmt in _IMPORTERS:
        return _IMPORTERS[fmt]
    return harnesses.module(fmt).import_file


def unit_size(path) -> int:
    """Bytes of a session unit: a file's size, or the files' sizes of a folder unit."""
    if not os.path.isdir(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _s, fs in os.walk(path) for f in fs
               if not os.path.islink(os.path.join(d, f)))


def import_paths(repo: Repository, paths: list, format: str | None = None, strict: bool = False,
                 progress: Progress | None = None) -> ImportReport:
    """Import transcripts from files or directories; see the package docstring.

    Refuses, writing nothing: no transcript file under `paths` (NotFound), no file whose
    format can be told (InvalidInput), and with a forced `format`, any file whose records that
    format's importer mostly does not know (InvalidInput)."""
    files = collect_files(list(paths), format)
    if not files:
        raise NotFound(f"nothing to import: no transcript files under {', '.join(map(str, paths))}")
    if format is not None:
        problems = [m for m in (format_mismatch(f, format) for f, _ in files) if m]
        if problems:
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise InvalidInput("; ".join(problems[:3]) + more + f": not {format} transcripts, "
                               f"nothing imported (drop FORMAT to detect each file's format)")
    elif all(fmt is None for _, fmt in files):
        raise InvalidInput(f"nothing to import: none of the {len(files)} file(s) under "
                           f"{', '.join(map(str, paths))} is a session of a harness ctxstore reads "
                           f"({', '.join(FORMATS)}) (e.g. {files[0][0]})")
    if strict:
        scratch = _overlay(repo)
        report = _run(scratch, files, None)
        if report.warnings:
            lines = "; ".join(f"{w['file']}:{w['line']}: {w['message']}" for w in report.warnings[:20])
            more = len(report.warnings) - 20
            raise InvalidInput(f"--strict: {len(report.warnings)} problem(s), nothing imported: "
                               f"{lines}" + (f" (and {more} more)" if more > 0 else ""),
                               warnings=report.warnings)
    return _run(repo, files, progress)


_MALLOC_STEADY = False
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number


def _steady_malloc() -> None:
    """Fix glibc's mmap threshold at 1 MiB for this process (once).

    glibc raises the threshold each time a large mmapped block is freed (up to 32 MiB); after
    that, blocks of that size come from the heap, which fragments and is not given back. An
    import frees large buffers all the time (long lines, compressed outputs, write buffers), so
    its peak RSS grew with the file beyond what it keeps. Measured on a generated Claude Code
    file: 100 MB import 65 MB peak with the default, 56 MB with a fixed threshold (128 KiB,
    512 KiB and 1 MiB alike; 128 KiB cost ~3% more CPU in mmap calls, 1 MiB nothing
    measurable); the 25 MB import's 37 MB either way. Elsewhere than glibc: nothing to do."""
    global _MALLOC_STEADY
    if _MALLOC_STEADY or not sys.platform.startswith("linux"):
        return
    _MALLOC_STEADY = True
    import ctypes

    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)  # the C library already loaded
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, 1 << 20)


def _run(repo: Repository, files, progress: Progress | None) -> ImportReport:
    _steady_malloc()
    total = sum(unit_size(f) for f, _ in files)
    with repo.transaction(actor="ctx-import", message=f"import: {len(files)} file(s)") as tx:
        ctx = ImportContext(repo, tx, progress, total)
        for path, fmt in files:
            ctx.report.files += 1
            ctx.report.bytes += unit_size(path)
            if fmt is None:
                ctx.warn(path.name, 0, "cannot tell the transcript format (empty or not JSONL); "
                                       "skipped; pass the format explicitly")
                continue
            _importer(fmt)(ctx, path)
        for task in ctx.after_files:
            task()
        _attach_unborn_head(repo, tx, ctx.report)
    return ctx.report


def _attach_unborn_head(repo: Repository, tx, report: ImportReport) -> None:
    """In a store whose HEAD is unborn (a new store), HEAD goes to the main branch of the
    newest top-level session this import wrote, and a note says so: `ctx status`, `ctx log`
    and `ctx context` then work at once, as after `git clone`. A store whose HEAD is set
    keeps it: an import never moves the user off what they are working on."""
    if tx.refs.read_head_value() is not None:
        return
    graph, best = repo.graph, None
    for s in report.sessions:
        tip = s.branches.get("main")
        if s.kind == "subagent" or s.parent_session or not tip:
            continue
        key = (graph.event(tip).ts, s.events)
        if best is None or key > best[0]:
            best = (key, s)
    if best is None:
        return
    s = best[1]
    tx.set_head(ref=branch_ref(s.session, "main"), message=f"import: HEAD on {s.session[:12]}")
    report.notes.append(f"HEAD is now on session {s.session[:12]} (main), the newest session "
                        f"imported ({s.file})")


class _OverlayStore(ObjectStore):
    """Reads from `base`, writes into memory: a dry run that sees what is already stored."""

    def __init__(self, base: ObjectStore) -> None:
        self.base = base
        self.top = MemoryStore()

    def _store_body(self, obj_id: str, type_name: str, body: bytes) -> None:
        self.top._store_body(obj_id, type_name, body)

    def get_raw(self, obj_id: str) -> tuple[str, bytes]:
        if obj_id in self.top:
            return self.top.get_raw(obj_id)
        return self.base.get_raw(obj_id)

    def __contains__(self, obj_id: object) -> bool:
        return obj_id in self.top or obj_id in self.base

    def __iter__(self) -> Iterator[str]:
        yield from self.top
        yield from (i for i in self.base if i not in self.top)

    def ids_with_prefix(self, prefix: str) -> Iterator[str]:
        yield from self.top.ids_with_prefix(prefix)
        yield from (i for i in self.base.ids_with_prefix(prefix) if i not in self.top)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None


def _overlay(repo: Repository) -> Repository:
    return Repository(None, _OverlayStore(repo.objects), MemoryRefs.copy_of(repo.refs),
                      dict(repo.config))


def discover(env=None) -> list[tuple[str, str, bool]]:
    """(format, directory, exists) for each harness's default transcript directory."""
    return [(fmt, str(path), path.is_dir()) for fmt, path in default_locations(env)]
