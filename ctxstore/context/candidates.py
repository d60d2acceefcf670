"""Turn a projected state and the recent history into candidate segments for build_context.

Pure: the caller (the integrating ContextManager) reads the events and their messages from the
repository and passes them in; nothing here does I/O. The rules (docs/context.md has the table):

- instructions: `system_prompt` -> system (P0); each of `tools` -> tool_schema (P0);
  `MessageAdded` system/developer messages in the history -> system/developer (P0).
- state (`state_segments`): goal, plan (+ latest verifier results), open questions,
  constraints -> P1; files, errors -> P1; preferences, decisions, facts, artifacts -> P2.
- history, in event order, grouped into turns (a turn starts at each UserPromptSubmitted):
  the LAST user prompt is the current request (P0) unless `current_request` is given; other
  prompts are turns (P1); assistant text is a turn in the `recent_turns` newest turns, else
  chatter (P3). Each ToolCallRequested and its ToolCallFinished/Failed (paired by
  tool_call_id, never by parentage) become ONE segment: P1 turn, or P3 tool_output when the
  result is over `big_output_tokens` (then only a preview of it is kept, with a pointer to the
  full output); likewise a call whose arguments are over `big_output_tokens` (a Write of a
  whole file) keeps a preview of each long string argument. A call without a result is, by the one rule of state/calls.py, either
  pending — a pending_tool_pair (P0) with a placeholder result — or abandoned (its response
  was aborted, the user spoke again, the turn was interrupted): an abandoned call is never
  replayed. A result without an earlier call in the window (invariant 1) is not sent.
- `summary` (a compaction summary) -> summary (P1), placed before the state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..objects.event import Event
from ..objects.frozen import thaw
from ..objects.message import Message, ToolCallBlock, ToolResultBlock
from ..state.calls import event_facts, open_calls
from .segments import (
    Segment,
    args_json,
    assistant_message,
    render_messages,
    tool_message,
    user_message,
)
from .state_segments import state_segments
from .tokenizer import Tokenizer, default_tokenizer

BIG_OUTPUT_TOKENS = 2000
BIG_OUTPUT_PREVIEW_CHARS = 2000
#: A call whose arguments pass `big_output_tokens` (a Write of a whole file) keeps this many
#: characters of each long string argument.
BIG_ARG_PREVIEW_CHARS = 2000
RECENT_TURNS = 3
PENDING_TEXT = "[result pending: this tool call has not returned yet]"

History = Iterable[tuple[str, Event, "Message | None"]]


def _ids(*xs: Any) -> tuple[str, ...]:
    out: list[str] = []
    for x in xs:
        if isinstance(x, str) and x and x not in out:
            out.append(x)
    return tuple(out)


def _tool_specs(tools: Sequence[Mapping] | None) -> list[Segment]:
    out = []
    for i, t in enumerate(tools or ()):
        spec = t.get("function", t) if t.get("type") == "function" else t
        data = {"name": str(spec.get("name", "")), "description": str(spec.get("description", "")),
                "parameters": thaw(spec.get("parameters", {}))}
        out.append(Segment("tool_schema", text=args_json(data), data=data, order=i,
                           sources=(f"arg:tools/{data['name'] or i}",)))
    return out


class _Call:
    __slots__ = ("tcid", "name", "args", "order", "group", "sources", "result", "is_error",
                 "result_sources", "ref")

    def __init__(self, tcid: str, name: str, args: Any, order: int, group: str) -> None:
        self.tcid, self.name, self.args, self.order, self.group = tcid, name, args, order, group
        self.sources: tuple[str, ...] = ()
        self.result: str | None = None
        self.is_error = False
        self.result_sources: tuple[str, ...] = ()
        self.ref = ""


def _result_text(event: Event, msg: Message | None) -> tuple[str, bool, str]:
    """(text, is_error, full-output ref) of a ToolCallFinished/Failed event."""
    p = event.payload
    ref = str(event.causality.get("artifact_id") or "")
    blocks = [b for b in (msg.blocks if msg else ()) if isinstance(b, ToolResultBlock)]
    if blocks:
        b = blocks[0]
        text = b.text or b.preview
        ref = b.output_ref or ref
        if b.truncated and ref:
            text += f"\n[output truncated; full output in {ref}]"
        return text, b.is_error or event.type == "ToolCallFailed", ref
    if event.type == "ToolCallFailed":
        return f"error: {p.get('error', '')}", True, ref
    text = str(p.get("preview", ""))
    if p.get("truncated") and ref:
        text += f"\n[output truncated; full output in {ref}]"
    return text, False, ref


def _history_segments(state, history: list, last_prompt: int, recent_from: int,
                      tok: Tokenizer, big: int) -> list[Segment]:
    segs: list[Segment] = []
    calls: dict[str, _Call] = {}
    group, turn = "", 0
    for pos, (eid, ev, msg) in enumerate(history):
        base = pos * 8
        t, mid = ev.type, ev.causality.get("message_id")
        if t == "UserPromptSubmitted":
            group, turn = eid, turn + 1
            text = (msg.text if msg else "") or str(ev.payload.get("text", ""))
            kind = "current_request" if pos == last_prompt else "turn"
            segs.append(Segment(kind, text=text, messages=(user_message(text),), order=base,
                                group=group, sources=_ids(eid, mid)))
        elif t == "ModelResponseReceived":
            if msg is not None and not msg.include_in_context:
                continue
            text = (msg.text if msg else "") or str(ev.payload.get("text", ""))
            if text:
                kind = "turn" if turn >= recent_from else "chatter"
                segs.append(Segment(kind, text=text, messages=(assistant_message(text),),
                                    order=base, group=group, sources=_ids(eid, mid)))
            for k, b in enumerate(b for b in (msg.blocks if msg else ()) if isinstance(b, ToolCallBlock)):
                if b.tool_call_id and b.tool_call_id not in calls:
                    c = calls[b.tool_call_id] = _Call(b.tool_call_id, b.name, b.args,
                                                      base + 1 + min(k, 6), group)
                    c.sources = _ids(eid, mid)
        elif t == "ToolCallRequested":
            tcid = str(ev.payload.get("tool_call_id") or ev.causality.get("tool_call_id") or "")
            if not tcid:
                continue
            c = calls.get(tcid)
            if c is None:
                c = calls[tcid] = _Call(tcid, str(ev.payload.get("name", "")),
                                        ev.payload.get("args", {}), base, group)
            c.sources = _ids(*c.sources, eid, mid)
        elif t in ("ToolCallFinished", "ToolCallFailed"):
            tcid = str(ev.payload.get("tool_call_id") or ev.causality.get("tool_call_id") or "")
            c = calls.get(tcid)
            if c is None or c.result is not None:
                continue  # a result without a call in the window is never sent (invariant 1)
            c.result, c.is_error, c.ref = _result_text(ev, msg)
            c.result_sources = _ids(eid, mid, c.ref)
        elif t == "MessageAdded" and msg is not None and msg.include_in_context:
            kind = {"system": "system", "developer": "developer", "summary": "summary"}.get(msg.role)
            if kind and msg.text:
                segs.append(Segment(kind, text=msg.text, order=base, sources=_ids(eid, mid)))
    end = len(history) * 8
    # The rule over the window, and the state's verdict over the whole branch (a response
    # that stopped the call may lie just before the window): abandoned if either says so.
    abandoned = set(open_calls(event_facts((eid, ev) for eid, ev, _ in history)).abandoned)
    if state is not None:
        abandoned.update(state.abandoned_tool_calls)
    pending = state.pending_tool_calls if state is not None else {}
    for tcid, info in pending.items():  # calls whose request is older than the window
        if tcid not in calls and tcid not in abandoned:
            c = calls[tcid] = _Call(tcid, info["name"], info["args"], end, group)
            c.sources = _ids(info["event"])
            end += 1
    for c in calls.values():
        if c.result is None and c.tcid in abandoned:
            continue  # abandoned: it will never get a result, so it is never replayed
        segs.append(_pair_segment(c, tok, big))
    return segs


def _shrink_args(v: Any, where: str) -> tuple[Any, bool]:
    """Arguments with every long string cut to a preview that says where the full call is."""
    if isinstance(v, str):
        if len(v) <= BIG_ARG_PREVIEW_CHARS:
            return v, False
        return (f"{v[:BIG_ARG_PREVIEW_CHARS].rstrip()}… [{len(v):,} chars; the full call is in "
                f"{where}]"), True
    if isinstance(v, Mapping):
        out, cut = {}, False
        for k, x in v.items():
            out[k], c = _shrink_args(x, where)
            cut |= c
        return out, cut
    if isinstance(v, (list, tuple)):
        items = [_shrink_args(x, where) for x in v]
        return [x for x, _ in items], any(c for _, c in items)
    return v, False


def _pair_segment(c: _Call, tok: Tokenizer, big: int) -> Segment:
    args, args_cut = thaw(c.args), False
    if tok.count(args_json(args)) > big:  # e.g. a Write of a whole file: preview the content
        args, args_cut = _shrink_args(args, c.sources[0] if c.sources else "the event log")
    call = assistant_message(tool_calls=({"id": c.tcid, "name": c.name, "args": args},))
    if c.result is None:
        msgs = (call, tool_message(c.tcid, PENDING_TEXT, pending=True))
        return Segment("pending_tool_pair", text=render_messages(msgs), messages=msgs,
                       order=c.order, group=c.group, tool_call_id=c.tcid, sources=c.sources)
    kind, text = ("tool_output" if args_cut else "turn"), c.result
    n = tok.count(text)
    if n > big:
        kind = "tool_output"
        where = c.ref or (c.result_sources[0] if c.result_sources else "the event log")
        text = (f"{text[:BIG_OUTPUT_PREVIEW_CHARS].rstrip()}\n"
                f"… [output truncated: {n} tokens; full output in {where}]")
    msgs = (call, tool_message(c.tcid, text, is_error=c.is_error))
    return Segment(kind, text=render_messages(msgs), messages=msgs, order=c.order, group=c.group,
                   tool_call_id=c.tcid, sources=_ids(*c.sources, *c.result_sources))


def candidates_from_history(state, events_with_messages: History,
                            current_request: str | None = None,
                            system_prompt: str | None = None,
                            tools: Sequence[Mapping] | None = None,
                            summary: str | None = None, *,
                            summary_sources: Sequence[str] = (),
                            tokenizer: Tokenizer | None = None,
                            recent_turns: int = RECENT_TURNS,
                            big_output_tokens: int = BIG_OUTPUT_TOKENS) -> list[Segment]:
    """Candidate segments for `build_context` from an AgentState and `(event_id, Event,
    Message | None)` triples, oldest first. Arguments that are not stored objects get sources
    named `arg:...` (e.g. "arg:system_prompt"); pass `summary_sources` with a summary."""
    tok = tokenizer if tokenizer is not None else default_tokenizer()
    history = list(events_with_messages)
    prompts = [i for i, (_, ev, _) in enumerate(history) if ev.type == "UserPromptSubmitted"]
    last_prompt = prompts[-1] if prompts and current_request is None else -1
    n_turns = len(prompts) + (1 if current_request is not None else 0)
    out: list[Segment] = []
    if system_prompt:
        out.append(Segment("system", text=system_prompt, sources=("arg:system_prompt",)))
    out.extend(_tool_specs(tools))
    if summary:
        out.append(Segment("summary", text=summary,
                           sources=tuple(summary_sources) or ("arg:summary",)))
    if state is not None:
        out.extend(state_segments(state))
    out.extend(_history_segments(state, history, last_prompt, n_turns - recent_turns + 1, tok,
                                 big_output_tokens))
    if current_request is not None:
        out.append(Segment("current_request", text=current_request,
                           messages=(user_message(current_request),), order=len(history) * 8 + 7,
                           group="arg:current_request", sources=("arg:current_request",)))
    return out
