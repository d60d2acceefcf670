"""`ctx resume` and `ctx export --format HARNESS`: a session converted for another harness.

`resume` writes the conversion where the harness looks for sessions (its environment
variables respected: CLAUDE_CONFIG_DIR, CODEX_HOME, PI_CODING_AGENT_DIR, GEMINI_CLI_HOME),
registers it where the harness needs that, and returns the harness's own command to continue.
Files are published without ever replacing one: written to a temporary file beside the
target, fsync'd, hard-linked to the final name (which fails if the name exists), and the
directory fsync'd. A file that already holds exactly these bytes (the same session, branch
and event converted before) is left as it is and reported as such.

Before writing, the harness's installed version (`BINARY --version` on PATH) is compared with
the newest version whose reader was run on our output: a newer one is refused (exit 10)
unless `force`, since its format may have moved on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO

from ..convert import ConversionReport, Transcript, UnverifiedVersion, read_transcript, target
from ..errors import InvalidInput, IOFailure
from ..importers.export import resolve_target
from ..lockfile import fsync_dir
from ..repo import Repository

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def _version_tuple(text: str) -> tuple[int, ...] | None:
    m = _VERSION.search(text)
    return tuple(int(x) for x in m.groups()) if m else None


def installed_version(module: ModuleType, env: Mapping[str, str]) -> str:
    """The version the harness binary on PATH reports ("" if none is on PATH or it says none)."""
    binary = shutil.which(module.BINARY, path=env.get("PATH"))
    if binary is None:
        return ""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=20,
                              env=dict(env), check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = _VERSION.search(done.stdout + " " + done.stderr)
    return m.group(0) if m else ""


def check_version(module: ModuleType, env: Mapping[str, str], force: bool) -> dict[str, Any]:
    """{"installed", "verified", "newer"}; UnverifiedVersion when newer and not `force`."""
    have = installed_version(module, env)
    newest = max(module.VERIFIED_VERSIONS, key=lambda v: _version_tuple(v) or ())
    newer = bool(have) and (_version_tuple(have) or ()) > (_version_tuple(newest) or ())
    if newer and not force:
        raise UnverifiedVersion(
            f"{module.BINARY} {have} is installed; ctxstore's {module.NAME} format was verified "
            f"up to {newest}: refusing to write a session it may not read (--force writes it anyway)")
    return {"installed": have, "verified": newest, "newer": newer}


def transcript_for(repo: Repository, rev_or_session: str, branch: str | None = None) -> Transcript:
    """The transcript of the session REV names (a session id, branch or event)."""
    sid, _tips = resolve_target(repo, rev_or_session)
    return read_transcript(repo, sid, branch)


def convert(transcript: Transcript, harness: str) -> tuple[bytes, ConversionReport, ModuleType]:
    module = target(harness)
    buf = io.BytesIO()
    report = module.write(transcript, buf)
    return buf.getvalue(), report, module


def export_as(repo: Repository, rev_or_session: str, harness: str, out: BinaryIO,
              branch: str | None = None) -> ConversionReport:
    """Write the conversion to OUT (`ctx export --format HARNESS` of a foreign session)."""
    data, report, _module = convert(transcript_for(repo, rev_or_session, branch), harness)
    out.write(data)
    if report.subagents and hasattr(_module, "companions"):
        report.notes.append(f"{report.subagents} subagent transcript(s) are written beside the "
                            f"session by `ctx resume`, not into this one file")
    return report


def publish_new(path: Path, data: bytes) -> bool:
    """Write DATA as PATH without ever replacing a file: True if written, False if PATH already
    holds exactly DATA; InvalidInput if it holds anything else."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        if path.is_file() and path.read_bytes() == data:
            return False
        raise InvalidInput(f"{path} already exists and differs from this conversion; "
                           f"nothing was overwritten")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with open(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # fails if PATH appeared meanwhile: never a replace
        except FileExistsError:
            raise InvalidInput(f"{path} appeared while writing; nothing was overwritten") from None
    except OSError as exc:
        raise IOFailure(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    fsync_dir(path.parent)
    return True


def _target_cwd(transcript: Transcript, cwd: str | None) -> str:
    """Where the user continues: CWD if given, else the session's directory when it exists
    here, else the current directory (Claude Code files sessions by project directory)."""
    if cwd:
        return os.path.realpath(cwd)  # what the harness's own getcwd() will say
    if transcript.cwd and os.path.isdir(transcript.cwd):
        return os.path.realpath(transcript.cwd)
    return os.getcwd()


def resume(repo: Repository, rev_or_session: str, harness: str, *, branch: str | None = None,
           dry_run: bool = False, force: bool = False, env: Mapping[str, str] | None = None,
           cwd: str | None = None) -> dict[str, Any]:
    """Convert the session for HARNESS and write it where HARNESS looks; see the module doc.

    Returns {"harness", "session", "branch", "path", "written", "files", "command",
    "version", "registered", "report"}; with `dry_run` nothing is written."""
    env = dict(os.environ if env is None else env)
    transcript = transcript_for(repo, rev_or_session, branch)
    transcript = dataclasses.replace(transcript, cwd=_target_cwd(transcript, cwd))
    module = target(harness)
    version = check_version(module, env, force)
    data, report, module = convert(transcript, harness)
    path = Path(module.default_path(transcript, env))
    extra = module.companions(transcript, report, path) if hasattr(module, "companions") else []
    result: dict[str, Any] = {
        "harness": harness, "session": transcript.session, "branch": transcript.branch,
        "path": str(path), "written": False, "files": [str(path.parent / rel) for rel, _ in extra],
        "command": module.resume_command(transcript, path), "version": version,
        "registered": [], "report": report.to_dict(), "dry_run": dry_run,
    }
    if dry_run:
        return result
    result["written"] = publish_new(path, data)
    for rel, blob in extra:
        publish_new(path.parent / rel, blob)
    result["registered"] = module.register(path, transcript, env)
    return result
