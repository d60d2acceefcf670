"""The state projection layer (seed §3, §5 "State"): events in, AgentState out. Pure, no I/O.

Entry points for the integrator:

- `project(events, start=None, messages=lookup) -> AgentState`: fold `(event_id, Event)` pairs,
  oldest first. Resume from a snapshot by passing its state as `start` and only later events.
- `fold(state, event_id, event, messages=lookup) -> AgentState`: one step.
- `snapshot_value(state) -> dict` / `state_from_snapshot(value) -> AgentState | None`: the body
  of a cached "snapshot" object (`store.put("snapshot", snapshot_value(state))`).
- `state_diff(a, b) -> dict`: the sections that differ, for `ctx diff`.

`messages` is a function `message_id -> Message | None` (e.g. a store lookup); the fold uses it
only to read the text of user prompts, falling back to the event's `payload.text` preview.
"""

from ..lazyattrs import lazy_attributes

# Submodules load on first use: `ctx log` renders a tool call with `state.tools` alone and must
# not pay for the folds.
__getattr__, __dir__ = lazy_attributes(__name__, globals(), {
    **dict.fromkeys(("DIFF_SECTIONS", "state_diff"), ".diff"),
    **dict.fromkeys(("FOLDS", "fold", "no_messages", "project"), ".folds"),
    **dict.fromkeys(("PLAN_STATUSES", "STATE_FORMAT", "AgentState", "snapshot_value",
                     "state_from_snapshot"), ".model"),
})

__all__ = [
    "DIFF_SECTIONS", "FOLDS", "PLAN_STATUSES", "STATE_FORMAT", "AgentState", "fold",
    "no_messages", "project", "snapshot_value", "state_diff", "state_from_snapshot",
]
