"""build_context: fit candidate segments into a token budget, explaining every decision.

A PURE function of (state, candidates, budget, tokenizer, eviction order, reserved output): no
I/O, no clock, no randomness, so the same inputs give a byte-identical bundle
(`codec.pack_value(bundle.to_dict())`, invariant 6). The algorithm, in one pass per step:

1. Count every candidate's text with the tokenizer (cached, so repeated builds are cheap).
   Candidates sharing a `tool_call_id` in the conversation form one unit: if any is P0, all are,
   and they are kept or dropped together (a tool call is never separated from its result).
2. If the P0 tier alone exceeds `max_tokens - reserved_output`, raise BudgetTooSmall.
3. While over budget, walk the eviction order, one kind per step. Within a kind the lowest
   `order` (oldest / least relevant) goes first. Trimmable kinds are first cut to a preview,
   then dropped. Kind "turn" evicts whole turns: every non-P0 conversation segment of the
   oldest group at once, so the newest turns are kept.
4. If still over budget (a custom order that leaves kinds out), drop the remaining non-P0
   segments, lowest tier first (P3 before P1), oldest first.

Work is O(n log n) in the number of candidates: one sort per kind and one for model order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import fields

from ..errors import BudgetTooSmall
from .bundle import ContextBundle
from .segments import (
    KIND_TIERS,
    STATE_KIND_RANK,
    TIER_NAMES,
    TRIMMABLE_KINDS,
    Segment,
)
from .tokenizer import Tokenizer, default_tokenizer

#: Seed §6: verbose tool output, then old chatter, then P2 (artifacts, memories, facts, ...),
#: then whole old turns, then the P1 working state; goal and open questions go last of all.
DEFAULT_EVICTION_ORDER: tuple[str, ...] = (
    "tool_output", "chatter", "artifact", "memory", "fact", "decision", "preference", "turn",
    "summary", "diff", "files", "error", "constraints", "plan", "open_questions", "goal",
)

#: A trimmed segment keeps this many characters of its text.
PREVIEW_CHARS = 400

P0_LABELS = {"system": "system prompt", "developer": "developer instructions",
             "tool_schema": "tool schema", "current_request": "current request",
             "pending_tool_pair": "incomplete tool pair"}
_SECTION0_RANK = {"system": 0, "developer": 1, "tool_schema": 2}


def _check_order(eviction_order: Sequence[str]) -> tuple[str, ...]:
    out = tuple(eviction_order)
    for kind in out:
        if kind not in KIND_TIERS:
            raise ValueError(f"unknown kind {kind!r} in eviction order")
        if KIND_TIERS[kind] == 0:
            raise ValueError(f"kind {kind!r} is P0 and can never be evicted")
    return out


def preview(text: str, tokens: int) -> str:
    """The trimmed form of a segment's text: its head and a note of what was cut."""
    return f"{text[:PREVIEW_CHARS].rstrip()} … [trimmed from {tokens} tokens; full text in sources]"


class _Fit:
    """Mutable working set of one build (never escapes `build_context`)."""

    def __init__(self, cands: list[Segment], tok: Tokenizer, available: int) -> None:
        self.cands = cands
        self.tok = tok
        self.available = available
        self.tokens = [tok.count(c.text) for c in cands]
        self.tier = [c.tier for c in cands]
        self.units: dict[str, list[int]] = defaultdict(list)
        for i, c in enumerate(cands):
            if c.tool_call_id and c.section == 2:
                self.units[c.tool_call_id].append(i)
        for members in self.units.values():
            if len(members) > 1 and any(self.tier[i] == 0 for i in members):
                for i in members:
                    self.tier[i] = 0
        self.total = sum(self.tokens)
        self.p0 = sum(t for t, tier in zip(self.tokens, self.tier, strict=True) if tier == 0)
        self.dropped: dict[int, str] = {}
        self.trimmed: dict[int, tuple[str, int, str]] = {}

    def over(self) -> bool:
        return self.total > self.available

    def cost(self, i: int) -> int:
        return self.trimmed[i][1] if i in self.trimmed else self.tokens[i]

    def drop(self, i: int, reason: str) -> None:
        if i in self.dropped or self.tier[i] == 0:
            return
        self.dropped[i] = reason
        self.total -= self.cost(i)
        tcid = self.cands[i].tool_call_id
        for j in self.units.get(tcid, ()) if self.cands[i].section == 2 else ():
            if j != i:
                self.drop(j, f"dropped: with its tool pair ({tcid})")

    def trim(self, i: int, reason: str) -> None:
        if i in self.dropped or i in self.trimmed or self.tier[i] == 0:
            return
        text = preview(self.cands[i].text, self.tokens[i])
        n = self.tok.count(text)
        if n < self.tokens[i]:
            self.trimmed[i] = (text, n, reason)
            self.total -= self.tokens[i] - n


def _evict(fit: _Fit, order: tuple[str, ...]) -> None:
    by_kind: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(fit.cands):
        if fit.tier[i] != 0:
            by_kind[c.kind].append(i)
    for idxs in by_kind.values():
        idxs.sort(key=lambda i: (fit.cands[i].order, i))
    for step, kind in enumerate(order, 1):
        if not fit.over():
            return
        idxs = by_kind.get(kind, ())
        if kind == "turn":
            _evict_turns(fit, idxs, step)
            continue
        if kind in TRIMMABLE_KINDS:
            why = f"trimmed: over budget, cut to a preview by order step {step} ({kind})"
            for i in idxs:
                fit.trim(i, why)
                if not fit.over():
                    return
        why = f"dropped: over budget, evicted by order step {step} ({kind})"
        for i in idxs:
            fit.drop(i, why)
            if not fit.over():
                return
    if fit.over():  # kinds the order leaves out: lowest tier first, oldest first
        rest = sorted((i for i in range(len(fit.cands)) if fit.tier[i] != 0 and i not in fit.dropped),
                      key=lambda i: (-fit.tier[i], fit.cands[i].order, i))
        for i in rest:
            c = fit.cands[i]
            fit.drop(i, f"dropped: over budget, fallback eviction ({TIER_NAMES[fit.tier[i]]} "
                        f"{c.kind} is not in the eviction order)")
            if not fit.over():
                return


def _evict_turns(fit: _Fit, turn_idxs: Iterable[int], step: int) -> None:
    """Drop whole turns, oldest first: every non-P0 conversation segment of the group."""
    members: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(fit.cands):
        if c.section == 2 and fit.tier[i] != 0:
            members[c.group or f"#{i}"].append(i)
    groups: list[str] = []
    seen: set[str] = set()
    for i in turn_idxs:  # already sorted oldest first
        g = fit.cands[i].group or f"#{i}"
        if g not in seen:
            seen.add(g)
            groups.append(g)
    why = f"dropped: over budget, whole turn evicted by order step {step} (turn)"
    for g in groups:
        for i in members[g]:
            fit.drop(i, why)
        if not fit.over():
            return


_FIELDS = tuple(f.name for f in fields(Segment))


def _decided(c: Segment, **changes) -> Segment:
    """`dataclasses.replace` without re-running validation: `c` is already a valid Segment and
    the changes are builder-made values. Three times cheaper, which matters at 1000s of them."""
    seg = object.__new__(Segment)
    for name in _FIELDS:
        object.__setattr__(seg, name, changes[name] if name in changes else getattr(c, name))
    return seg


def _model_key(c: Segment, i: int) -> tuple:
    sec = c.section
    rank = _SECTION0_RANK.get(c.kind, 0) if sec == 0 else STATE_KIND_RANK.get(c.kind, 0) if sec == 1 else 0
    return (sec, rank, c.order, i)


def build_context(state, candidates: Iterable[Segment], budget: int,
                  tokenizer: Tokenizer | None = None,
                  eviction_order: Sequence[str] = DEFAULT_EVICTION_ORDER,
                  reserved_output: int = 0) -> ContextBundle:
    """Compile `candidates` into a ContextBundle that fits `budget - reserved_output` tokens.

    `state` (an AgentState or None) only stamps the bundle with the state it was built from.
    Raises BudgetTooSmall if the P0 segments alone do not fit; ValueError for a bad order.
    """
    order = _check_order(eviction_order)
    tok = tokenizer if tokenizer is not None else default_tokenizer()
    cands = list(candidates)
    available = budget - reserved_output
    fit = _Fit(cands, tok, available)
    if fit.p0 > available:
        raise BudgetTooSmall(
            f"budget too small: the P0 tier needs {fit.p0} tokens but only {available} are "
            f"available ({budget} max - {reserved_output} reserved for output, {tok.name})",
            needed=fit.p0, available=available, max_tokens=budget,
            reserved_output=reserved_output, tokenizer=tok.name)
    _evict(fit, order)

    out: list[Segment] = []
    by_tier: dict[str, dict[str, int]] = {}
    by_kind: dict[str, dict[str, int]] = {}
    used = 0
    for i in sorted(range(len(cands)), key=lambda i: _model_key(cands[i], i)):
        c, tier = cands[i], fit.tier[i]
        if i in fit.dropped:
            seg = _decided(c, tier=tier, text="", messages=(), tokens=fit.tokens[i], kept=False,
                          trimmed=False, reason=fit.dropped[i])
        elif i in fit.trimmed:
            text, n, why = fit.trimmed[i]
            seg = _decided(c, tier=tier, text=text, tokens=n, kept=True, trimmed=True, reason=why)
        else:
            why = (f"P0: {P0_LABELS.get(c.kind, c.kind)}, never dropped" if tier == 0
                   else f"kept: {TIER_NAMES[tier]} {c.kind} within budget")
            seg = _decided(c, tier=tier, tokens=fit.tokens[i], kept=True, trimmed=False, reason=why)
        out.append(seg)
        if seg.kept:
            used += seg.tokens
        for table, key in ((by_tier, TIER_NAMES[tier]), (by_kind, c.kind)):
            row = table.setdefault(key, {"kept": 0, "dropped": 0, "segments": 0})
            row["kept" if seg.kept else "dropped"] += seg.tokens
            row["segments"] += 1
    return ContextBundle(
        segments=tuple(out), used_tokens=used, max_tokens=budget, reserved_output=reserved_output,
        tokenizer=tok.name, eviction_order=order, usage={"by_tier": by_tier, "by_kind": by_kind},
        state_event=getattr(state, "source_event", "") or "",
        state_version=getattr(state, "version", 0) or 0)
