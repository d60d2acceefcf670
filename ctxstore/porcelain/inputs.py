"""Files the user names on the command line: `open_input` lives in ctxstore/userfiles.py (one
mapping of OSError for every user file: NotFound for a missing input, IOFailure otherwise) and is
re-exported here for the porcelain and the CLI."""

from __future__ import annotations

from ..userfiles import open_input, replace_user_file, user_file_error

__all__ = ["open_input", "replace_user_file", "user_file_error"]
