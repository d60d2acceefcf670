"""The repository names no machine: no absolute path of any machine in a tracked file (tests,
modules, benchmarks, docs), and every test module that reads the real-session corpus goes
through tests/corpus.py's `corpus` fixture or `require_corpus()` (so it can never skip quietly)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ABSOLUTE = re.compile(r"(?<![\w.~:/-])(/[A-Za-z][\w.-]*(?:/[\w.@-]+)+)")
#: System directories every machine has; a path there names no particular machine.
SYSTEM = {"etc", "dev", "proc", "sys", "tmp", "usr", "bin", "sbin", "lib", "var", "opt", "run"}


def _names_this_machine(path: str) -> bool:
    """An absolute path whose first two components exist here, outside the system directories
    (the shared corpus folder, a home directory): a path of this machine, which no other machine
    has. Made-up paths in test transcripts (`/Users/me/proj`, `/work/app`) are data, not places."""
    parts = path.strip("/").split("/")
    return parts[0] not in SYSTEM and Path("/", *parts[:2]).exists()


def _tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout (an sdist): every file under the root
        return [p for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts
                and ".git" not in p.parts]
    return [ROOT / line for line in out.stdout.splitlines()]


def test_no_absolute_path_of_a_machine():
    found = []
    for path in _tracked():
        if path.suffix not in (".py", ".md", ".toml", ".cfg", ".txt", ".json", "") or not path.is_file():
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if any(_names_this_machine(m) for m in ABSOLUTE.findall(line)):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert found == []


def test_the_check_would_see_a_path_of_this_machine():
    # a directory of this machine outside the system directories: the checkout, or else (CI
    # clones under /tmp, where the check rightly sees no machine) a folder in the home directory
    places = [ROOT, *sorted(d for d in Path.home().iterdir() if d.is_dir())]
    here = next(str(d) for d in places
                if len(d.parts) > 2 and d.parts[1] not in SYSTEM)
    assert any(_names_this_machine(m) for m in ABSOLUTE.findall(f'CORPUS = Path("{here}/x")'))
    assert not any(_names_this_machine(m) for m in ABSOLUTE.findall('cwd = "/Users/me/proj"'))


def test_real_data_tests_use_the_corpus_fixture():
    offenders = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name in ("test_repo_hygiene.py", "test_corpus_location.py"):
            continue
        reads = "corpus_root(" in text or re.search(r"shared.{0,12}corpus", text)
        guarded = 'usefixtures("corpus")' in text or "require_corpus(" in text
        if reads and not guarded:
            offenders.append(path.name)
    assert offenders == []


def test_no_store_is_tracked():
    # A .ctx committed at the root makes every clone a store: `ctx demo` (the README's first
    # command) then records into the checkout and leaves untracked files, and any `ctx` run in
    # the checkout finds that store instead of saying there is none.
    tracked = [p.relative_to(ROOT).as_posix() for p in _tracked() if p.is_relative_to(ROOT / ".ctx")]
    assert tracked == []
    ignored = subprocess.run(["git", "check-ignore", "-q", ".ctx/config.json"], cwd=ROOT)
    assert ignored.returncode in (0, 128)  # ignored; 128: not a git checkout (an sdist)
