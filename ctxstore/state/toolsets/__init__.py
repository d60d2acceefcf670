"""The tool descriptions of the harnesses added after the first three, one module each.

Each module calls `register_tools` (tools.py) at import with its harness's documented tool
names; tools.py imports this package last, once its helpers exist. Rules come from each
harness's tool schemas (its source or docs), never from one transcript.
"""

from . import aider, cline, copilot, cursor, gemini, goose, opencode, qwen  # noqa: F401
