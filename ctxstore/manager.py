"""ContextManager: the seed's interface as the front door for harness authors.

    from ctxstore import Repository, ContextManager
    store = Repository.init(".")                      # or Repository.open(path) / Repository.memory()
    cm = ContextManager.start(store, title="fix the test", goal="make CI green")
    cm.add_user_message("The parser test fails, please fix it")
    cm.record_tool_call("call_1", "bash", {"cmd": "pytest -x"})
    cm.record_tool_result("call_1", output)      # big output -> artifact + preview
    bundle = cm.build_context(budget=8000, record=True)   # what the model sees, stored
    state = cm.project_state()

Everything is written as events on the bound branch through append transactions; the context
is compiled from the state projection and the recent first-parent history, never stored as the
source of truth. A recorded bundle (ContextBuilt event) answers "what did the model see".

This module is a facade: it turns the harness's calls into events and delegates the rest —
state projection with its snapshot cache to ctxstore.state.projector.Projector, history and
compilation to ctxstore.context.compile.ContextCompiler, compaction and merge to
ctxstore.compaction (which sees the manager only as a CompactionTarget).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

from .chunking import put_artifact_content
from .context import DEFAULT_EVICTION_ORDER, ContextBundle, Segment, Tokenizer, default_tokenizer
from .context.compile import MAX_HISTORY_EVENTS, ContextCompiler, History
from .errors import BadRevision, CompactionRejected, InvalidInput
from .objects import (
    Artifact,
    Compaction,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from .refs import DEFAULT_BRANCH, branch_ref
from .repo import Repository, Transaction
from .repo.gcpause import fewer_collections
from .repo.revparse import resolve_event
from .state import AgentState
from .state.projector import SNAPSHOT_EVERY, Projector

__all__ = ["DEFAULT_AUTO_COMPACT_SHARE", "MAX_HISTORY_EVENTS", "PREVIEW_BYTES", "SNAPSHOT_EVERY",
           "ContextManager"]

PREVIEW_BYTES = 1024
#: Compact automatically when the material offered passes this share of the input budget.
DEFAULT_AUTO_COMPACT_SHARE = 0.8


def _preview(text: str, limit: int = PREVIEW_BYTES) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore") + f"\n… [{len(data) - limit} more bytes in artifact]"


class ContextManager:
    """Bound to one branch of one session; every write appends to that branch."""

    def __init__(self, store: Repository, session: str | None = None,
                 branch: str | None = None, *, tokenizer: Tokenizer | None = None) -> None:
        self.repo = store
        cur = store.current()
        self.session = session or cur.session
        if not self.session:
            raise BadRevision("no session: pass one, or start one with ContextManager.start()")
        self.branch = branch or (cur.branch if cur.session == self.session else None) or DEFAULT_BRANCH
        self.ref = branch_ref(self.session, self.branch)
        if store.refs.read(self.ref) is None:
            raise BadRevision(f"session {self.session[:12]} has no branch {self.branch!r}")
        self.tokenizer = tokenizer or default_tokenizer()
        self.projector = Projector(store)
        self.compiler = ContextCompiler(store, self.projector, self.tokenizer)
        cfg = store.session(self.session).config
        self.artifact_threshold = int(cfg.get("artifact_threshold",
                                              store.config.get("artifact_threshold", 4096)))
        #: what the last build_context(retrieve=True) offered and refused (RetrievalReport)
        self.last_retrieval: Any = None
        self._batch: Transaction | None = None  # the open transaction of `batch()`

    # -- lifecycle -------------------------------------------------------------------------------
    @classmethod
    def start(cls, store: Repository, title: str = "", goal: str = "", **kw: Any) -> ContextManager:
        sid, _ = store.new_session(title=title, goal=goal, **kw)
        return cls(store, sid, kw.get("branch", DEFAULT_BRANCH))

    @classmethod
    def resume(cls, store: Repository, session: str | None = None,
               branch: str | None = None) -> ContextManager:
        """Bind to SESSION/BRANCH (default: HEAD's) and move HEAD there."""
        sid = store.resolve_session(session) if session else None
        cm = cls(store, sid, branch)
        with store.transaction(message=f"resume: {cm.branch}",
                               command="api: ContextManager.resume") as tx:
            tx.set_head(ref=cm.ref)
        return cm

    @property
    def tip(self) -> str:
        if self._batch is not None:
            return self._batch.branch(self.ref).tip
        tip = self.repo.refs.read(self.ref)
        if tip is None:
            raise BadRevision(f"branch {self.ref} was deleted")
        return tip

    def fork(self, name: str, at: str | None = None) -> ContextManager:
        """A new branch at AT (default this branch's tip) and a manager bound to it."""
        target = resolve_event(self.repo, at) if at else self.tip
        ref = branch_ref(self.session, name)
        with self.repo.transaction(message=f"fork: from {self.branch}",
                                    command="api: ContextManager.fork") as tx:
            tx.create_ref(ref, target)
        return ContextManager(self.repo, self.session, name, tokenizer=self.tokenizer)

    def rollback(self, rev: str) -> str:
        """Move this branch back to REV; the old tip stays in the reflog."""
        target = resolve_event(self.repo, rev)
        old = self.tip
        with self.repo.transaction(message=f"rollback: to {rev}",
                                    command="api: ContextManager.rollback") as tx:
            tx.set_ref(self.ref, target, expected=old)
        return target

    # -- writing ---------------------------------------------------------------------------------
    @contextmanager
    def batch(self, message: str = "batch") -> Iterator[ContextManager]:
        """Every write inside shares one transaction: the events are durable, and the branch
        moves, once, when the block ends (an exception appends none of them). An agent loop that
        writes many events per turn pays one commit instead of one per event:

            with cm.batch():
                cm.add_user_message("fix the test")
                cm.record_tool_call("t1", "bash", {"cmd": "pytest"})

        Inside, `tip` is the batch's newest event; reads (state, context) see the branch as it
        was before the batch. Nested batches join the outer one."""
        if self._batch is not None:
            yield self
            return
        with fewer_collections(), self.repo.transaction(
                self.ref, message=message, command="api: ContextManager.batch") as tx:
            self._batch = tx
            try:
                yield self
            finally:
                self._batch = None

    def _writing(self, message: str, command: str):
        """The transaction a write joins: the open batch's, else a new one of its own."""
        if self._batch is not None:
            return nullcontext(self._batch)
        return self.repo.transaction(self.ref, message=message, command=command)

    def append_event(self, type: str, actor: str = "agent", payload: Mapping | None = None,
                     causality: Mapping | None = None, ts: str | None = None) -> str:
        with self._writing(f"append {type}", "api: ContextManager.append_event") as tx:
            return tx.append(type, actor, dict(payload or {}), dict(causality or {}), ts,
                             ref=self.ref)

    def _message_event(self, type: str, actor: str, msg: Message, payload: dict,
                       causality: dict | None = None, ts: str | None = None) -> str:
        mid = self.repo.objects.put_object(msg)
        return self.append_event(type, actor, payload, {"message_id": mid, **(causality or {})}, ts)

    def add_user_message(self, text: str, ts: str | None = None) -> str:
        msg = Message("user", (TextBlock(text),), provenance={"source": "user"})
        return self._message_event("UserPromptSubmitted", "user", msg, {"text": _preview(text)},
                                   ts=ts)

    def add_system_message(self, text: str, role: str = "system", ts: str | None = None) -> str:
        msg = Message(role, (TextBlock(text),), provenance={"source": "system"})
        return self._message_event("MessageAdded", "system", msg, {"role": role, "text": _preview(text)},
                                   ts=ts)

    def add_assistant_message(self, text: str = "", *, tool_calls: Sequence[Mapping] = (),
                              thinking: str = "", model: str = "", harness: str = "",
                              stop_reason: str = "", ts: str | None = None) -> str:
        """The model's reply; each tool call also becomes a ToolCallRequested event.

        What a call does to the state (files read or modified, plan) comes from the tool
        registry (ctxstore.state.tools); `harness` names whose description of a tool name
        applies when several harnesses describe one (default: the first registered).
        `stop_reason` "aborted" or "error" says the reply was cut off: its calls are
        abandoned, never pending (docs/events.md, "Tool pairs")."""
        blocks: list = []
        if thinking:
            blocks.append(ThinkingBlock(thinking))
        if text:
            blocks.append(TextBlock(text))
        for tc in tool_calls:
            blocks.append(ToolCallBlock(tc["id"], tc["name"], tc.get("args", {})))
        msg = Message("assistant", tuple(blocks),
                      provenance={"source": "model", **({"harness": harness} if harness else {})},
                      meta={"model": model} if model else {})
        mid = self.repo.objects.put_object(msg)
        with self._writing("model response", "api: ContextManager.add_assistant_message") as tx:
            eid = tx.append("ModelResponseReceived", "model",
                            {"text": _preview(text), **({"model": model} if model else {}),
                             **({"stop_reason": stop_reason} if stop_reason else {})},
                            {"message_id": mid}, ts, ref=self.ref)
            for tc in tool_calls:
                eid = tx.append("ToolCallRequested", "model",
                                {"tool_call_id": tc["id"], "name": tc["name"],
                                 "args": dict(tc.get("args", {}))},
                                {"tool_call_id": tc["id"], "message_id": mid}, ts, ref=self.ref)
        return eid

    def record_tool_call(self, tool_call_id: str, name: str, args: Mapping | None = None,
                         ts: str | None = None, *, harness: str = "") -> str:
        return self.add_assistant_message(tool_calls=[{"id": tool_call_id, "name": name,
                                                       "args": dict(args or {})}],
                                          harness=harness, ts=ts)

    def add_artifact(self, data: bytes | str, kind: str = "tool_output", uri: str = "",
                     summary: str = "", media_type: str = "text/plain",
                     source_event: str = "", *, sensitive: bool = False) -> str:
        """Store content once (by hash) and an Artifact naming it; returns the artifact id.
        A `sensitive` artifact stays out of built contexts unless the session's redaction
        policy admits it (docs/redaction.md)."""
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        content, size = put_artifact_content(self.repo, raw)  # chunked above the threshold
        art = Artifact(kind, content, size, uri, summary, media_type, source_event, sensitive)
        return self.repo.objects.put_object(art)

    def record_tool_result(self, tool_call_id: str, output: str | bytes, *, is_error: bool = False,
                           name: str = "", ts: str | None = None) -> str:
        """The result of a call; output above the session's threshold becomes an artifact.
        Returns the result's event id. With the session option `auto_snapshot`, a call that may
        have written files is followed by a WorkspaceSnapshot event (ctxstore.workspace.auto)."""
        text = output.decode("utf-8", "replace") if isinstance(output, bytes) else output
        size = len(text.encode("utf-8"))
        causality: dict[str, Any] = {"tool_call_id": tool_call_id}
        if size > self.artifact_threshold:
            art = self.add_artifact(output, "tool_output", f"tool:{tool_call_id}",
                                    f"output of {name or tool_call_id} ({size} bytes)")
            causality["artifact_id"] = art
            block = ToolResultBlock(tool_call_id, preview=_preview(text), output_ref=art,
                                    is_error=is_error, truncated=True)
        else:
            block = ToolResultBlock(tool_call_id, text=text, is_error=is_error)
        msg = Message("tool", (block,), provenance={"source": "tool"})
        causality["message_id"] = self.repo.objects.put_object(msg)
        payload = {"tool_call_id": tool_call_id, "preview": _preview(text, 512), "size": size,
                   "truncated": size > self.artifact_threshold}
        if name:
            payload["name"] = name
        if is_error:
            payload["error"] = _preview(text, 512)
        eid = self.append_event("ToolCallFailed" if is_error else "ToolCallFinished", "tool",
                                payload, causality, ts)
        if self.repo.path is not None and "auto_snapshot" in self._auto_keys():
            from .workspace.auto import after_tool_result

            after_tool_result(self, tool_call_id, name)  # a snapshot event after the result
        return eid

    def _auto_keys(self) -> set[str]:
        """Which automatic behaviours are configured at all (cheap: no pygit2 import)."""
        cfg = self.repo.session(self.session).config
        return {k for k in ("auto_snapshot",) if cfg.get(k, self.repo.config.get(k))}

    def record_file_read(self, path: str, content: str | bytes | None = None,
                         summary: str = "", ts: str | None = None) -> str:
        causality = {}
        if content is not None:
            causality["artifact_id"] = self.add_artifact(content, "file", path, summary)
        return self.append_event("FileRead", "tool", {"path": path, **({"summary": summary} if summary else {})},
                                 causality, ts)

    def record_file_write(self, path: str, change_summary: str = "", *,
                          diff: str | None = None, ts: str | None = None) -> str:
        causality = {}
        if diff is not None:
            causality["artifact_id"] = self.add_artifact(diff, "diff", path, change_summary)
        return self.append_event("DiffApplied" if diff is not None else "FileWritten", "tool",
                                 {"path": path, "change_summary": change_summary}, causality, ts)

    def record_verifier(self, check: str, result: str, evidence_refs: Iterable[str] = (),
                        ts: str | None = None) -> str:
        if result not in ("pass", "fail", "skipped"):
            raise InvalidInput("verifier result must be pass, fail or skipped")
        return self.append_event("VerifierFinished", "tool",
                                 {"check": check, "result": result,
                                  "evidence_refs": list(evidence_refs)}, None, ts)

    def update_state(self, patch: Mapping[str, Any], ts: str | None = None) -> str:
        """An explicit StateUpdated event (patch rules: docs/events.md)."""
        return self.append_event("StateUpdated", "agent", {"patch": dict(patch)}, None, ts)

    # -- reading ---------------------------------------------------------------------------------
    def resolve(self, rev: str | None) -> str:
        """The event REV names (None: this branch's tip)."""
        return self.tip if rev is None else resolve_event(self.repo, rev)

    def message(self, mid: str) -> Message | None:
        """The message with this id, or None if absent or not a message."""
        return self.projector.message(mid)

    def project_state(self, rev: str | None = None, *, use_snapshots: bool = True) -> AgentState:
        """The state at REV (default: this branch's tip): a fold of the first-parent chain from
        the newest cached snapshot on it (ctxstore.state.projector)."""
        return self.projector.project(self.resolve(rev), use_snapshots=use_snapshots)

    def history(self, rev: str | None = None, *, limit: int = MAX_HISTORY_EVENTS,
                token_budget: int | None = None
                ) -> tuple[History, Compaction | None, str | None]:
        """Recent first-parent history at REV, oldest first, bounded by the newest compaction
        (ctxstore.context.compile.ContextCompiler.history)."""
        return self.compiler.history(self.resolve(rev), limit=limit, token_budget=token_budget)

    def build_context(self, rev: str | None = None, *, budget: int | None = None,
                      system_prompt: str | None = None, tools: Sequence[Mapping] | None = None,
                      extra: Sequence[Segment] = (), reserved_output: int | None = None,
                      eviction_order: Sequence[str] = DEFAULT_EVICTION_ORDER,
                      record: bool = False, auto_compact: bool = True,
                      truncate_system: bool = False, retrieve: bool | None = None,
                      query: str | None = None, agent: str = "",
                      allow_sensitive: bool = False) -> ContextBundle:
        """Compile the model input at REV (default: this branch's tip).

        With record=True the bundle is stored and a ContextBuilt event naming it is appended,
        so "what exactly did the model see" is answerable later. At the tip, when the material
        offered passes the session's `auto_compact_share` of the window (default 0.8; 0 turns
        it off), the branch is compacted first; a compaction that fails its checks is skipped
        and the builder trims instead. With truncate_system=True, system/developer messages
        that alone overflow the budget are cut to fit with a marker instead of raising
        BudgetTooSmall.

        With `retrieve` (default: the session config's `retrieval`), memories and artifacts
        relevant to QUERY (default: the current request, goal, task and open plan) are offered
        as P2 segments through the scope / trust / freshness checks of ctxstore.retrieval (needs
        `ctxstore[memory]`); `self.last_retrieval` reports what was offered and refused, and a
        recorded bundle appends usage records to the memories' scope histories."""
        if record and rev is not None and self.resolve(rev) != self.tip:
            raise BadRevision(f"--record builds at the tip of {self.branch}: {rev} is not its tip "
                              f"(a bundle recorded there would describe a different state)")
        cfg = self.repo.session(self.session).config
        budget = int(budget if budget is not None else cfg.get("context_window", 200_000))
        reserved = int(reserved_output if reserved_output is not None else
                       min(cfg.get("reserved_output", 0), budget // 4))
        if retrieve is None:
            retrieve = bool(cfg.get("retrieval", False))
        self.last_retrieval = None
        retriever = self._retrieval(query, agent, allow_sensitive) if retrieve else None
        bundle = self._compile(rev, budget, reserved, system_prompt, tools, extra, eviction_order,
                               truncate_system, retriever)
        share = float(cfg.get("auto_compact_share", DEFAULT_AUTO_COMPACT_SHARE))
        demand = sum(seg.tokens for seg in bundle.segments)
        just_compacted = self.repo.graph.event(self.tip).type == "CompactionCompleted"
        if auto_compact and rev is None and share > 0 and not just_compacted \
                and demand > share * bundle.available_tokens:
            from .compaction import compact

            try:
                done = compact(self, keep_recent_tokens=max(1, int(bundle.available_tokens * share / 4)))
            except CompactionRejected:
                done = None
            if done is not None and done.committed:
                bundle = self._compile(rev, budget, reserved, system_prompt, tools, extra,
                                       eviction_order, truncate_system, retriever)
        if record:
            bid = self.repo.objects.put("bundle", bundle.to_dict())
            used: dict[tuple[str, str], list[str]] = {}
            for seg in bundle.kept:
                got = seg.data.get("retrieved")
                if got and got.get("kind") == "memory":
                    used.setdefault((got["scope"], got["scope_key"]), []).append(got["id"])
            with self.repo.transaction(self.ref, message="append ContextBuilt",
                                        command="api: ContextManager.append_event") as tx:
                eid = tx.append("ContextBuilt", "system",
                                {"used_tokens": bundle.used_tokens, "max_tokens": bundle.max_tokens,
                                 "tokenizer": bundle.tokenizer, "at": bundle.state_event},
                                {"bundle_id": bid})
                if used:  # usage records: which bundle recalled which memory
                    from .memory import record_usage

                    record_usage(tx, used, bid, eid)
        return bundle

    def _retrieval(self, query, agent, allow_sensitive):
        """The compiler's retriever for this build: memory and artifact candidates for QUERY
        (default: the state's goal, task, open plan and questions, and the newest prompt),
        decided by ctxstore.retrieval.select; what it offered and refused goes to
        `self.last_retrieval`."""
        from .memory import scope_keys
        from .retrieval import RetrievalIndex, retrieve

        def retriever(st: AgentState, hist) -> list[Segment]:
            q = query
            if q is None:
                prompts = [e.payload.get("text", "") for _i, e, _m in hist
                           if e.type == "UserPromptSubmitted"]
                parts = [st.goal["user_goal"], st.goal["current_task"],
                         *(s["text"] for s in st.plan["steps"] if s.get("status") != "done"),
                         *st.open_questions, *prompts[-1:]]
                q = "\n".join(dict.fromkeys(str(p) for p in parts if p))
            live = {e.causality.get("artifact_id") for _i, e, _m in hist}
            live |= {getattr(b, "output_ref", "") for _i, _e, m in hist if m for b in m.blocks}
            segs, self.last_retrieval = retrieve(
                self.repo, RetrievalIndex.open(self.repo), q,
                scope_keys(self.repo, self.session), agent=agent,
                allow_sensitive=allow_sensitive, exclude={a for a in live if a})
            return segs
        return retriever

    # -- memory ----------------------------------------------------------------------------------
    def remember(self, content: str, *, scope: str, sources: Sequence[str], kind: str = "fact",
                 ttl: str | None = None, expires: str | None = None,
                 update_policy: str | None = None, actor: str = "agent", **kw: Any) -> str:
        """Write a governed memory (ctxstore.memory): refused (MemoryRefused) without sources
        (invariant 10), scope, or an expiry/update policy (invariant 11). SCOPE is `session`,
        `project`, ... (keys from this session) or `SCOPE:KEY`. Returns the memory id. The memory
        reaches a model only through build_context(retrieve=True)."""
        from .memory import MemorySpec, remember, scope_keys

        spec = MemorySpec(content=content, scope=scope, sources=list(sources), kind=kind, ttl=ttl,
                          expires=expires, update_policy=update_policy,
                          author=kw.pop("author", f"{actor}:{self.session[:12]}"), **kw)
        return remember(self.repo, spec, actor=actor, keys=scope_keys(self.repo, self.session))

    def recall(self, query: str | None = None, *, rev: str | None = None, k: int = 20) -> list:
        """The raw events (and the artifacts they name) that this branch's compaction summaries
        replaced, with ids; with QUERY the K best matches first (ctxstore.retrieval.recall)."""
        from .retrieval import recall

        return recall(self.repo, self.resolve(rev), query, k)

    def _compile(self, rev, budget, reserved, system_prompt, tools, extra, eviction_order,
                 truncate_system: bool = False, retriever=None) -> ContextBundle:
        return self.compiler.compile(self.resolve(rev), budget, reserved, system_prompt, tools, extra,
                                     eviction_order, truncate_system, retriever)

    # -- workspace -------------------------------------------------------------------------------
    def snapshot_workspace(self, root: str | None = None, *, reason: str = "snapshot",
                           only_if_changed: bool = False):
        """Record ROOT (default: the directory holding `.ctx`) as a git tree in
        `.ctx/workspace.git` and append a WorkspaceSnapshot event naming it to this branch
        (ctxstore.workspace; docs/format.md "Workspace snapshots"). Honours .gitignore; never
        touches the user's git index, HEAD, branches or stash. Returns a SnapshotResult."""
        from .workspace.snapshot import take_snapshot

        return take_snapshot(self.repo, root, ref=self.ref, reason=reason,
                             only_if_changed=only_if_changed,
                             command="api: ContextManager.snapshot_workspace")

    def restore_workspace(self, rev: str | None = None, paths: Sequence[str] = (), *,
                          root: str | None = None, dry_run: bool = False, force: bool = False):
        """Put the files back as the snapshot at REV (default: this branch's tip; the newest
        snapshot at or before it) had them. Refuses (WorkspaceConflict) to overwrite files
        changed since the root's newest snapshot unless `force`; records the root before and
        after as two snapshot events. Returns a RestorePlan."""
        from .workspace.restore import restore

        return restore(self.repo, self.resolve(rev), tuple(paths), root=root, dry_run=dry_run,
                       force=force, ref=self.ref, label=rev or self.branch,
                       command="api: ContextManager.restore_workspace")

    # -- subagents (seed §9: subagents isolate context) -------------------------------------------
    def spawn(self, task: str, *, pass_artifacts: Sequence[str] = (),
              pass_memories: Sequence[str] = (), title: str = "") -> ContextManager:
        """Open a child session linked to this branch that holds only the task and what is
        passed; returns a manager bound to it. Its `finish(...)` reports back here."""
        from .subagents.runtime import spawn

        sid, _ = spawn(self.repo, self.session, self.ref, task, pass_artifacts=pass_artifacts,
                       pass_memories=pass_memories, title=title)
        return ContextManager(self.repo, sid, DEFAULT_BRANCH, tokenizer=self.tokenizer)

    def finish(self, summary: str, evidence_refs: Sequence[str] = (),
               artifacts: Sequence[str] = (), risks: Sequence[str] | str = (),
               next_steps: Sequence[str] | str = ()) -> dict[str, str]:
        """End this subagent: a checked result event on the parent branch (refused without
        a summary and next steps). The parent's context shows the result and its refs, never
        this session's events. Returns {"finished", "result", "parent_ref"}."""
        from .subagents.runtime import finish

        return finish(self.repo, self.session, self.ref, summary, evidence_refs=evidence_refs,
                      artifacts=artifacts, risks=risks, next_steps=next_steps)

    def compact(self, rev: str | None = None, policy: Any = None, **kw: Any):
        """Compaction with provenance, checked before it counts (ctxstore.compaction)."""
        from .compaction import compact

        return compact(self, rev, policy, **kw)
