"""A LangGraph checkpointer over a ctxstore repository (the optional `[langgraph]` extra).

    from ctxstore.integrations.langgraph import CtxstoreSaver
    saver = CtxstoreSaver("path/to/store")
    graph = builder.compile(checkpointer=saver)

Threads appear as sessions and checkpoints as events, so `ctx log`, `ctx diff` and `ctx fork`
work on them. See docs/langgraph.md.
"""

from .saver import CtxstoreSaver

__all__ = ["CtxstoreSaver"]
