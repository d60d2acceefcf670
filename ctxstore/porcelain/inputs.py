"""Files the user names on the command line, opened with the errors the CLI documents.

A file that does not exist is NotFound (exit 3, like any other thing the user named that does
not exist); one that exists but cannot be read is IOFailure (exit 16); a directory where a file
is wanted is InvalidInput (exit 10).
"""

from __future__ import annotations

import os
from typing import IO, Any

from ..errors import InvalidInput, IOFailure, NotFound


def open_input(path: str | os.PathLike, mode: str = "rb", **kwargs: Any) -> IO:
    """`open(path, mode)` for reading a file the user named."""
    try:
        return open(path, mode, **kwargs)
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(f"no such file: {os.fspath(path)}") from None
    except IsADirectoryError:
        raise InvalidInput(f"{os.fspath(path)} is a directory, not a file") from None
    except OSError as exc:
        raise IOFailure(f"cannot read {os.fspath(path)}: {exc.strerror or exc}") from None

