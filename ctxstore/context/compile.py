"""Compiling the model input at an event of a repository: where the pure context builder
meets the store.

`ContextCompiler.history` reads the recent first-parent history (bounded by the newest
compaction, a count and a token estimate); `ContextCompiler.compile` projects the state there
(through a snapshot-caching `ctxstore.state.projector.Projector`), turns state + history into
candidate segments (a compaction's summary and merged branches' summaries included) and hands
them to `build_context`. Nothing here writes except the projector's snapshot cache; recording a
bundle and auto-compaction are the ContextManager's business.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..compaction.live import Boundary, live_events
from ..objects import Compaction, Event, Message
from ..repo import Repository
from ..state import AgentState
from ..state.projector import Projector
from .builder import build_context
from .bundle import ContextBundle
from .candidates import RECENT_TURNS, candidates_from_history
from .segments import Segment
from .subagent_view import link_imported, subagent_segments
from .tokenizer import Tokenizer

#: How far back the context builder looks for history (events) when no compaction bounds it.
MAX_HISTORY_EVENTS = 4000

#: (event id, event, its message or None), oldest first.
History = list[tuple[str, Event, Message | None]]


class ContextCompiler:
    """Compiles bundles at events of one repository with one tokenizer."""

    def __init__(self, repo: Repository, projector: Projector, tokenizer: Tokenizer) -> None:
        self.repo = repo
        self.projector = projector
        self.tokenizer = tokenizer
        self._guard = None  # redaction_step.BuildGuard, made on first compile

    def history(self, tip: str, *, limit: int = MAX_HISTORY_EVENTS,
                token_budget: int | None = None
                ) -> tuple[History, Compaction | None, str | None]:
        """Recent first-parent history, oldest first, bounded by the newest compaction (whose
        record is returned with the CompactionCompleted event id), by `limit` events, and —
        once the recent turns are in — by about `token_budget` tokens of estimated text: older
        history could only be offered as P3 chatter that cannot fit anyway."""
        out: list[tuple[str, Event]] = []
        boundary = Boundary()
        estimate, prompts = 0, 0
        for eid, ev in live_events(self.repo.graph, self.repo.objects, tip, boundary):
            if len(out) >= limit:
                break
            if token_budget is not None and boundary.record is None:
                p = ev.payload
                estimate += 8 + len(str(p.get("text") or p.get("preview") or "")) // 4
                prompts += ev.type == "UserPromptSubmitted"
                if estimate > token_budget and prompts > RECENT_TURNS:
                    break
            out.append((eid, ev))
        compaction, comp_event = boundary.record, boundary.event
        out.reverse()
        message = self.projector.message
        hist = [(i, e, message(e.causality["message_id"]) if e.causality.get("message_id") else None)
                for i, e in out]
        return hist, compaction, comp_event

    def compile(self, tip: str, budget: int, reserved: int, system_prompt: str | None,
                tools: Sequence[Mapping] | None, extra: Sequence[Segment],
                eviction_order: Sequence[str], truncate_system: bool = False,
                retriever: Callable[[AgentState, History], Sequence[Segment]] | None = None
                ) -> ContextBundle:
        """The budgeted bundle at event TIP (`truncate_system`: see build_context). RETRIEVER,
        given the state and live history, adds candidates (the manager's memory and artifact
        retrieval, ctxstore.retrieval): one more candidate source, decided like the others."""
        state = self.projector.project(tip)
        hist, compaction, comp_event = self.history(tip, token_budget=budget)
        current = None
        if compaction is not None and not any(e.type == "UserPromptSubmitted" for _, e, _ in hist):
            current = self._last_prompt(compaction)  # invariant 5: the request survives compaction
        cands = candidates_from_history(
            state, hist, current_request=current, system_prompt=system_prompt, tools=tools,
            summary=compaction.summary if compaction else None,
            summary_sources=(comp_event, *([compaction.first_event] if compaction else []))
            if compaction else (), tokenizer=self.tokenizer)
        cands.extend(self._merge_segments(hist))
        cands.extend(subagent_segments(self.repo, hist))
        cands.extend(extra)
        if retriever is not None:
            cands.extend(retriever(state, hist))
        session = state.session or self.repo.session_of_event(tip)
        cands = link_imported(self.repo, session, state, cands)
        if self._guard is None:
            from .redaction_step import BuildGuard

            self._guard = BuildGuard(self.repo)
        cands = self._guard.guard(session, state, hist, cands)  # last: nothing escapes it
        return build_context(state, cands, budget, self.tokenizer, eviction_order, reserved,
                             truncate_system=truncate_system)

    def _last_prompt(self, compaction: Compaction) -> str | None:
        """Text of the newest user prompt a compaction summarized, if any."""
        for eid in reversed(compaction.source_event_ids):
            ev = self.repo.graph.event(eid)
            if ev.type == "UserPromptSubmitted":
                msg = self.projector.message(ev.causality.get("message_id", ""))
                return msg.text if msg is not None else str(ev.payload.get("text", ""))
        return None

    def _merge_segments(self, hist: History) -> list[Segment]:
        """A merged branch reaches the context as its checked summary, not its raw events."""
        out = []
        for i, (eid, ev, _msg) in enumerate(hist):
            if ev.type == "BranchMerged":
                cid = ev.causality.get("compaction_id", "")
                rec = self.repo.objects.get(cid) if cid else None
                text = rec.summary if isinstance(rec, Compaction) else str(ev.payload.get("summary", ""))
                out.append(Segment("summary", text=f"[Merged branch {ev.payload.get('branch', '')}]\n{text}",
                                   sources=(eid, *([cid] if cid else [])), order=i))
        return out
