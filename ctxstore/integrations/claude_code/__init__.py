"""Claude Code hooks: `ctx hooks install claude-code` and `ctx hook claude-code` (no extra:
the hook reads Claude Code's transcript, it does not import Claude Code).

settings.py merges our entries into Claude Code's settings.json and removes exactly them;
hook.py handles one hook call, importing the transcript from where the last call stopped.
See docs/claude-code.md.
"""
