"""`memory_propose`: an agent suggests a memory; a person decides (seed §5: memory is written
only through governance, never by a model on its own).

A proposal is checked like any memory write (its sources must be objects of this store, its
scope must have a key, its kind must be known: memory/governance.py `build`) and then kept
where no reader of memory looks — its own chain under `refs/memory-received/`, exactly as a
memory received with a pack is kept — and queued in `refs/memory-review` in the same
transaction. `ctx memory review` lists it (origin "mcp proposal") until a person accepts it
into a scope, edits it or rejects it; until then no context build, search or agent sees it as
memory. One chain per proposal, so each queue entry offers exactly that one memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import CtxError
from ...memory.governance import ChainWriter, MemorySpec, build
from ...memory.log import WRITTEN
from ...memory.review import queue_received, received_ref
from ...memory.scopes import scope_keys, scope_ref
from ...repo import Repository
from ...repo.revparse import resolve_object

ORIGIN = "mcp proposal"
#: Invariant 11 wants an expiry or an update policy; the reviewer sets the real one on accept.
DEFAULT_POLICY = "until-superseded"


def propose(repo: Repository, content: str, sources: Sequence[str], *, scope: str,
            kind: str = "fact", ttl: str | None = None, update_policy: str | None = None,
            keywords: Sequence[str] = (), agent: str = "mcp") -> dict[str, Any]:
    """Check and queue one proposal; returns its review key and what it holds."""
    spec = MemorySpec(content=content, scope=scope, sources=list(sources), kind=kind, ttl=ttl,
                      update_policy=update_policy or (None if ttl else DEFAULT_POLICY),
                      keywords=list(keywords), author=f"proposal:{agent}",
                      origin={"via": "mcp", "agent": agent})
    mem = build(repo, spec, scope_keys(repo, _source_session(repo, sources)))
    intended = scope_ref(mem.scope, mem.scope_key)
    with repo.transaction(message="memory propose", command="mcp: memory_propose") as tx:
        mid = repo.objects.put_object(mem)
        kept = received_ref(ORIGIN, f"refs/memory/proposals/{mid}")
        tip = ChainWriter(tx).append(kept, WRITTEN, agent,
                                     {"memory_id": mid, "action": "propose", "scope": mem.scope,
                                      "scope_key": mem.scope_key})
        queued = queue_received(tx, ORIGIN, intended, kept, tip)
    key = f"{queued[:12]}:0"
    return {"status": "pending review", "candidate": key, "memory": mid, "queue_event": queued,
            "content": mem.content, "kind": mem.kind, "scope": mem.scope,
            "scope_key": mem.scope_key, "source_refs": list(mem.source_refs),
            "review": f"ctx memory review accept {key} --scope {mem.scope} "
                      f"--update-policy until-superseded   (or: reject {key})"}


def _source_session(repo: Repository, sources: Sequence[str]) -> str | None:
    """The session of the first source that is an event: `project` means that session's
    project (the one the agent worked in), not whichever session HEAD is on. None: HEAD's."""
    for s in sources:
        try:
            oid = resolve_object(repo, str(s))
        except CtxError:
            continue  # build() refuses it, naming the source
        if repo.objects.type_of(oid) == "event":
            return repo.session_of_event(oid)
    return None
