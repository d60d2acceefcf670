"""GitHub Copilot CLI sessions (`$COPILOT_HOME/session-state/<session id>/events.jsonl`).

Copilot CLI appends one event per line, `{type, data, id, timestamp, parentId}` (plus `agentId`
on a sub-agent's events; the types are those of the Copilot SDK's generated session-events
schema). One file is one session: `session.start` names it (`sessionId`, `context.cwd`); its
title is the first real prompt's (Copilot's own `summary:` in workspace.yaml is rewritten by
`/rename`, and a session's id derives from its title: a renamed session would import as a
second one). Conversation comes from `user.message`, `system.message` and `assistant.message`
(`content`, `reasoningText`/`reasoningOpaque`, `toolRequests`, `outputTokens`); calls pair with
`tool.execution_complete` (`success`, `result.content` or `error.message`) by `toolCallId`.
A sub-agent's events carry `agentId` (the `task` call that started it): they become an inline
child session. Every other event is kept as bookkeeping (`copilot:<type>`).

Tokens, one rule for stats and the oracle: the session's input and output are the per-model
`usage` of each `session.shutdown` (`inputTokens` already holds the cache reads and writes;
`outputTokens` already holds the reasoning tokens), summed over the shutdowns of a resumed
session; where no shutdown closes the last stretch of the file (still running, killed), its
output is the sum of `assistant.message.outputTokens`, one per response (`apiCallId`, else
`messageId`). Each assistant message carries its `outputTokens` as it arrives (a live import
shows them at once); the shutdown then adds the rest, so each response is counted once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..objects import TextBlock, ThinkingBlock, ToolCallBlock
from ..state.prompts import prompt_text, title_of
from .common import (
    MALFORMED,
    ImportContext,
    SessionBuilder,
    as_int,
    as_str,
    iter_jsonl,
    peek_jsonl,
    preview,
    tool_requested_payload,
)

FMT = "copilot"
LABEL = "GitHub Copilot CLI"

#: Every event type of the Copilot SDK's session-events schema (nodejs/src/generated/
#: session-events.ts); the ones marked ephemeral there are never written to events.jsonl but
#: are known all the same.
KNOWN_TYPES = frozenset({
    "abort", "assistant.idle", "assistant.intent", "assistant.message",
    "assistant.message_delta", "assistant.message_start", "assistant.reasoning",
    "assistant.reasoning_delta", "assistant.server_tool_progress", "assistant.streaming_delta",
    "assistant.tool_call_delta", "assistant.turn_end", "assistant.turn_start", "assistant.usage",
    "auto_mode_switch.completed", "auto_mode_switch.requested", "capabilities.changed",
    "command.completed", "command.execute", "command.queued", "commands.changed",
    "elicitation.completed", "elicitation.requested", "exit_plan_mode.completed",
    "exit_plan_mode.requested", "external_tool.completed", "external_tool.requested",
    "factory.run_settled", "factory.run_started", "factory.run_updated", "hook.end",
    "hook.progress", "hook.start", "mcp.headers_refresh_completed",
    "mcp.headers_refresh_required", "mcp.oauth_completed", "mcp.oauth_required",
    "mcp.prompts.list_changed", "mcp.resources.list_changed", "mcp.tools.list_changed",
    "mcp_app.tool_call_complete", "model.call_failure", "pending_messages.modified",
    "permission.completed", "permission.requested", "sampling.completed", "sampling.requested",
    "session.auto_mode_resolved", "session.autopilot_objective_changed",
    "session.background_tasks_changed", "session.binary_asset", "session.canvas.closed",
    "session.canvas.opened", "session.canvas.recorded", "session.canvas.registry_changed",
    "session.canvas.removed", "session.canvas.unavailable", "session.compaction_complete",
    "session.compaction_start", "session.context_changed", "session.context_cleared",
    "session.custom_agents_updated", "session.custom_notification", "session.error",
    "session.extensions.attachments_pushed", "session.extensions_loaded", "session.handoff",
    "session.idle", "session.info", "session.managed_settings_enforced",
    "session.managed_settings_resolved", "session.mcp_server_status_changed",
    "session.mcp_servers_loaded", "session.mode_changed", "session.model_change",
    "session.permissions_changed", "session.plan_changed", "session.remote_steerable_changed",
    "session.resume", "session.schedule_cancelled", "session.schedule_created",
    "session.schedule_rearmed", "session.session_limits_changed", "session.shutdown",
    "session.skills_loaded", "session.snapshot_rewind", "session.start",
    "session.task_complete", "session.title_changed", "session.todos_changed",
    "session.tools_updated", "session.truncation", "session.usage_checkpoint",
    "session.usage_info", "session.warning", "session.workspace_file_changed",
    "session_limits_exhausted.completed", "session_limits_exhausted.requested", "skill.invoked",
    "subagent.completed", "subagent.deselected", "subagent.failed", "subagent.selected",
    "subagent.started", "system.message", "system.notification", "tool.execution_complete",
    "tool.execution_partial_result", "tool.execution_progress", "tool.execution_start",
    "tool.user_requested", "tool_search.activated", "ui.ephemeral_query", "user.message",
    "user_input.completed", "user_input.requested",
})


def _d(v: Any) -> dict:
    return v if isinstance(v, dict) else {}



def known(rec: Mapping) -> bool:
    return rec.get("type") in KNOWN_TYPES and isinstance(rec.get("data"), dict)


def sniff(path: Path) -> bool:
    """A JSONL file whose first records are Copilot events: a type of the schema and a `data`
    object (Claude Code, Codex, Gemini and Qwen records have no `data` object)."""
    if not path.is_file() or path.suffix != ".jsonl":
        return False
    try:
        for rec in peek_jsonl(path, limit=20):
            if known(rec) and "id" in rec and "timestamp" in rec:
                return True
    except Exception:  # noqa: BLE001 - an unreadable file is simply not ours
        return False
    return False


def session_units(root: Path) -> list[Path]:
    return []  # events.jsonl files: the generic *.jsonl walk finds them


def default_dirs(env: Mapping[str, str], home: Path) -> list[Path]:
    """`$COPILOT_HOME/session-state` (Copilot CLI's own variable), else ~/.copilot; releases
    before 1.0.4 kept the folder under `$XDG_CONFIG_HOME/.copilot` when that was set."""
    if env.get("COPILOT_HOME"):
        return [Path(env["COPILOT_HOME"]).expanduser() / "session-state"]
    out = [home / ".copilot" / "session-state"]
    if env.get("XDG_CONFIG_HOME"):
        out.append(Path(env["XDG_CONFIG_HOME"]).expanduser() / ".copilot" / "session-state")
    return out


def _is_prompt(data: dict) -> bool:
    """A user.message the user typed: no `source` other than the user's, not an autopilot
    continuation (skill injections and inter-agent prompts name their source)."""
    source = data.get("source")
    if isinstance(source, str) and source and source != "user":
        return False
    return data.get("isAutopilotContinuation") is not True


def _agent_of(rec: dict) -> str:
    """The sub-agent an event belongs to: `agentId`, else the deprecated
    `data.parentToolCallId` of older releases ("" for the main agent)."""
    agent = rec.get("agentId")
    if isinstance(agent, str) and agent:
        return agent
    return as_str(_d(rec.get("data")).get("parentToolCallId"))


def _head(path: Path) -> tuple[dict, str, str]:
    """(session.start data, its timestamp, title from the first real prompt)."""
    start: dict = {}
    ts = ""
    title = ""
    for rec in peek_jsonl(path, limit=400):
        t = rec.get("type")
        data = _d(rec.get("data"))
        ts = ts or as_str(rec.get("timestamp"))
        if t == "session.start" and not start:
            start = data
            ts = as_str(rec.get("timestamp")) or ts
        elif t == "user.message" and not title and not _agent_of(rec) and _is_prompt(data):
            title = title_of(prompt_text(as_str(data.get("content"))))
        if start and title:
            break
    return start, ts, title


def open_file(ctx: ImportContext, path: Path) -> EventsFile:
    """The session an events.jsonl starts, ready to be fed its lines (`run`, or `feed` a line
    at a time: `ctx import --follow`)."""
    start, ts, title = _head(path)
    sid = as_str(start.get("sessionId"))
    if not sid:
        sid = path.parent.name if path.name == "events.jsonl" else path.stem
    cwd = as_str(_d(start.get("context")).get("cwd"))
    origin: dict[str, Any] = {"format": FMT, "id": sid}
    if isinstance(start.get("copilotVersion"), str):
        origin["copilot_version"] = start["copilotVersion"]
    parent_src = as_str(start.get("detachedFromSpawningParentSessionId"))
    parent = ""
    if parent_src:
        origin["parent_id"] = parent_src
        parent = ctx.find_session(FMT, parent_src)
        if not parent:
            ctx.report.notes.append(f"{path.name}: continues session {parent_src}, not imported; "
                                    f"link kept in the session origin only")
    b = SessionBuilder(ctx, fmt=FMT, file=path.name, source_id=sid,
                       ts=as_str(start.get("startTime")) or ts, nonce=sid, origin=origin,
                       kind="fork" if parent_src else "main", title=title, cwd=cwd,
                       parent_session=parent)
    return EventsFile(b)


def import_file(ctx: ImportContext, path: Path) -> None:
    ef = open_file(ctx, path)
    ef.run(path)
    ef.b.finish()


class _Builders:
    """What `ctx import --follow` holds as `reader.b`: the main session's builder, whose
    `ctx`/`tx` (reset on each poll) and `finish` reach the inline sub-agent sessions too."""

    def __init__(self, owner: EventsFile) -> None:
        object.__setattr__(self, "_owner", owner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.main, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._owner.main, name, value)
        if name in ("ctx", "tx"):
            for child in self._owner.children.values():
                setattr(child, name, value)
                if name == "ctx":  # a new poll: the children report into it as well
                    value.report.sessions.append(child.stats)
                    child.stats.new_events = 0

    def finish(self) -> None:
        for child in self._owner.children.values():
            child.finish()
        self._owner.main.finish()


class EventsFile:
    def __init__(self, main: SessionBuilder) -> None:
        self.main = main
        self.b = _Builders(self)
        self.children: dict[str, SessionBuilder] = {}  # agentId -> inline sub-agent session
        #: toolCallId -> (builder, ToolCallRequested event, tool name, arguments)
        self.calls: dict[str, tuple[SessionBuilder, str, str, Any]] = {}
        self.model = ""
        #: response key -> (model, output tokens) streamed since the last shutdown
        self.streamed: dict[str, tuple[str, int]] = {}
        self.running = {"input": 0, "cached": 0, "written": 0, "output": 0}
        self.before: dict[str, tuple[str, int]] = {}  # main-agent event id -> tip before it

    def run(self, path: Path) -> None:
        for n, text, rec in iter_jsonl(self.main.ctx, path):
            self.feed(n, text, rec)

    # -- routing --------------------------------------------------------------------------
    def builder_for(self, rec: dict) -> SessionBuilder:
        t = rec.get("type")
        data = _d(rec.get("data"))
        if t == "tool.execution_complete" or (isinstance(t, str) and t.startswith("subagent.")):
            # a result goes where its call is; a sub-agent's start and end are the spawning
            # agent's events (Copilot writes subagent.started before the task call itself)
            call = self.calls.get(as_str(data.get("toolCallId")))
            if call is not None:
                return call[0]
            if t != "tool.execution_complete":
                return self.main
        agent = _agent_of(rec)
        if not agent:
            return self.main
        return self.children.get(agent) or self._child(agent, rec)

    def _child(self, agent: str, rec: dict) -> SessionBuilder:
        main = self.main
        call = self.calls.get(agent)
        parent = call[0] if call is not None else main
        args = call[3] if call is not None and isinstance(call[3], dict) else {}
        data = _d(rec.get("data"))
        title = (as_str(args.get("description")) or as_str(data.get("agentDisplayName"))
                 or title_of(prompt_text(as_str(args.get("prompt")))) or agent)
        if call is None:
            main.ctx.report.notes.append(f"{main.file}: sub-agent {agent} has no matching task "
                                         f"call; linked to its session only")
        child = SessionBuilder(
            main.ctx, fmt=FMT, file=main.file, source_id=main.source_id,
            ts=as_str(rec.get("timestamp")) or main.last_ts, nonce=f"{main.source_id}/agent/{agent}",
            origin={"format": FMT, "id": main.source_id, "agent_id": agent, "layout": "inline",
                    **({"agent_name": data["agentName"]} if isinstance(data.get("agentName"), str)
                       else {})},
            kind="subagent", title=title_of(title), parent_session=parent.sid,
            spawn_event=call[1] if call is not None else "", cwd=main.cwd, agent=agent)
        self.children[agent] = child
        return child

    # -- one line ---------------------------------------------------------------------------
    def feed(self, n: int, text: str, rec: Any) -> None:
        if rec is MALFORMED:
            b = self.main
            b.begin(n, rec, text)
            b.append(f"{FMT}:malformed", "system", {})
            return
        b = self.builder_for(rec)
        t = rec.get("type")
        data = _d(rec.get("data"))
        eid = as_str(rec.get("id"))
        if b is self.main and eid:
            self.before.setdefault(eid, (b.tip, b.tip_gen))
        b.begin(n, rec, text)
        ts = b.ts(rec.get("timestamp"))
        if t == "user.message":
            self.user(b, data, ts)
        elif t == "system.message":
            # Copilot CLI's own prompt (its tools, its rules: ~25 KB): kept and exported, but
            # a custom message, not a system segment every rebuilt context must carry (Codex's
            # base instructions and Claude Code's system prompt are not replayed either)
            content = as_str(data.get("content"))
            meta = {f"copilot_{k}": data[k] for k in ("role", "name") if isinstance(data.get(k), str)}
            mid = b.message("custom", [TextBlock(content)], meta=meta)
            b.append("MessageAdded", "system", {"role": "custom", "text": preview(content),
                                                "harness_prompt": True}, {"message_id": mid}, ts)
        elif t == "assistant.message":
            self.assistant(b, data, ts)
        elif t == "tool.execution_start":
            self.started(b, data, ts)
        elif t == "tool.execution_complete":
            self.completed(b, data, n, ts)
        elif t == "session.compaction_complete" and data.get("success") is True:
            self.compacted(b, data, ts)
        elif t == "session.shutdown":
            self.shutdown(b, data, ts)
        else:
            if t not in KNOWN_TYPES:
                b.ctx.warn(b.file, n, f"unknown record type {t!r}; kept as {FMT}:{t}")
            payload: dict[str, Any] = {}
            if t == "session.model_change" and isinstance(data.get("newModel"), str):
                payload["model"] = self.model = data["newModel"]
            elif t in ("session.start", "session.resume"):
                model = data.get("selectedModel")
                if isinstance(model, str) and model:
                    payload["model"] = self.model = model
            elif t == "session.title_changed" and isinstance(data.get("title"), str):
                payload["title"] = preview(data["title"])
            elif t in ("subagent.started", "subagent.completed", "subagent.failed"):
                payload["tool_call_id"] = as_str(data.get("toolCallId"))
            b.append(f"{FMT}:{t if isinstance(t, str) and t else 'unknown'}", "system", payload,
                     ts=ts)
            if t == "session.snapshot_rewind" and b is self.main:
                back = self.before.get(as_str(data.get("upToEventId")))
                if back is not None:  # that event and all after it were dropped: a new line
                    hint = as_str(data.get("upToEventId"))[:8]
                    b.lines[b.cur][2] = b.lines[b.cur][2] or hint  # the line left behind
                    b.fork(back[0], back[1], hint)

    def user(self, b: SessionBuilder, data: dict, ts: str) -> None:
        content = as_str(data.get("content"))
        meta = {k: data[k] for k in ("source", "interactionId") if isinstance(data.get(k), str)}
        if _is_prompt(data) and prompt_text(content):
            mid = b.message("user", [TextBlock(content)], meta=meta)
            b.append("UserPromptSubmitted", "user", {"text": preview(content)},
                     {"message_id": mid}, ts)
            return
        mid = b.message("user", [TextBlock(content)], meta=meta)
        b.append("MessageAdded", "user", {"role": "user", "text": preview(content)},
                 {"message_id": mid}, ts)

    def assistant(self, b: SessionBuilder, data: dict, ts: str) -> None:
        blocks: list = []
        reasoning, opaque = as_str(data.get("reasoningText")), as_str(data.get("reasoningOpaque"))
        if reasoning or opaque:
            blocks.append(ThinkingBlock(reasoning, opaque))
        content = as_str(data.get("content"))
        if content:
            blocks.append(TextBlock(content))
        requests = [r for r in data.get("toolRequests") or [] if isinstance(r, dict)
                    and isinstance(r.get("toolCallId"), str) and r["toolCallId"]]
        for r in requests:
            blocks.append(ToolCallBlock(r["toolCallId"], as_str(r.get("name")),
                                        r.get("arguments") if r.get("arguments") is not None else {}))
        model = as_str(data.get("model")) or self.model
        meta = {k: data[k] for k in ("messageId", "model", "apiCallId", "requestId", "turnId")
                if isinstance(data.get(k), str)}
        mid = b.message("assistant", blocks, meta=meta)
        payload: dict[str, Any] = {"text": preview(content)}
        if model:
            payload["model"] = model
        key = as_str(data.get("apiCallId")) or as_str(data.get("messageId"))
        if key:
            payload["response_id"] = key
        if "outputTokens" in data and isinstance(data["outputTokens"], (int, float)) \
                and not isinstance(data["outputTokens"], bool):
            out = as_int(data["outputTokens"])
            payload["usage"] = {"input_tokens": 0, "output_tokens": out}
            skey = key or f"{b.sid}:{b.stats.records}"
            self.streamed.pop(skey, None)
            self.streamed[skey] = (model, out)
        b.append("ModelResponseReceived", "model", payload, {"message_id": mid}, ts)
        for r in requests:
            tcid, name = r["toolCallId"], as_str(r.get("name"))
            args = r.get("arguments") if r.get("arguments") is not None else {}
            eid = b.append("ToolCallRequested", "model", tool_requested_payload(tcid, name, args),
                           {"tool_call_id": tcid, "message_id": mid}, ts)
            self.calls[tcid] = (b, eid, name, args)

    def started(self, b: SessionBuilder, data: dict, ts: str) -> None:
        tcid, name = as_str(data.get("toolCallId")), as_str(data.get("toolName"))
        if not tcid or tcid in self.calls:
            b.append(f"{FMT}:tool.execution_start", "system",
                     {"tool_call_id": tcid, "name": name}, ts=ts)
            return
        # a call no assistant message requested (user-requested, or an older release): the
        # start is its request
        args = data.get("arguments") if data.get("arguments") is not None else {}
        mid = b.message("assistant", [ToolCallBlock(tcid, name, args)],
                        meta={"kind": "tool.execution_start"})
        eid = b.append("ToolCallRequested", "model", tool_requested_payload(tcid, name, args),
                       {"tool_call_id": tcid, "message_id": mid}, ts)
        self.calls[tcid] = (b, eid, name, args)

    def completed(self, b: SessionBuilder, data: dict, n: int, ts: str) -> None:
        tcid = as_str(data.get("toolCallId"))
        call = self.calls.get(tcid)
        if call is None:
            b.ctx.warn(b.file, n, f"tool result without its call (toolCallId {tcid!r})")
            b.append(f"{FMT}:tool.execution_complete", "tool", {"tool_call_id": tcid}, ts=ts)
            return
        _builder, requested, name, _args = call
        ok = data.get("success") is True
        result, error = _d(data.get("result")), data.get("error")
        if ok or result:
            text = as_str(result.get("content")) or as_str(result.get("detailedContent"))
        else:
            text = ""
        if not ok:
            msg = as_str(error.get("message")) if isinstance(error, dict) else as_str(error)
            text = msg or text or "failed"
        b.tool_result(tcid, name, requested, text, not ok, ts)

    def compacted(self, b: SessionBuilder, data: dict, ts: str) -> None:
        summary = as_str(data.get("summaryContent"))
        mid = b.message("summary", [TextBlock(summary)], meta={"kind": "compaction"})
        extra = {k: data[k] for k in ("trigger", "checkpointNumber", "messagesRemoved")
                 if isinstance(data.get(k), (str, int)) and not isinstance(data.get(k), bool)}
        b.compaction(summary, b.tip, ts, tokens_before=as_int(data.get("preCompactionTokens")),
                     extra=extra, message_id=mid)

    def shutdown(self, b: SessionBuilder, data: dict, ts: str) -> None:
        """The per-model usage of this process lifetime, as a running total on the session
        (`usage_total`, one event per model so stats split it by model), less the output the
        assistant messages of the lifetime already carried."""
        metrics = {m: _d(v) for m, v in _d(data.get("modelMetrics")).items() if isinstance(m, str)}
        streamed_by: dict[str, int] = {}
        for model, out in self.streamed.values():
            streamed_by[model] = streamed_by.get(model, 0) + out
        self.streamed = {}
        stray = sum(v for m, v in streamed_by.items() if m not in metrics)
        models = sorted(metrics)
        first = True
        for i, model in enumerate(models):
            usage = _d(metrics[model].get("usage"))
            r = self.running
            r["input"] += as_int(usage.get("inputTokens"))
            r["cached"] += as_int(usage.get("cacheReadTokens"))
            r["written"] += as_int(usage.get("cacheWriteTokens"))
            rest = as_int(usage.get("outputTokens")) - streamed_by.get(model, 0)
            if i == len(models) - 1:
                rest -= stray  # streamed under a name the metrics do not use
            r["output"] += rest
            payload = {"model": model, "usage_total": {
                "input_tokens": r["input"], "cached_input_tokens": r["cached"],
                "cache_write_input_tokens": r["written"], "output_tokens": r["output"]}}
            if first:
                payload["subtype"] = as_str(data.get("shutdownType"))
                b.append(f"{FMT}:session.shutdown", "system", payload, ts=ts)
                first = False
            else:
                b.append(f"{FMT}:usage", "system", payload, ts=ts)
        if first:
            b.append(f"{FMT}:session.shutdown", "system",
                     {"subtype": as_str(data.get("shutdownType"))}, ts=ts)
        for child in self.children.values():  # the process ended: its sub-agents with it
            child.append(f"{FMT}:session.shutdown", "system", {"from_parent": True}, ts=ts)
