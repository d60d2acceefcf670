"""`ctx mcp`: ctxstore as an MCP server, so an agent can ask its own history (docs/mcp.md).

    history.py    the tools and resources as methods returning JSON values (no protocol)
    scrub.py      the redaction policy over everything returned
    proposals.py  memory_propose: a proposal queued for `ctx memory review`, never a write
    server.py     the binding to the official `mcp` SDK (extra `mcp`), served over stdio
    install.py    `ctx mcp install claude-code|codex|gemini`: each client's config, merged

Only server.py imports the SDK, so `ctx mcp install` and the tests of history.py need nothing
beyond the core.
"""
