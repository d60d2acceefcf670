"""Redaction on request, for the CLI: `ctx export --redact`, `ctx pack --redact`,
`ctx view` (on by default), `ctx redact [--purge]`. The machinery is ctxstore.redaction; this is where it meets the
importers' exporters and the pack writer (which ctxstore.redaction must not import)."""

from __future__ import annotations

import json
from typing import Any, TextIO

from ..redaction.detect import Redactor
from ..redaction.policy import choose, policy_for
from ..redaction.rewrite import RewriteReport
from ..redaction.views import policy_for_refs, redacted_view
from ..repo import Repository


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


def wants_redaction(repo: Repository, refs: dict[str, str], action: str,
                    flag: bool | None) -> bool:
    """--redact / --no-redact, else the policy's default for ACTION (pack, export, push)."""
    if flag is not None:
        return flag
    return choose(None, policy_for_refs(repo, refs), action)


def export_wants_redaction(repo: Repository, rev: str, flag: bool | None) -> bool:
    if flag is not None:
        return flag
    from ..importers.export import resolve_target

    sid, _ = resolve_target(repo, rev)
    return choose(None, policy_for(repo, sid), "export")


def pack_redacted(repo: Repository, out: str, revs: list[str] | None = None, *,
                  all_refs: bool = False, since: str | None = None, progress=None):
    """`ctx pack --redact`: the refs' history rewritten without secrets (into an overlay; the
    store is untouched) and packed. Returns (PackSummary, redaction report)."""
    from ..errors import Unsupported
    from ..objects import links
    from ..transfer import packfile
    from .transfer import select_refs

    if since:
        raise Unsupported("--since cannot be combined with --redact: a redacted pack has new "
                          "ids, so it cannot be thin against the store's own history")
    refs = select_refs(repo, list(revs or ()), all_refs)
    if progress is not None:
        progress("redact", 0, 0)
    view = redacted_view(repo, refs)
    ids = links.reachable(view.objects, view.refs.values())
    wcb = None if progress is None else (lambda n: progress("write", n, len(ids)))
    summary = packfile.write_pack(view.objects, out, view.refs, ids, [], progress=wcb,
                                  level=repo.config.get("compression_level", 3))
    return summary, view.report.to_dict()


def describe(report: dict[str, Any]) -> list[str]:
    """Lines for a redaction report: counts per detector and per object type, never a secret."""
    lines = [f"redacted {report['redactions']} secret(s) in {report['objects']} object(s) "
             f"({report['rewritten']} rewritten; engines: {', '.join(report['engines']) or 'none'})"]
    for d, n in report["by_detector"].items():
        lines.append(f"  {n:>6}  {d}")
    if report.get("workspace_unredacted"):
        lines.append(f"  warning: {report['workspace_unredacted']} workspace snapshot(s) carried "
                     f"unredacted (their files are git objects; docs/redaction.md)")
    if report.get("binary_unscanned"):
        lines.append(f"  {report['binary_unscanned']} binary blob(s) not scanned (not UTF-8 text)")
    return lines


def view_wants_redaction(repo: Repository, sessions: list[str], flag: bool | None) -> bool:
    """`ctx view` redacts like a built context: --redact/--no-redact, else on when the policy
    of any shown session (or the store's) redacts built contexts (`on_build`, default true).
    A page is a file people mail and attach to bug reports (docs/viewer.md)."""
    if flag is not None:
        return flag
    return any(policy_for(repo, sid).on_build for sid in sessions) or policy_for(repo).on_build


def redact_view_data(repo: Repository, data: dict[str, Any]) -> dict[str, Any]:
    """Replace every secret in `ctx view`'s page data in place: each session's part by its
    own policy, the rest (the store's session list, titles) by the store's. Returns a
    RewriteReport dict of what fired."""
    store = Redactor(policy_for(repo))
    fired: list[str] = []
    engines = set(store.engines)
    sessions = data.get("data") or {}
    known = set(repo.session_ids())
    for sid, part in list(sessions.items()):
        redactor = Redactor(policy_for(repo, sid)) if sid in known else store
        engines.update(redactor.engines)
        sessions[sid] = _redact_json(part, redactor, fired)
    for key in [k for k in data if k != "data"]:
        data[key] = _redact_json(data[key], store, fired)
    report = RewriteReport(engines=tuple(sorted(engines)))
    report.add("page", tuple(fired))
    return report.to_dict()
