"""Opening a child session and returning its result: the writes behind ContextManager.spawn
and ContextManager.finish, each one repository transaction (both branches move together)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import BadRevision, InvalidInput
from ..objects import Message, TextBlock
from ..refs import DEFAULT_BRANCH, branch_ref
from ..repo import Repository
from . import FINISHED, MEMORY_PASSED, RESULT, SPAWNED

PREVIEW = 1024


def _resolve_all(repo: Repository, ids: Iterable[str], want: str | None, what: str) -> list[str]:
    out = []
    for text in ids:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(f"{what}: {text!r} is not an object id")
        oid = repo.objects.resolve(text)
        if want is not None and repo.objects.type_of(oid) != want:
            raise InvalidInput(f"{what}: {oid[:12]} is a {repo.objects.type_of(oid)}, not a {want}")
        if oid not in out:
            out.append(oid)
    return out


def spawn(repo: Repository, parent_session: str, parent_ref: str, task: str, *,
          pass_artifacts: Sequence[str] = (), pass_memories: Sequence[str] = (),
          title: str = "") -> tuple[str, str]:
    """Append SPAWNED to PARENT_REF and open the child session (kind "subagent", linked to the
    parent by parent_session and spawn_event) holding the task as its request and one event
    per passed artifact or memory — nothing else of the parent. Returns (child id, spawn id)."""
    if not isinstance(task, str) or not task.strip():
        raise InvalidInput("spawn needs a task: say what the subagent must do")
    arts = _resolve_all(repo, pass_artifacts, "artifact", "pass_artifacts")
    mems = _resolve_all(repo, pass_memories, None, "pass_memories")
    parent_cfg = repo.session(parent_session).config
    config: dict[str, Any] = {"subagent": {"parent_ref": parent_ref}}
    if "redaction" in parent_cfg:  # the child lives under the parent's policy
        config["redaction"] = parent_cfg["redaction"]
    msg = Message("user", (TextBlock(task),), provenance={"source": "system",
                                                          "source_refs": [parent_session]})
    mid = repo.objects.put_object(msg)
    with repo.transaction(parent_ref, message="subagent: spawn",
                          command="api: ContextManager.spawn") as tx:
        spawn_id = tx.append(SPAWNED, "agent", {"task": task[:PREVIEW], "evidence_refs": arts,
                                                "memory_refs": mems})
        sid, root = tx.new_session(title or f"subagent: {task[:60]}", kind="subagent",
                                   parent_session=parent_session, spawn_event=spawn_id,
                                   config=config, checkout=False)
        tip = tx.event("UserPromptSubmitted", "agent", {"text": task[:PREVIEW]}, (root,),
                       {"message_id": mid}, session=sid)
        for aid in arts:
            art = repo.objects.get(aid)
            tip = tx.event("ArtifactAdded", "agent",
                           {"kind": art.kind, "path": art.uri, "summary": art.summary,
                            "passed_by": parent_session},
                           (tip,), {"artifact_id": aid}, session=sid)
        for m in mems:
            tip = tx.event(MEMORY_PASSED, "agent", {"memory_id": m, "passed_by": parent_session},
                           (tip,), session=sid)
        tx.set_ref(branch_ref(sid, DEFAULT_BRANCH), tip, expected=None,
                   message="subagent: spawned")
    return sid, spawn_id


def _strings(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"finish: {what} must be a list of strings")
    return [v.strip() for v in value if v.strip()]


def finish(repo: Repository, child_session: str, child_ref: str, summary: str, *,
           evidence_refs: Sequence[str] = (), artifacts: Sequence[str] = (),
           risks: Sequence[str] | str = (), next_steps: Sequence[str] | str = ()) -> dict[str, str]:
    """Check the result and append it to the child (FINISHED) and to the parent branch it was
    spawned from (RESULT) in one transaction. Refused without a summary or next steps, with
    refs that do not resolve, or when the session is not a subagent or already finished."""
    session = repo.session(child_session)
    parent_ref = (session.config.get("subagent") or {}).get("parent_ref", "")
    if session.kind != "subagent" or not session.parent_session or not parent_ref:
        raise InvalidInput(f"session {child_session[:12]} was not spawned by "
                           f"ContextManager.spawn: only a subagent can finish")
    if not isinstance(summary, str) or not summary.strip():
        raise InvalidInput("finish refused: a subagent must return a summary of what it did "
                           "and found, not just \"done\"")
    steps = _strings(next_steps, "next_steps")
    if not steps:
        raise InvalidInput("finish refused: a subagent must return next steps (what the parent "
                           "should do with this result)")
    evidence = _resolve_all(repo, evidence_refs, None, "evidence_refs")
    arts = _resolve_all(repo, artifacts, "artifact", "artifacts")
    if repo.refs.read(parent_ref) is None:
        raise BadRevision(f"the parent branch {parent_ref} no longer exists")
    tip = repo.refs.read(child_ref)
    if tip is not None and repo.graph.event(tip).type == FINISHED:
        raise InvalidInput(f"subagent {child_session[:12]} has already finished")
    payload = {"summary": summary.strip(), "evidence_refs": evidence, "artifacts": arts,
               "risks": _strings(risks, "risks"), "next_steps": steps,
               "session": child_session}
    with repo.transaction(child_ref, message="subagent: finish",
                          command="api: ContextManager.finish") as tx:
        done = tx.append(FINISHED, "subagent", payload)
        result = tx.append(RESULT, "subagent", payload,
                           {"subagent_event": done, "artifact_ids": arts}, ref=parent_ref)
    return {"finished": done, "result": result, "parent_ref": parent_ref}


