"""Redacted copies kept in the store, for git pushes: the push map (raw id -> redacted id) and
the rewrite that extends it.

A redacted push cannot rewrite into a throw-away overlay as `ctx pack --redact` does: the
remote-tracking refs must name the redacted tips, so the copy lives in the store, and a second
push must produce the same ids for the history it already sent (or the remote's branch would
stop being a fast-forward). The push map remembers every redacted id, one file per policy
fingerprint; the bytes and the write ordering are in docs/format.md, "Redacted pushes".
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import CorruptStore, InvalidInput
from .detect import Redactor
from .policy import RedactionPolicy
from .rewrite import Rewriter, RewriteReport, remap_refs

MAP_DIR = "redaction"
HEADER = b"ctx-redaction-map 1\n"
RECORD = 64
FINGERPRINT_VERSION = 1


def fingerprint(redactor: Redactor) -> str:
    """What decides a rewrite, hashed: the file name part `F` of `push-<F>.map`."""
    policy = redactor.policy
    doc = {"builtin_patterns": policy.builtin_patterns,
           "detectors": list(policy.detectors) if "detect-secrets" in redactor.engines else [],
           "patterns": [list(p) for p in policy.patterns], "version": FINGERPRINT_VERSION}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def map_dir(repo) -> Path:
    if repo.path is None:
        raise InvalidInput("redacted pushes need a store on disk")
    return Path(repo.path) / MAP_DIR


class PushMap:
    """One push map file: `entries` {raw id: redacted id}, `append` adds records durably."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, str] = {}
        self._good = len(HEADER)  # bytes of whole records (a torn tail is cut at the append)
        if path.exists():
            data = path.read_bytes()
            if not data.startswith(HEADER):
                raise CorruptStore(f"{path}: not a redaction push map (wrong header); it is a "
                                   f"cache: delete it and push again (docs/format.md, "
                                   f"\"Redacted pushes\")")
            n = (len(data) - len(HEADER)) // RECORD
            view = memoryview(data)[len(HEADER):len(HEADER) + n * RECORD]
            for i in range(0, n * RECORD, RECORD):
                self.entries[view[i:i + 32].hex()] = view[i + 32:i + RECORD].hex()
            self._good = len(HEADER) + n * RECORD

    def append(self, records: Mapping[str, str]) -> None:
        """Add RECORDS after every whole record (cutting a torn tail), fsync'd."""
        if not records:
            return
        new_file = not self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = b"".join(bytes.fromhex(raw) + bytes.fromhex(red) for raw, red in records.items())
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if new_file or os.fstat(fd).st_size < len(HEADER):
                os.ftruncate(fd, 0)
                os.write(fd, HEADER)
                self._good = len(HEADER)
            else:
                os.ftruncate(fd, self._good)
            os.lseek(fd, self._good, os.SEEK_SET)
            os.write(fd, body)
            os.fsync(fd)
        finally:
            os.close(fd)
        if new_file:
            dfd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        self._good += len(body)
        self.entries.update(records)


def open_map(repo, redactor: Redactor) -> PushMap:
    return PushMap(map_dir(repo) / f"push-{fingerprint(redactor)}.map")


def redacted_images(repo) -> dict[str, str]:
    """{redacted id: raw id} over every push map of the store, for the ids a rewrite changed
    (an unchanged id is the same object on both sides: ordinary shared history)."""
    out: dict[str, str] = {}
    d = None if repo.path is None else map_dir(repo)
    if d is None or not d.is_dir():
        return out
    for path in sorted(d.glob("push-*.map")):
        for raw, red in PushMap(path).entries.items():
            if raw != red:
                out[red] = raw
    return out


@dataclass
class PersistedRedaction:
    refs: dict[str, str]  #: redacted ref name -> redacted tip
    raw: dict[str, str]  #: redacted ref name -> the raw ref it was made from
    report: RewriteReport
    reused: int  #: objects whose redacted id came from the push map
    written: int  #: records appended to the push map
    map_file: str

    def to_dict(self) -> dict:
        return {**self.report.to_dict(), "reused": self.reused, "map_records": self.written,
                "map": self.map_file}


def redact_into_store(repo, tx, refs: Mapping[str, str],
                      policy: RedactionPolicy) -> PersistedRedaction:
    """Steps 1-2 of a redacted push (docs/format.md "Redacted pushes"): rewrite what REFS
    reach and the push map does not cover into the store through transaction TX, make it
    durable, then append the new records to the map. Returns the redacted refs."""
    from .views import session_of_ref

    redactor = Redactor(policy)
    pmap = open_map(repo, redactor)
    by_session: dict[str | None, list[str]] = {}
    for name, tip in refs.items():
        by_session.setdefault(session_of_ref(name), []).append(tip)
    current: list[str | None] = [None]  # the redacted id of the session being rewritten
    rw = Rewriter(repo.objects, repo.objects, redactor, known=pmap.entries,
                  put_event=lambda f: tx.put_event(f, current[0]))
    for sid in sorted(by_session, key=lambda s: s or ""):
        # the session first: its redacted id names the session marks of its events
        current[0] = rw.rewrite([sid])[sid] if sid else None
        rw.rewrite(sorted(set(by_session[sid])))
    repo.objects.flush()  # step 1: every redacted object is durable before the map names it
    records = rw.records()
    pmap.append(records)  # step 2
    new_refs = remap_refs(refs, rw.mapping)
    raw = {next(iter(remap_refs({name: tip}, rw.mapping))): name for name, tip in refs.items()}
    return PersistedRedaction(new_refs, raw, rw.report, rw.reused, len(records),
                              str(pmap.path))


