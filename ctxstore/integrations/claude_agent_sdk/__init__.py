"""The Claude Agent SDK's SessionStore over a ctxstore repository (the `[claude-agent-sdk]`
extra).

    from claude_agent_sdk import ClaudeAgentOptions
    from ctxstore.integrations.claude_agent_sdk import CtxstoreSessionStore
    options = ClaudeAgentOptions(session_store=CtxstoreSessionStore("path/to/project"))

Sessions are captured as they run, with the events `ctx import` writes for the same
transcript. See docs/claude-code.md.
"""

from .store import CtxstoreSessionStore, key_of

__all__ = ["CtxstoreSessionStore", "key_of"]
