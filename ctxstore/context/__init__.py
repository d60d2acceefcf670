"""The context compiler (seed §6): state + history -> candidate segments -> budgeted bundle ->
provider payload. Pure, no I/O; the integrating ContextManager reads the repository and calls:

    state = ctxstore.state.project(events, start=snapshot_state, messages=lookup)
    cands = candidates_from_history(state, [(event_id, event, message_or_None), ...],
                                    system_prompt=..., tools=[...], summary=...)
    cands += [Segment("memory", text=..., sources=(memory_id,)), ...]   # optional extras
    bundle = build_context(state, cands, budget=max_tokens, reserved_output=reserved)
    store.put("bundle", bundle.to_dict())
    payload = to_openai(bundle)   # or to_anthropic(bundle)

`build_context` raises ctxstore.errors.BudgetTooSmall when the P0 tier does not fit.
"""

from .adapters import system_text, to_anthropic, to_openai
from .builder import DEFAULT_EVICTION_ORDER, build_context, preview
from .bundle import BUNDLE_FORMAT, ContextBundle
from .candidates import BIG_OUTPUT_TOKENS, PENDING_TEXT, RECENT_TURNS, candidates_from_history
from .segments import KIND_SECTIONS, KIND_TIERS, KINDS, TRIMMABLE_KINDS, Segment
from .state_segments import state_segments
from .tokenizer import (
    CachedTokenizer,
    EstimateTokenizer,
    TiktokenTokenizer,
    Tokenizer,
    default_tokenizer,
    exact_tokenizer,
)

__all__ = [
    "BIG_OUTPUT_TOKENS", "BUNDLE_FORMAT", "DEFAULT_EVICTION_ORDER", "KINDS", "KIND_SECTIONS",
    "KIND_TIERS", "PENDING_TEXT", "RECENT_TURNS", "TRIMMABLE_KINDS", "CachedTokenizer",
    "ContextBundle", "EstimateTokenizer", "Segment", "TiktokenTokenizer", "Tokenizer",
    "build_context", "candidates_from_history", "default_tokenizer", "exact_tokenizer", "preview",
    "state_segments", "system_text", "to_anthropic", "to_openai",
]
