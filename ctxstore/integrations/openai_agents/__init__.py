"""An OpenAI Agents SDK session store over a ctxstore repository (the optional
`[openai-agents]` extra).

    from ctxstore.integrations.openai_agents import CtxstoreSession
    session = CtxstoreSession("user-42", "path/to/project")
    result = await Runner.run(agent, "Hi", session=session)

Each SDK session is a ctxstore session and each item an event, so `ctx log`, `ctx state`,
`ctx context` and `ctx undo` work on them. See docs/openai-agents.md.
"""

from .session import BranchError, CtxstoreSession, session_ids

__all__ = ["BranchError", "CtxstoreSession", "session_ids"]
