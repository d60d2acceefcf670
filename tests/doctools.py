"""Reading the fenced code blocks of a docs page, for the tests that run a page's examples."""

from __future__ import annotations

import re
from pathlib import Path


def code_blocks(doc: Path, lang: str) -> list[str]:
    """The bodies of DOC's ```LANG fenced blocks, in order."""
    return re.findall(rf"```{lang}\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
