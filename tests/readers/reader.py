"""Runs a harness's own session reader (tests/readers/*.mjs, on the npm packages pinned in
tests/readers/package.json) with node and returns what it printed, as JSON.

`.ci/run` installs the packages (`npm ci --prefix tests/readers`). Without node or the
packages a test that needs a reader is skipped with the command that installs them, except
under `CI=true`, where it fails: an external check that quietly skips would let CI say green
about a conversion nobody read back.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.corpus import in_ci

HERE = Path(__file__).resolve().parent
#: reader script -> the package directory it needs under node_modules
PACKAGES = {
    "pi_reader.mjs": "@mariozechner/pi-coding-agent",
    "gemini_reader.mjs": "@google/gemini-cli-core",
}
TIMEOUT = 120


def installed_version(script: str) -> str:
    """The version of the package SCRIPT reads with ("" when it is not installed)."""
    meta = HERE / "node_modules" / PACKAGES[script] / "package.json"
    if not meta.is_file():
        return ""
    return str(json.loads(meta.read_text(encoding="utf-8")).get("version", ""))


def pinned_version(script: str) -> str:
    """The version tests/readers/package.json pins for SCRIPT's package."""
    deps = json.loads((HERE / "package.json").read_text(encoding="utf-8"))["dependencies"]
    return str(deps[PACKAGES[script]])


def require(script: str) -> str:
    """node's path, once SCRIPT's package is installed at the pinned version; otherwise a
    skip (a failure under CI=true) naming what is missing."""
    node = shutil.which("node")
    have = installed_version(script)
    problem = ""
    if node is None:
        problem = "node is not on PATH"
    elif not have:
        problem = f"{PACKAGES[script]} is not installed"
    elif have != pinned_version(script):
        problem = f"{PACKAGES[script]} {have} is installed, {pinned_version(script)} is pinned"
    if problem:
        msg = f"{problem}: run `npm ci --prefix tests/readers` to check conversions with it"
        if in_ci():
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    return node  # type: ignore[return-value]


def run(script: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """The JSON SCRIPT prints for ARGS (extra environment ENV); a non-zero exit fails the test
    with the reader's stderr."""
    node = require(script)
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run([node, str(HERE / script), *args], capture_output=True, text=True,
                          env=full_env, timeout=TIMEOUT, cwd=HERE, check=False)
    if proc.returncode != 0:
        pytest.fail(f"{script} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-4000:]}",
                    pytrace=False)
    return json.loads(proc.stdout)
