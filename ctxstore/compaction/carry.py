"""What a merge carries into the target's state: the branch's conclusions (seed: "merge a
branch's conclusions"), computed from two projections, never from the summarizer's text.

`merge_patch(base, branch)` compares the state at the merge base with the state at the
branch's tip and returns a StateUpdated-style patch of what the branch established: facts and
decisions it added (with their source / evidence refs, which point at the branch's events,
reachable through the merge's second parent), constraints it added, open questions it added
and those it resolved. The merge event carries it as `payload.patch`, and the BranchMerged fold
applies it like any StateUpdated patch (docs/context.md), so the target's state, `ctx state` and
the context all have the branch's facts. A model summarizer cannot drop them.
"""

from __future__ import annotations

from typing import Any

from ..objects.frozen import thaw
from ..state import AgentState

CONSTRAINT_KINDS = ("hard", "soft", "preferences")


def merge_patch(base: AgentState, branch: AgentState) -> dict[str, Any]:
    """The branch's conclusions since BASE as a patch; {} when it concluded nothing."""
    patch: dict[str, Any] = {}
    known = {f["content"] for f in base.facts}
    facts = [{"content": f["content"], "confidence": f["confidence"],
              "source_refs": list(f["source_refs"])} for f in branch.facts
             if f["content"] not in known]
    if facts:
        patch["facts_add"] = facts
    known = {d["decision"] for d in base.decisions}
    decisions = [{"decision": d["decision"], "rationale": d["rationale"],
                  "evidence_refs": list(d["evidence_refs"])} for d in branch.decisions
                 if d["decision"] not in known]
    if decisions:
        patch["decisions_add"] = decisions
    cons = {k: [c for c in branch.constraints[k] if c not in base.constraints[k]]
            for k in CONSTRAINT_KINDS}
    cons = {k: v for k, v in cons.items() if v}
    if cons:
        patch["constraints"] = cons
    added = [q for q in branch.open_questions if q not in base.open_questions]
    resolved = [q for q in base.open_questions if q not in branch.open_questions]
    if added:
        patch["open_questions_add"] = added
    if resolved:
        patch["open_questions_remove"] = resolved
    return thaw(patch)
