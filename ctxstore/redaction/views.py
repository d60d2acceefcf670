"""Redacted views of a repository for what leaves it: packs, exports and git pushes.

`redacted_view(repo, refs)` is the library function a transport calls: it rewrites everything
the refs reach into an overlay (the store is not touched) and returns the overlay, the refs as
they name the redacted tips, and a report. A git push (ctxstore/gitbridge) calls it when
`--redact` is given or the policy's `on_push` is set (`choose(flag, policy_for_refs(...),
"push")`), then sends `view.refs` from `view.store` instead of the originals.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from ..refs.names import split_branch_ref
from ..repo import Repository
from .detect import Redactor
from .policy import RedactionPolicy, policy_for
from .rewrite import OverlayStore, Rewriter, RewriteReport, remap_refs


@dataclass
class RedactedView:
    store: OverlayStore  #: reads the redacted objects (and the untouched ones, unchanged)
    refs: dict[str, str]  #: ref name -> redacted tip (session refs follow a changed session id)
    mapping: dict[str, str]  #: old id -> redacted id, for everything reached
    report: RewriteReport

    def repository(self) -> Repository:
        """A read-only-by-convention Repository over the view (for exporters)."""
        from ..refs import MemoryRefs

        refs = MemoryRefs()
        for name, tip in self.refs.items():
            refs.write_ref(name, tip, fsync=False)
        return Repository(None, self.store, refs)


def policy_for_refs(repo: Repository, refs: Mapping[str, str]) -> RedactionPolicy:
    """The store's policy with the extra patterns of every session the refs belong to (one
    pack or push may carry several sessions; the strictest union applies to all)."""
    policy = policy_for(repo)
    extra: list[tuple[str, str]] = []
    for name in refs:
        parts = split_branch_ref(name)
        if parts:
            for p in policy_for(repo, parts[0]).patterns:
                if p not in policy.patterns and p not in extra:
                    extra.append(p)
    if not extra:
        return policy
    return RedactionPolicy(**{**policy.__dict__, "patterns": policy.patterns + tuple(extra)})


def redacted_view(repo: Repository, refs: Mapping[str, str],
                  policy: RedactionPolicy | None = None) -> RedactedView:
    """Redact everything REFS ({ref name: tip}) reach into an overlay of the repository."""
    policy = policy or policy_for_refs(repo, refs)
    store = OverlayStore(repo.store)
    rw = Rewriter(repo.store, store, Redactor(policy))
    rw.rewrite(sorted(set(refs.values())))
    return RedactedView(store, remap_refs(refs, rw.mapping), rw.mapping, rw.report)


def export_redacted(repo: Repository, rev: str, format: str, out: TextIO) -> dict[str, Any]:
    """`ctx export --redact`: like export_session, with every secret replaced.

    jsonl: the session is rewritten (new ids where something was redacted) and the redacted
    copy exported, so it re-imports to the redacted ids. Source formats: each original line is
    parsed and its string values redacted (the provider's own ids are data, not links)."""
    from ..importers.export import export_session, resolve_target

    sid, tips = resolve_target(repo, rev)
    if format == "jsonl":
        from ..importers import neutral

        refs = {f"refs/sessions/{sid}/{b}": t for b, t in repo.branches(sid).items()}
        policy = policy_for_refs(repo, refs)
        extra = {f"refs/ctx-export/{i}": t for i, t in enumerate(tips)}
        view = redacted_view(repo, {**refs, **extra}, policy)
        new_sid = view.mapping.get(sid, sid)
        n = neutral.export(view.repository(), new_sid, [view.mapping[t] for t in tips], out)
        return {"session": new_sid, "format": format, "lines": n,
                "redaction": view.report.to_dict()}
    redactor = Redactor(policy_for(repo, sid))
    sink = _RedactingLines(out, redactor)
    res = export_session(repo, rev, format, sink)
    sink.close()
    report = RewriteReport(engines=redactor.engines)
    report.objects = sink.lines
    report.bytes_scanned = sink.bytes
    report.add("line", tuple(sink.fired))
    return {**res, "redaction": report.to_dict()}


class _RedactingLines:
    """A text sink that redacts each complete JSON line written to it."""

    def __init__(self, out: TextIO, redactor: Redactor) -> None:
        self.out = out
        self.redactor = redactor
        self.buf = ""
        self.fired: list[str] = []
        self.lines = 0
        self.bytes = 0

    def write(self, text: str) -> int:
        self.buf += text
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            self._line(line)
            self.out.write("\n")
        return len(text)

    def close(self) -> None:
        if self.buf:
            self._line(self.buf)
            self.buf = ""

    def _line(self, line: str) -> None:
        self.lines += 1
        self.bytes += len(line)
        try:
            value = json.loads(line)
        except ValueError:  # not JSON (cannot happen for our exporters): redact as text
            new, fired = self.redactor.redact(line)
            self.fired.extend(fired)
            self.out.write(new)
            return
        new_value = _redact_json(value, self.redactor, self.fired)
        if new_value == value:
            self.out.write(line)
        else:
            self.out.write(json.dumps(new_value, ensure_ascii=False, separators=(",", ":")))


def _redact_json(v: Any, redactor: Redactor, fired: list[str]) -> Any:
    if isinstance(v, str):
        new, hits = redactor.redact(v)
        fired.extend(hits)
        return new
    if isinstance(v, dict):
        return {k: _redact_json(x, redactor, fired) for k, x in v.items()}
    if isinstance(v, list):
        return [_redact_json(x, redactor, fired) for x in v]
    return v
