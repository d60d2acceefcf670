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
   then dropped. Kind "turn" evicts turns oldest first: a whole turn while dropping it still
   leaves the bundle over budget; the turn that would overshoot (often the current one, a
   prompt and a hundred tool pairs) is cut instead: its request and its newest complete tool
   pairs stay, its older pairs go, oldest first, and the request's reason names what went.
4. If still over budget (a custom order that leaves kinds out), drop the remaining non-P0
   segments, lowest tier first (P3 before P1), oldest first.
5. Refill: eviction works in units (a pair, a turn), so it can overshoot. Dropped segments are
   offered back newest drop first, in full or, for trimmable and tool-output kinds, as a
   preview, while they fit. When the material offered exceeds the budget, this keeps the
   bundle at >= 85% of the available tokens (benchmarks/bench_context.py measures it).

A P0 tier larger than the budget raises BudgetTooSmall naming `truncate_system`
(`ctx context --truncate-system`), which cuts the largest system/developer messages to fit,
each with a marker saying how much was cut.

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
            if any(self.tier[i] == 0 for i in members):
                for i in members:
                    self.tier[i] = 0
        self.total = sum(self.tokens)
        self.p0 = sum(self.tokens[i] for i, tier in enumerate(self.tier) if tier == 0)
        self.dropped: dict[int, str] = {}
        self.trimmed: dict[int, tuple[str, int, str]] = {}

        self.drop_seq: list[int] = []  # drop order, for the refill
        self.phase: str  # the eviction step dropping now (set by _evict): "turn" drops by age
        self.phase_of: dict[int, str] = {}
        self.notes: dict[int, str] = {}  # kept segments whose reason needs more words
        self.cuts: dict[int, list[int]] = {}  # a cut turn's request -> what the cut dropped

    def over(self) -> bool:
        return self.total > self.available

    def unit(self, i: int) -> list[int]:
        tcid = self.cands[i].tool_call_id
        if tcid and self.cands[i].section == 2:
            return self.units.get(tcid) or [i]
        return [i]

    def cost(self, i: int) -> int:
        return self.trimmed[i][1] if i in self.trimmed else self.tokens[i]

    def drop(self, i: int, reason: str) -> None:
        if i in self.dropped or self.tier[i] == 0:
            return
        self.dropped[i] = reason
        self.drop_seq.append(i)
        self.phase_of[i] = self.phase
        self.total -= self.cost(i)
        tcid = self.cands[i].tool_call_id
        for j in self.units.get(tcid, ()) if self.cands[i].section == 2 else ():
            if j != i:
                self.drop(j, f"dropped: with its tool pair ({tcid})")

    def trim(self, i: int, reason: str) -> None:
        """Cut segment i to a preview if that makes it smaller. Called by `_evict`'s step of
        its kind (trimmable, so section 1: never P0, never in a unit), which an eviction order
        may name twice."""
        if i in self.dropped:  # an earlier step of the same kind dropped it
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
        fit.phase = kind
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
    fit.phase = "fallback"
    if fit.over():  # kinds the order leaves out: lowest tier first, oldest first (drop skips P0)
        rest = sorted((i for i in range(len(fit.cands)) if i not in fit.dropped),
                      key=lambda i: (-fit.tier[i], fit.cands[i].order, i))
        for i in rest:
            c = fit.cands[i]
            fit.drop(i, f"dropped: over budget, fallback eviction ({TIER_NAMES[fit.tier[i]]} "
                        f"{c.kind} is not in the eviction order)")
            if not fit.over():
                return


def _evict_turns(fit: _Fit, turn_idxs: Iterable[int], step: int) -> None:
    """Drop turns oldest first: whole while that still leaves the bundle over budget; the turn
    that would overshoot loses only its older pairs, keeping its request and newest pairs."""
    members: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(fit.cands):
        if c.section == 2 and fit.tier[i] != 0:
            members[c.group or f"#{i}"].append(i)
    groups = dict.fromkeys(fit.cands[i].group or f"#{i}" for i in turn_idxs)  # oldest first
    for c in fit.cands:  # then the current turn's pairs (of any conversation kind)
        if c.kind == "current_request":
            groups.setdefault(c.group)  # a group with no members is a no-op below
    why = f"dropped: over budget, whole turn evicted by order step {step} (turn)"
    for g in groups:
        live = [i for i in sorted(members[g], key=lambda i: (fit.cands[i].order, i))
                if i not in fit.dropped]
        if fit.total - sum(fit.cost(i) for i in live) > fit.available:
            for i in live:
                fit.drop(i, why)
            continue
        _cut_turn(fit, g, live, step)  # dropping all of `live` fits, so the cut always does
        return


def _cut_turn(fit: _Fit, group: str, live: list[int], step: int) -> None:
    """Drop the older segments of one turn, oldest first, until the bundle fits; its request
    (the prompt that opened it) goes last."""
    request = next((i for i in live if fit.cands[i].sources[:1] == (group,)), None)
    req_idx = next((i for i, c in enumerate(fit.cands) if c.group == group
                    and c.kind == "current_request"), request)
    rest = [i for i in live if i != request]
    start = len(fit.drop_seq)
    why = (f"dropped: over budget, an older part of turn {group[:12]} evicted by order step "
           f"{step} (turn); its request and newest pairs are kept")
    for i in rest:
        if not fit.over():
            break
        fit.drop(i, why)  # a no-op for the other half of a pair dropped already
    if fit.over() and request is not None:
        fit.drop(request, why)
    if all(i in fit.dropped for i in live):
        for i in live:
            fit.dropped[i] = f"dropped: over budget, whole turn evicted by order step {step} (turn)"
        return
    if req_idx is not None:  # the request's reason says what went, once the refill is done
        fit.cuts[req_idx] = fit.drop_seq[start:]


def _note_cuts(fit: _Fit) -> None:
    """Tell in a cut turn's request what its cut dropped and the refill did not bring back
    (with both halves of a pair given as two segments)."""
    for req_idx, cut in fit.cuts.items():
        gone = [i for i in cut if i in fit.dropped]
        if gone:
            pairs = len({fit.cands[i].tool_call_id for i in gone} - {""})
            fit.notes[req_idx] = (f"its turn was cut to fit: {len(gone)} older segment(s) "
                                  f"({pairs} tool pair(s), "
                                  f"{sum(fit.tokens[i] for i in gone):,} tokens) dropped, "
                                  f"the newest kept")


def _refill(fit: _Fit) -> None:
    """Offer dropped segments back, newest drop first, whole or as a preview, while they fit.

    Priority stays strict: a segment that does not fit stops the refill, so nothing evicted
    earlier (less important) comes back in its place — except inside the turn step, which
    drops by age, not importance: an older pair may come back where a newer, bigger one
    did not fit."""
    for i in reversed(fit.drop_seq):
        if i not in fit.dropped:  # refilled already, with its unit
            continue
        unit = [j for j in fit.unit(i) if j in fit.dropped]
        room = fit.available - fit.total
        full = sum(fit.cost(j) for j in unit)
        if full <= room:
            for j in unit:
                del fit.dropped[j]
                fit.notes[j] = "kept: refilled, it fits in the room left after eviction"
            fit.total += full
            continue
        c = fit.cands[i]
        if len(unit) == 1 and (c.kind in TRIMMABLE_KINDS or c.kind == "tool_output") \
                and i not in fit.trimmed:
            text = preview(c.text, fit.tokens[i])
            n = fit.tok.count(text)
            if n <= room:  # so n < tokens: the whole (tokens) did not fit the room
                del fit.dropped[i]
                fit.trimmed[i] = (text, n, "trimmed: refilled as a preview, the whole segment "
                                           "does not fit")
                fit.total += n
                continue
        if fit.phase_of.get(i) != "turn":
            return


_SYSTEM_KINDS = ("system", "developer")


def _system_tokens(fit: _Fit) -> int:
    return sum(fit.tokens[i] for i, c in enumerate(fit.cands) if c.kind in _SYSTEM_KINDS)


def _p0_breakdown(fit: _Fit) -> str:
    per: dict[str, int] = defaultdict(int)
    for i, c in enumerate(fit.cands):
        if fit.tier[i] == 0:
            per[P0_LABELS.get(c.kind, c.kind)] += fit.tokens[i]
    return ", ".join(f"{k} {v:,}" for k, v in sorted(per.items(), key=lambda kv: -kv[1]))


def _truncate_system(fit: _Fit) -> None:
    """Cut the largest system/developer segments (head kept, marker appended) until P0 fits."""
    idxs = sorted((i for i, c in enumerate(fit.cands) if c.kind in _SYSTEM_KINDS),
                  key=lambda i: -fit.tokens[i])
    for i in idxs:
        excess = fit.p0 - fit.available
        if excess <= 0:
            return
        n = fit.tokens[i]
        keep = max(0, n - excess - 32)  # room for the marker
        text = fit.cands[i].text
        while True:
            cut = text[:max(0, len(text) * keep // max(n, 1))].rstrip()
            new = (f"{cut}\n… [truncated to fit the budget: {n:,} tokens cut to fewer; "
                   f"full text in sources]")
            m = fit.tok.count(new)
            if m <= max(n - excess, 0) or keep == 0:
                break
            keep = max(0, keep - max(8, (m - (n - excess))))
        fit.trimmed[i] = (new, m, f"P0: {P0_LABELS.get(fit.cands[i].kind)}, truncated to fit "
                                  f"the budget from {n:,} tokens (truncate_system)")
        fit.p0 -= n - m
        fit.total -= n - m


_FIELDS = tuple(f.name for f in fields(Segment))


def _decided(c: Segment, **changes) -> Segment:
    """`dataclasses.replace` without re-running validation: `c` is already a valid Segment and
    the changes are builder-made values. Three times cheaper, which matters at 1000s of them."""
    seg = object.__new__(Segment)
    for name in _FIELDS:
        object.__setattr__(seg, name, changes[name] if name in changes else getattr(c, name))
    return seg


#: Rank inside a section: instructions in _SECTION0_RANK order, the state in STATE_KIND_RANK
#: order; conversation kinds share rank 0 (their `order`, the event order, decides).
_MODEL_RANK = {k: 0 for k in KIND_TIERS} | _SECTION0_RANK | STATE_KIND_RANK


def _model_key(c: Segment) -> tuple:
    return (c.section, _MODEL_RANK[c.kind], c.order)  # a stable sort: ties keep candidate order


def build_context(state, candidates: Iterable[Segment], budget: int,
                  tokenizer: Tokenizer | None = None,
                  eviction_order: Sequence[str] = DEFAULT_EVICTION_ORDER,
                  reserved_output: int = 0, *, truncate_system: bool = False) -> ContextBundle:
    """Compile `candidates` into a ContextBundle that fits `budget - reserved_output` tokens.

    `state` (an AgentState or None) only stamps the bundle with the state it was built from.
    Raises BudgetTooSmall if the P0 segments alone do not fit (with `truncate_system`, the
    largest system/developer messages are first cut to fit, each with a marker); ValueError
    for a bad order.
    """
    order = _check_order(eviction_order)
    tok = tokenizer if tokenizer is not None else default_tokenizer()
    cands = list(candidates)
    available = budget - reserved_output
    fit = _Fit(cands, tok, available)
    if truncate_system:  # a no-op when P0 fits
        _truncate_system(fit)
    if fit.p0 > available:
        big = _p0_breakdown(fit)
        hint = ("; pass truncate_system=True (ctx context --truncate-system) to cut system and "
                "developer messages to fit, with a marker" if _system_tokens(fit) and not
                truncate_system else "")
        raise BudgetTooSmall(
            f"budget too small: the P0 tier needs {fit.p0:,} tokens ({big}) but only "
            f"{available:,} are available ({budget:,} max - {reserved_output:,} reserved for "
            f"output, {tok.name}){hint}",
            needed=fit.p0, available=available, max_tokens=budget,
            reserved_output=reserved_output, tokenizer=tok.name)
    _evict(fit, order)
    _refill(fit)
    _note_cuts(fit)

    out: list[Segment] = []
    by_tier: dict[str, dict[str, int]] = {}
    by_kind: dict[str, dict[str, int]] = {}
    used = 0
    for i in sorted(range(len(cands)), key=lambda i: _model_key(cands[i])):
        c, tier = cands[i], fit.tier[i]
        if i in fit.dropped:
            decision = dict(text="", messages=(), tokens=fit.tokens[i], kept=False,
                            trimmed=False, reason=fit.dropped[i])
        elif i in fit.trimmed:
            text, n, why = fit.trimmed[i]
            decision = dict(text=text, tokens=n, kept=True, trimmed=True, reason=why)
        else:
            why = (f"P0: {P0_LABELS.get(c.kind, c.kind)}, never dropped" if tier == 0
                   else f"kept: {TIER_NAMES[tier]} {c.kind} within budget")
            if i in fit.notes:
                why = f"{why}; {fit.notes[i]}" if tier == 0 or fit.notes[i][:5] != "kept:" \
                    else fit.notes[i]
            decision = dict(tokens=fit.tokens[i], kept=True, trimmed=False, reason=why)
        seg = _decided(c, tier=tier, **decision)
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
