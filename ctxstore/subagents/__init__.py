"""Subagents through the Context Manager (seed §9: "branches isolate exploration; subagents
isolate context").

A parent spawns a child session that starts with only what was passed (the task, chosen
artifacts and memories); the child finishes with a checked result — summary, evidence refs,
artifacts, risks, next steps — appended to the parent. The parent's context sees that result
and its refs, never the child's transcript. Imported subagent sessions (Claude Code's Task /
Agent calls) get the same view: the parent's call and its result, linked to the child session.

`runtime` writes (through the repository transaction); `view` turns the events into context
segments. ContextManager.spawn / .finish are the front door.
"""

from __future__ import annotations

SPAWNED = "subagent.Spawned"  # on the parent: the task and what was passed
MEMORY_PASSED = "subagent.MemoryPassed"  # on the child: one memory it may use
FINISHED = "subagent.Finished"  # on the child: its result (the same payload as RESULT)
RESULT = "subagent.Result"  # on the parent: the child's checked result
