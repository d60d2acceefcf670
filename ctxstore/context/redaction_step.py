"""The redaction step of a context build: the last thing that happens to candidate segments
before the builder fits them to the budget, so nothing the model sees escapes it.

Two rules, both recorded in the segment's `data` so the bundle's explanation names them:

- sensitive material stays out: a segment made from a sensitive artifact (`Artifact.sensitive`)
  or marked sensitive itself (`data["sensitive"]`, how memories and other callers say it) has
  its text replaced by a marker naming the artifact — a tool pair keeps its call and loses only
  the result text, so the pair stays whole — unless the policy's `admit_sensitive` is set
  (`data["withheld"]` / `data["admitted"]` say which);
- secrets are replaced (`RedactionPolicy.on_build`, the default): text, message texts and
  tool-call arguments; `data["redactions"]` = {detector: count}. Never the secret itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ..objects import Artifact
from ..objects.frozen import FrozenMap, thaw
from ..objects.links import is_id
from ..redaction.detect import Redactor, summarize
from ..redaction.policy import RedactionPolicy, policy_for
from ..redaction.sensitivity import is_sensitive
from .segments import Segment, render_messages

WITHHELD = "[withheld: sensitive material; the session's policy does not admit it]"


class BuildGuard:
    """Per-compiler state: the redactor of each policy and what is known about artifacts."""

    def __init__(self, repo) -> None:
        self.repo = repo
        self._redactors: dict[RedactionPolicy, Redactor] = {}
        self._sensitive: dict[str, bool] = {}

    def policy(self, session: str | None) -> RedactionPolicy:
        return policy_for(self.repo, session or None)

    def redactor(self, policy: RedactionPolicy) -> Redactor:
        r = self._redactors.get(policy)
        if r is None:
            r = self._redactors[policy] = Redactor(policy)
        return r

    def artifact_is_sensitive(self, aid: str) -> bool:
        hit = self._sensitive.get(aid)
        if hit is None:
            obj = self.repo.objects.get(aid) if aid in self.repo.objects else None  # thin store
            hit = self._sensitive[aid] = isinstance(obj, Artifact) and obj.sensitive
        return hit

    def cited_sensitive(self, seg: Segment) -> str:
        """A sensitive artifact or memory a memory/artifact segment cites directly (retrieval
        and callers' extras name them in their sources), or ""."""
        for sid in seg.sources:
            if not is_id(sid):
                continue
            hit = self._sensitive.get(sid)
            if hit is None:
                store = self.repo.objects
                kind = store.type_of(sid) if sid in store else ""
                obj = store.get(sid) if kind in ("artifact", "memory") else None
                hit = self._sensitive[sid] = obj is not None and is_sensitive(obj)
            if hit:
                return sid
        return ""

    def sensitive_refs(self, state, history: Iterable[tuple[str, Any, Any]]) -> dict[str, str]:
        """{id: sensitive artifact id} for every sensitive artifact the state or history
        names, and for the events and messages that carry one."""
        out: dict[str, str] = {}
        for a in getattr(state, "artifacts", ()) or ():
            aid = a.get("artifact_id", "")
            if is_id(aid) and self.artifact_is_sensitive(aid):
                out[aid] = aid
        for eid, ev, msg in history:
            aid = ev.causality.get("artifact_id")
            if is_id(aid) and self.artifact_is_sensitive(aid):
                out[aid] = out[eid] = aid
                mid = ev.causality.get("message_id")
                if is_id(mid):
                    out[mid] = aid
            for block in getattr(msg, "blocks", ()) if msg is not None else ():
                ref = getattr(block, "output_ref", "") or getattr(block, "artifact_ref", "")
                if is_id(ref) and self.artifact_is_sensitive(ref):
                    out[ref] = out[eid] = ref
        return out

    def guard(self, session: str | None, state, history, cands: list[Segment]) -> list[Segment]:
        policy = self.policy(session)
        sensitive = self.sensitive_refs(state, history)
        redactor = self.redactor(policy) if policy.on_build else None
        out = []
        for seg in cands:
            data: dict[str, Any] = {}
            hit = next((sensitive[s] for s in seg.sources if s in sensitive), "")
            if not hit and seg.kind in ("memory", "artifact"):
                hit = self.cited_sensitive(seg)
            if hit or is_sensitive(seg.data):
                what = f"{self.repo.objects.type_of(hit)} {hit}" if hit else "marked sensitive"
                if policy.admit_sensitive:
                    data["admitted"] = f"sensitive ({what}): admitted by the policy (admit_sensitive)"
                else:
                    data["withheld"] = (f"sensitive ({what}): the policy does not admit sensitive "
                                        f"material (redaction.admit_sensitive)")
                    seg = _withhold(seg)
            if redactor is not None:
                seg, fired = _redact(seg, redactor)
                if fired:
                    data["redactions"] = summarize(fired)
            if data:
                seg = replace(seg, data={**thaw(seg.data), **data})
            out.append(seg)
        return out


def _withhold(seg: Segment) -> Segment:
    if seg.tool_call_id and seg.messages:
        msgs = tuple({**thaw(m), "text": WITHHELD} if m.get("role") == "tool" else thaw(m)
                     for m in seg.messages)
        return replace(seg, text=render_messages(msgs), messages=msgs)
    msgs = tuple({**thaw(m), "text": WITHHELD, **({"tool_calls": ()} if "tool_calls" in m else {})}
                 for m in seg.messages)
    return replace(seg, text=WITHHELD, messages=msgs)


def _redact(seg: Segment, redactor: Redactor) -> tuple[Segment, list[str]]:
    """Redact the text and the messages; a conversation segment's text is its messages
    rendered, so its secrets are counted once (from the messages)."""
    text, in_text = redactor.redact(seg.text) if seg.text else (seg.text, ())
    in_msgs: list[str] = []
    msgs = tuple(_value(m, redactor, in_msgs) for m in seg.messages) if seg.messages else ()
    if not in_text and not in_msgs:
        return seg, []
    fired = in_msgs if in_msgs else list(in_text)
    return replace(seg, text=text, messages=msgs if in_msgs else seg.messages), fired


def _value(v: Any, redactor: Redactor, fired: list[str]) -> Any:
    if isinstance(v, str):
        if is_id(v):
            return v
        new, hits = redactor.redact(v)
        fired.extend(hits)
        return new
    if isinstance(v, (dict, FrozenMap)):
        return {k: _value(x, redactor, fired) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_value(x, redactor, fired) for x in v]
    return v
