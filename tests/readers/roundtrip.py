"""The loop the pi and Gemini resume tests share: every sampled corpus session of a harness is
converted, read back by the target's own reader, and imported back into ctxstore."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from ctxstore.convert import Transcript, read_transcript
from ctxstore.repo import Repository
from tests.resumecases import built_session, corpus_repo, reimport

#: (transcript, scratch dir) -> (written file, what the reader returned, transcript as written)
Convert = Callable[[Transcript, Path], tuple[Path, Any, Transcript]]


def write_where_it_looks(module: ModuleType, t: Transcript, tmp: Path,
                         env: dict[str, str]) -> tuple[Path, Transcript]:
    """T, as resumed in TMP/project, written by MODULE where its harness looks under ENV (the
    harness's home variable pointing into TMP): (file, transcript as written)."""
    project = tmp / "project"
    project.mkdir(parents=True, exist_ok=True)
    t = dataclasses.replace(t, cwd=str(project))
    path = module.default_path(t, env)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        module.write(t, out)
    return path, t


def check_corpus_harness(harness: str, tmp: Path, convert: Convert,
                         check: Callable[[Transcript, Any], None],
                         check_back: Callable[[Transcript, Transcript], None]) -> int:
    """Runs CHECK on the reader's view and CHECK_BACK on the re-import of every session of
    HARNESS (sampled: tests/resumecases.py); returns how many sessions were checked."""
    repo, sids = corpus_repo(harness)
    for n, sid in enumerate(sids):
        t = read_transcript(repo, sid)
        path, got, _written = convert(t, tmp / f"s{n}")
        check(t, got)
        check_back(t, reimport(repo, path, sid))
    return len(sids)


def built(tmp: Path, convert: Convert, check: Callable[[Transcript, Any], None],
          prompt: str = "Start the task") -> tuple[Repository, str, Transcript, Path, Any, Transcript]:
    """The built session (rewind branch, compaction, subagent, 2 MB result; its first prompt
    PROMPT) converted and CHECKed: (repo, session, transcript, file, reader's view, transcript
    as written)."""
    repo, sid = built_session(tmp, prompt=prompt)
    t = read_transcript(repo, sid)
    path, got, written = convert(t, tmp / "converted")
    check(t, got)
    return repo, sid, t, path, got, written
