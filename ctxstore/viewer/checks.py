"""A stored compaction's checks, run again for the page.

The engine runs `compaction.checks.run_checks` on the summarizer's output before it writes a
record, and keeps only the records that pass; the verdicts themselves are not stored. The viewer
re-runs the same rules on the record as stored (its fields are the summarizer's output), against
the same facts rebuilt from the store: the replaced events, the events kept verbatim after the
cut up to the compaction event, the state at the end of the range, and the range folded from
the empty state. Token counts come from the record (`tokens_before`/`tokens_after`), so the
size rule compares what the engine compared; a harness compaction brought in by an importer was
never checked by ctxstore, and its verdicts here say how it measures up now.

Before those rules, three structural facts the page can verify on any record: the sources are
one first-parent line from first_event to last_event, first_kept follows it, the summary is
smaller.
"""

from __future__ import annotations

from typing import Any

from ..compaction.checks import RangeFacts, run_checks
from ..errors import CtxError
from ..objects import Compaction, Event, thaw
from ..repo import Repository
from ..state.folds import project
from ..state.projector import Projector


def _row(eid: str, ev: Event) -> dict[str, Any]:
    return {"id": eid, "type": ev.type, "actor": ev.actor, "payload": thaw(ev.payload),
            "causality": thaw(ev.causality)}


def structural(repo: Repository, rec: Compaction) -> list[dict[str, str]]:
    src = list(rec.source_event_ids)
    if not src:
        return [{"rule": "range", "status": "n/a", "detail": "the record names no events"}]
    out = []
    line: list[str] = []
    try:
        for eid, _ev in repo.graph.first_parents(rec.last_event):
            line.append(eid)
            if eid == rec.first_event or len(line) > len(src):
                break
    except CtxError as exc:
        return [{"rule": "range", "status": "fail", "detail": f"cannot walk the range: {exc}"}]
    line.reverse()
    ok = line == src
    out.append({"rule": "range", "status": "pass" if ok else "fail",
                "detail": f"{len(src)} events, one first-parent line from first to last" if ok
                else "the source events are not the first-parent line first..last"})
    if rec.first_kept:
        try:
            kept = repo.graph.event(rec.first_kept)
            ok = bool(kept.parents) and kept.parents[0] == rec.last_event
        except CtxError:
            ok = False
        out.append({"rule": "first_kept follows the range", "status": "pass" if ok else "fail",
                    "detail": rec.first_kept[:12]})
    elif rec.kind != "merge":
        out.append({"rule": "first_kept follows the range", "status": "n/a",
                    "detail": "nothing was kept after the range"})
    return out


def rerun(repo: Repository, rec: Compaction, event_id: str, projector: Projector
          ) -> list[dict[str, str]]:
    """The engine's rules on the stored record (see the module docstring)."""
    try:
        events = [(s, repo.graph.event(s)) for s in rec.source_event_ids]
        if not events:
            return []
        kept: list[tuple[str, Event]] = []
        if rec.kind != "merge" and rec.first_kept:
            ev = repo.graph.event(event_id)
            for eid, e in repo.graph.first_parents(ev.parents[0] if ev.parents else None):
                kept.append((eid, e))
                if eid == rec.first_kept:
                    break
            kept.reverse()
            if not kept or kept[0][0] != rec.first_kept:
                kept = []
        if rec.kind == "merge":
            tip = rec.provenance.get("branch_tip")
            state = projector.project(tip if isinstance(tip, str) else rec.last_event)
        else:
            state = projector.project(rec.last_event)
        rstate = project(events, messages=projector.message)
        kstate = project(kept, messages=projector.message)
    except CtxError as exc:
        return [{"rule": "recheck", "status": "n/a", "detail": f"cannot rebuild the facts: {exc}"}]
    out = rec.to_dict()
    out["progress"] = dict(out.get("progress") or {})
    facts = RangeFacts([_row(*e) for e in events], [_row(*e) for e in kept],
                       state.goal["user_goal"], tuple(state.constraints["hard"]),
                       rec.tokens_before, rec.tokens_after, rstate, rec.kind,
                       kstate.modified_paths)
    return [{"rule": v.rule, "status": v.status, "detail": v.detail}
            for v in run_checks(out, facts)]
