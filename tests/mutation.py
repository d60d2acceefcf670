"""Mutation testing: how many deliberate one-line bugs in the core modules the tests catch.

    .venv/bin/pip install -e '.[dev,langgraph,mutation]'
    .venv/bin/python -m tests.mutation                 # every group below, one after another
    .venv/bin/python -m tests.mutation gc fsck         # some groups
    .venv/bin/python -m tests.mutation --list          # the groups, their files and tests
    .venv/bin/python -m tests.mutation --again gc      # after adding tests: re-run only the
                                                       # mutants that were not killed last time
    .venv/bin/python -m tests.mutation --report        # the table of the last runs
    .venv/bin/python -m tests.mutation --recheck tool-effects  # apply each survivor to the
                                                       # source and run the tests on it
    .venv/bin/python -m tests.mutation --recheck store --module ctxstore/store/pack.py
                                                       # only that module's survivors, with
                                                       # its own tests (RECHECK_TESTS)

For each group, a scratch copy of the repository is made in `.mutation/<group>/` and mutmut
(https://mutmut.readthedocs.io) mutates only that group's files and runs only that group's
tests — and of those, only the ones that execute the mutated function (mutmut's per-function
selection), in forked processes, `--max-children` at a time (default 2). At the end a table
gives, per module, the mutants and how many the tests killed; `.mutation/<group>/survivors.txt`
lists every mutant not killed as a diff of its function, and `verdicts.json` every verdict.
"no tests" mutants are in functions no test of the group executes; they count as not killed.

`--again` copies the current tests in and re-runs only the mutants not killed so far. mutmut
forgets every cached verdict when the group's test list changes (a new test file), so the
verdicts of earlier runs are kept in `verdicts.json` and merged: tests are only added between
runs, so a mutant killed once stays killed.

It is not part of CI (tens of minutes on 2 cores); docs/testing.md records the last run and
what each surviving mutant means.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutation"
COPY = ("ctxstore", "cli", "tests", "docs", "benchmarks", "pyproject.toml", "setup.py", "README.md")

def _in(package: str, *names: str) -> list[str]:
    """Module paths as mutmut sees them in the scratch copy: ctxstore/<package>/<name>."""
    return [f"ctxstore/{package}/{n}" for n in names]


def _source(module: str) -> Path:
    """The repository file a scratch-copy module path comes from (cli/ sits at the root)."""
    return ROOT / module.removeprefix("ctxstore/") if module.startswith("ctxstore/cli/") \
        else ROOT / module


#: group -> (modules to mutate, the tests that check them)
GROUPS: dict[str, tuple[list[str], list[str]]] = {
    "refs": (["ctxstore/refs/files.py", "ctxstore/refs/names.py", "ctxstore/refs/base.py"],
             ["tests/test_refs.py", "tests/test_refs_details.py", "tests/test_transaction.py",
              "tests/test_write_ordering.py"]),
    "store": (["ctxstore/store/pack.py", "ctxstore/store/packstore.py",
               "ctxstore/store/packwriter.py", "ctxstore/store/packindex.py",
               "ctxstore/store/packconsolidate.py", "ctxstore/store/bodyqueue.py",
               "ctxstore/store/writerlock.py"],
              ["tests/test_store_pack.py", "tests/test_store_partial_index.py",
               "tests/test_bulk_append.py", "tests/test_strictness.py",
               "tests/test_store_writers.py", "tests/test_index_prefix.py",
               "tests/test_index_lookup.py", "tests/test_pack_consolidate.py",
               "tests/test_packstore_details.py", "tests/test_pack_writer.py",
               "tests/test_pack_file.py",
               "tests/test_durability_crash.py", "tests/test_crash.py",
               "tests/test_batch_crash.py", "tests/test_manager_batch.py",
               "tests/test_concurrency.py", "tests/test_store_visibility.py"]),
    "gc": (["ctxstore/maintenance/gc.py", "ctxstore/store/repack.py", "ctxstore/store/gclock.py"],
           ["tests/test_gc.py", "tests/test_gc_details.py", "tests/test_gclock.py",
            "tests/test_cli_maintenance.py", "tests/test_gc_repack_rules.py",
            "tests/test_repack.py"]),
    "fsck": (["ctxstore/store/fsck.py", "ctxstore/maintenance/fsck.py"],
             ["tests/test_fsck_repo.py", "tests/test_fsck_parallel.py", "tests/test_fsck_oracle.py",
              "tests/test_fsck_index.py", "tests/test_fsck_batch.py", "tests/test_fsck_graph.py",
              "tests/test_store_pack.py"]),
    "transaction": (["ctxstore/repo/transaction.py", "ctxstore/repo/operations.py"],
                    ["tests/test_transaction.py", "tests/test_oplog_machine.py",
                     "tests/test_writer_contract.py", "tests/test_write_ordering.py",
                     "tests/test_transaction_details.py", "tests/test_bulk_append.py",
                     "tests/test_branch_append.py"]),
    "builder": (["ctxstore/context/builder.py"],
                ["tests/test_context_builder.py", "tests/test_invariants_context.py",
                 "tests/test_adapters.py", "tests/test_budget_fill.py",
                 "tests/test_context_candidates.py", "tests/test_builder_golden.py",
                 "tests/test_builder_edges.py"]),
    "compaction-checks": (["ctxstore/compaction/checks.py"],
                          ["tests/test_compaction.py", "tests/test_compaction_range.py",
                           "tests/test_compaction_checks.py"]),
    "tool-effects": (["ctxstore/state/effects.py", "ctxstore/state/tools.py"],
                     ["tests/test_tool_semantics.py", "tests/test_state_from_transcripts.py",
                      "tests/test_state_fold.py", "tests/test_tool_effects_rules.py"]),
    # -- issue 35: the modules users touch most ---------------------------------------------
    "state": (_in("state", "folds.py", "projector.py"),
              ["tests/test_state_fold.py", "tests/test_state_project.py",
               "tests/test_state_from_transcripts.py", "tests/test_projection_cache.py",
               "tests/test_open_calls.py", "tests/test_approvals.py",
               "tests/test_ctx29_item2_merge_carries_state.py", "tests/test_ctx29_item3_state_text.py",
               "tests/test_tool_semantics.py", "tests/test_cli_context.py"]),
    "context": (_in("context", "compile.py", "adapters.py"),
                ["tests/test_adapters.py", "tests/test_adapters_tools.py",
                 "tests/test_invariants_context.py",
                 "tests/test_context_current_request.py", "tests/test_context_compile_inputs.py",
                 "tests/test_compaction.py",
                 "tests/test_context_candidates.py", "tests/test_budget_fill.py",
                 "tests/test_cli_context.py", "tests/test_subagents.py",
                 "tests/test_ctx29_item1_compaction_rule.py", "tests/test_retrieval.py",
                 "tests/test_redaction.py"]),
    "importers-claude-code": (_in("importers", "claude_code.py", "claude_map.py",
                                  "claude_summary.py"),
                              ["tests/test_tokens_and_chain.py",
                               "tests/test_claude_code_rewind_place.py", "tests/test_idtable.py",
                               "tests/test_claude_index.py", "tests/test_import_extend.py",
                               "tests/test_ctx29_item5_slash_commands.py",
                               "tests/test_ctx29_item7_summary_files.py",
                               "tests/test_import_head.py", "tests/test_import_bad_input.py",
                               "tests/test_hostile_transcript.py", "tests/test_subagents.py",
                               "tests/test_state_from_transcripts.py", "tests/test_import_corpus.py"]),
    "importers-codex": (_in("importers", "codex.py"),
                        ["tests/test_ctx29_item4_codex_prompts.py", "tests/test_tokens_and_chain.py",
                         "tests/test_state_from_transcripts.py", "tests/test_import_bad_input.py",
                         "tests/test_ctx29_item6_session_tokens.py", "tests/test_import_corpus.py"]),
    "importers-pi": (_in("importers", "pi.py"),
                     ["tests/test_state_from_transcripts.py", "tests/test_tokens_and_chain.py",
                      "tests/test_import_bad_input.py", "tests/test_ctx29_item6_session_tokens.py",
                      "tests/test_import_corpus.py"]),
    **{f"importers-{h}": (_in("importers", f"{h}.py"), [f"tests/test_import_{h}.py"])
       for h in ("gemini", "qwen", "copilot", "opencode", "cursor", "goose", "aider", "cline")},
    "importers-common": (_in("importers", "common.py", "neutral.py", "detect.py", "records.py",
                             "idtable.py", "sqlitesource.py", "harnesses.py", "export.py"),
                         ["tests/test_export.py", "tests/test_records_reduce.py",
                          "tests/test_idtable.py", "tests/test_import_head.py",
                          "tests/test_import_bad_input.py", "tests/test_cli_import.py",
                          "tests/test_cli_import_exits.py", "tests/test_import_aider.py",
                          "tests/test_import_cline.py", "tests/test_import_gemini.py",
                          "tests/test_import_opencode.py", "tests/test_import_cursor.py",
                          "tests/test_import_goose.py"]),
    "importers-live": (_in("importers", "live.py", "follow.py")
                       + _in("integrations/claude_code", "hook.py", "fastpath.py", "seen.py",
                             "settings.py", "doctor.py"),
                       ["tests/test_import_follow.py", "tests/test_hooks_async.py",
                        "tests/test_claude_code_hooks.py", "tests/test_hooks_settings.py",
                        "tests/test_hostile_hook.py", "tests/test_claude_code_docs.py"]),
    "gitbridge": (_in("gitbridge", "credentials.py", "fetch.py", "localpush.py", "mirror.py",
                      "netenv.py", "push.py", "remotes.py", "sendset.py", "tracking.py",
                      "transport.py"),
                  ["tests/test_remote.py", "tests/test_remote_crash.py",
                   "tests/test_remote_credentials.py", "tests/test_remote_https.py",
                   "tests/test_remote_ssh.py", "tests/test_hostile_remote.py",
                   "tests/test_hostile_remote_manifest.py", "tests/test_push_redact.py",
                   "tests/test_clone_head.py"]),
    "workspace": (_in("workspace", "auto.py", "closure.py", "contain.py", "filediff.py",
                      "gitdb.py", "imported.py", "restore.py", "snapshot.py", "stored.py",
                      "trees.py"),
                  ["tests/test_workspace.py", "tests/test_hostile_restore.py",
                   "tests/test_restore_ignored_conflict.py", "tests/test_undo_restore.py",
                   "tests/test_init_git.py"]),
    "redaction": (_in("redaction", "detect.py", "policy.py", "purge.py", "pushmap.py",
                      "rewrite.py", "sensitivity.py", "views.py"),
                  ["tests/test_redaction.py", "tests/test_push_redact.py",
                   "tests/test_view_redaction.py"]),
    "memory": (_in("memory", "governance.py", "log.py", "review.py", "scopes.py"),
               ["tests/test_memory.py", "tests/test_hostile_memory.py", "tests/test_retrieval.py"]),
    "viewer": (_in("viewer", "checks.py", "export.py", "graph.py", "model.py", "page.py",
                   "server.py"),
               ["tests/test_viewer.py", "tests/test_viewer_title_escape.py",
                "tests/test_hostile_serve.py",
                "tests/test_view_redaction.py"]),
    "porcelain": (_in("porcelain", "branches.py", "compaction.py", "context.py", "demo.py",
                      "eventfilter.py", "history.py", "initialize.py", "inputs.py", "listing.py",
                      "oplog.py", "redact.py", "resume.py", "search.py", "session_meta.py",
                      "sessions.py", "transfer.py", "workspace.py"),
                  ["tests/test_cli_everyday.py", "tests/test_cli_history.py",
                   "tests/test_cli_reading.py", "tests/test_cli_session.py",
                   "tests/test_cli_sessions.py", "tests/test_cli_transfer.py",
                   "tests/test_cli_context.py", "tests/test_undo_output.py",
                   "tests/test_undo_restore.py", "tests/test_grep_json_exit.py",
                   "tests/test_search.py", "tests/test_oplog_machine.py"]),
    # cli/ is copied into the scratch copy's package as ctxstore/cli (see _fresh)
    "cli": (_in("cli", *[p.name for p in sorted((ROOT / "cli").glob("*.py"))
                         if p.name not in ("__init__.py", "__main__.py")]),
            [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tests").glob("test_cli_*.py"))]
            + ["tests/test_grep_json_exit.py", "tests/test_undo_output.py",
               "tests/test_public_errors.py", "tests/test_user_file_errors.py"]),
    "sdk": (_in("integrations/langgraph", "commit.py", "saver.py", "threads.py", "threadstore.py",
                "values.py")
            + _in("integrations/openai_agents", "items.py", "session.py")
            + _in("integrations/claude_agent_sdk", "store.py"),
            ["tests/test_langgraph.py", "tests/test_langgraph_close.py",
             "tests/test_langgraph_conformance.py", "tests/test_langgraph_delta.py",
             "tests/test_openai_agents.py", "tests/test_openai_agents_ported.py",
             "tests/test_claude_agent_sdk.py"]),
}

#: group -> tests left out of its mutmut runs: slow kill -9 tests whose checks other tests of the
#: group make at each step (a mutant that survives only for want of them counts as not killed).
#: Every mutant of a hot function (find, put) that survives runs all of the group's tests that
#: call it; these two alone were half of that time (17 s and 6 s of 47 s).
DESELECT: dict[str, list[str]] = {
    "store": ["tests/test_crash.py::test_kill_9_loses_nothing_flushed",
              "tests/test_store_partial_index.py::"
              "test_kill_9_at_random_times_with_frequent_partial_indexes"],
}

STATUS = re.compile(r"^\s*(?P<key>(?P<name>\S+)__mutmut_\d+): (?P<status>.+)$")


def _fresh(work: Path, modules: list[str], tests: list[str]) -> Path:
    """A scratch copy of the repository whose pyproject tells mutmut what to mutate and run."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for item in COPY:
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, work / item, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, work / item)
    # ctxstore.cli (cli/ in the repository) goes inside the copied package, so that it is
    # imported from the copy like the rest of ctxstore, never from the editable install
    shutil.copytree(ROOT / "cli", work / "ctxstore" / "cli", ignore=shutil.ignore_patterns("__pycache__"))
    with open(work / "pyproject.toml", "a", encoding="utf-8") as f:
        f.write(_config(modules, tests, DESELECT.get(work.name, [])))
    return work


def _config(modules: list[str], tests: list[str], deselect: list[str] = ()) -> str:
    def toml_list(xs):
        return "[" + ", ".join(f'"{x}"' for x in xs) + "]"

    skip = "".join(f', "--deselect", "{t}"' for t in deselect)

    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["ctxstore"]\n'
        f"only_mutate = {toml_list(modules)}\n"
        'also_copy = ["docs", "benchmarks", "setup.py", "README.md"]\n'
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        # no xdist/timeout plugins inside mutmut's forked runs; mutmut has its own timeouts
        # (tests.mutmut_workers: fork-server workers can record calls in the stats run)
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:timeout", '
        f'"-p", "tests.mutmut_workers"{skip}]\n'
        # a mutant that hangs (an endless loop) is stopped after 2 x 4 x (its tests' time + 1 s)
        # of CPU, not mutmut's default 2 x 15 x: the store group's hung mutants cost 4 min each
        "timeout_multiplier = 4.0\n"
    )


def _module_of(function: str, modules: list[str]) -> str:
    dotted = {m[:-3].replace("/", "."): m for m in modules}
    for prefix, path in dotted.items():
        if function.startswith(prefix + "."):
            return path
    return "?"


def _results(mutmut: list[str], work: Path) -> str:
    return subprocess.run([*mutmut, "results", "--all", "true"], cwd=work, capture_output=True,
                          text=True, check=True).stdout


def _statuses(mutmut: list[str], work: Path) -> dict[str, str]:
    """mutmut's verdict per mutant key."""
    return {m["key"]: m["status"] for m in map(STATUS.match, _results(mutmut, work).splitlines())
            if m}


def _verdicts(work: Path) -> dict[str, str]:
    """The verdicts of the group's runs so far (`--again` runs merged in), or {}."""
    path = work / "verdicts.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _tally(verdicts: dict[str, str], modules: list[str]) -> dict[str, Counter]:
    tally: dict[str, Counter] = {m: Counter() for m in modules}
    for key, status in verdicts.items():
        module = _module_of(key.split(".x_")[0].split(".xǁ")[0] + ".", modules)
        tally.setdefault(module, Counter())[status] += 1
    return tally


def _functions(path: Path) -> dict[str, str]:
    """Source of every function in a mutmut-trampolined module, by (Class.)name."""
    src = path.read_text(encoding="utf-8")
    lines = src.splitlines(keepends=True)  # once: ast.get_source_segment splits per call,
    out: dict[str, str] = {}               # minutes for a module of 1,000 mutants

    def visit(nodes, prefix):
        for n in nodes:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = [lines[n.lineno - 1][n.col_offset:], *lines[n.lineno:n.end_lineno]]
                out[prefix + n.name] = "".join(body).rstrip("\n")
            elif isinstance(n, ast.ClassDef):
                visit(n.body, prefix + n.name + ".")

    visit(ast.parse(src).body, "")
    return out


def _diffs(work: Path, keys: list[str], modules: list[str], verdicts: dict[str, str]) -> str:
    """Each mutant as a diff of its function against the original (what `mutmut show`
    prints, without starting one process per mutant)."""
    sources = {m: _functions(work / "mutants" / m) for m in modules}
    out = []
    for key in keys:
        dotted, _, name = key.rpartition(".")
        module = _module_of(key.split(".x_")[0].split(".xǁ")[0] + ".", modules)
        prefix = name.split("ǁ")[1] + "." if name.startswith("xǁ") else ""
        funcs = sources.get(module, {})
        mutant = funcs.get(prefix + name, "")
        orig = funcs.get(prefix + re.sub(r"__mutmut_\d+$", "__mutmut_orig", name), "")
        # both `def` lines carry mangled names: put the function's own name back
        real = re.sub(r"__mutmut_\d+$", "", name)
        real = real.split("ǁ")[-1] if "ǁ" in real else real.removeprefix("x_")
        unmangle = re.compile(r"def \S+?__mutmut_(orig|\d+)\(")
        a = [unmangle.sub(f"def {real}(", line) for line in orig.splitlines()]
        b = [unmangle.sub(f"def {real}(", line) for line in mutant.splitlines()]
        diff = difflib.unified_diff(a, b, module, f"{module} ({dotted}.{name})", lineterm="", n=1)
        out.append(f"# {key}: {verdicts[key]}\n" + "\n".join(diff) + "\n")
    return "\n".join(out)


def run_group(name: str, children: int, again: bool = False) -> dict[str, Counter]:
    modules, tests = GROUPS[name]
    work = WORK / name
    mutmut = [sys.executable, "-m", "mutmut"]
    start = time.monotonic()
    previous = _verdicts(work) if again else {}
    log = open(work / "run.log" if again else _fresh(work, modules, tests) / "run.log", "a",
               encoding="utf-8")
    names: list[str] = []
    if again:  # the current tests, then only what was not killed
        changed = [m for m in modules if not (work / m).exists()
                   or (work / m).read_bytes() != _source(m).read_bytes()]
        if changed:
            raise SystemExit(f"{name}: {', '.join(changed)} changed since the last run; "
                             f"run the group without --again")
        previous = previous or _statuses(mutmut, work)
        for base in (work, work / "mutants"):
            shutil.rmtree(base / "tests", ignore_errors=True)
            shutil.copytree(ROOT / "tests", base / "tests",
                            ignore=shutil.ignore_patterns("__pycache__"))
            (base / "pyproject.toml").write_text(
                (ROOT / "pyproject.toml").read_text(encoding="utf-8")
                + _config(modules, tests, DESELECT.get(name, [])),
                encoding="utf-8")
        names = [k for k, status in previous.items() if status != "killed"]
        if not names:
            print(f"{name}: nothing survived", file=sys.stderr)
    if names or not again:
        subprocess.run([*mutmut, "run", "--max-children", str(children), *names], cwd=work,
                       stdout=log, stderr=subprocess.STDOUT, check=False)
    # A changed test list makes mutmut forget every verdict, so a mutant an earlier run
    # killed (and this one did not re-run) reads "not checked": keep the earlier verdict.
    # Tests are only ever added between runs, so what they killed stays killed.
    # (and a mutant killed once, also by --recheck, stays killed)
    verdicts = {k: "killed" if previous.get(k) == "killed"
                else previous.get(k, s) if s == "not checked" else s
                for k, s in _statuses(mutmut, work).items()}
    (work / "verdicts.json").write_text(json.dumps(verdicts, indent=0, sort_keys=True),
                                        encoding="utf-8")
    survivors = [k for k, s in verdicts.items() if s != "killed"]
    (work / "survivors.txt").write_text(_diffs(work, survivors, modules, verdicts),
                                        encoding="utf-8")
    print(f"{name}: {len(verdicts)} mutants in {time.monotonic() - start:.0f} s", file=sys.stderr)
    return _tally(verdicts, modules)


#: --recheck gives each applied mutant this long; one that hangs counts as not killed.
RECHECK_SECONDS = 120

#: The tests --recheck runs per applied mutant, where fewer than the group's (one fork each);
#: per module where the group's modules have tests of their own.
RECHECK_TESTS = {"store": {"ctxstore/store/packindex.py": ["tests/test_index_lookup.py",
                                                           "tests/test_index_prefix.py"],
                           "ctxstore/store/packwriter.py": ["tests/test_pack_writer.py",
                                                            "tests/test_store_writers.py"],
                           "ctxstore/store/pack.py": ["tests/test_pack_file.py",
                                                      "tests/test_store_writers.py"],
                           "ctxstore/store/packconsolidate.py": ["tests/test_pack_consolidate.py"],
                           "ctxstore/store/packstore.py": ["tests/test_packstore_details.py",
                                                           "tests/test_store_writers.py"]},
                 "tool-effects": ["tests/test_tool_semantics.py", "tests/test_tool_effects_rules.py",
                                  "tests/test_state_fold.py"]}


def _run_tests_on_source(work: Path, tests: list[str]) -> int:
    """pytest's exit code for `tests` run in a fork that imports ctxstore afresh from `work`."""
    pid = os.fork()
    if pid == 0:  # child: forget every module of the project, import the mutated source
        code = 3
        try:
            for mod in [m for m in sys.modules if m.split(".")[0] in ("ctxstore", "tests")]:
                del sys.modules[mod]
            sys.path.insert(0, str(work))
            os.chdir(work)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            import signal

            import pytest

            signal.alarm(RECHECK_SECONDS)  # a mutant that hangs: this fork dies, not killed
            code = int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                                    "-p", "no:timeout", "--rootdir", str(work), *tests]))
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def recheck(name: str, only: list[str] | None = None) -> dict[str, Counter]:
    """Apply each mutant the last run did not kill to the scratch copy's source (`mutmut
    apply`) and run the group's tests on that source directly, one mutant at a time.

    mutmut switches a mutant on when its function is called; code that runs only while a module
    is imported — the built-in tool table of state/tools.py, built by factories such as
    `_write(...)` at import — was already built before any mutant was switched on, so its
    mutants survive mutmut's run whatever the tests check. Applied to the source they are
    live. Mutants killed this way are listed in `.mutation/<group>/applied.json`."""
    import pytest  # noqa: F401  (imported once here, not in every fork)
    from mutmut.mutation.diff_apply import apply_mutant  # `mutmut apply`, without a process

    modules, tests = GROUPS[name]
    tests = RECHECK_TESTS.get(name, tests)
    work = WORK / name
    verdicts = _verdicts(work)
    originals = {m: (work / m).read_bytes() for m in modules}
    shutil.rmtree(work / "tests", ignore_errors=True)  # the current tests (only ever added to)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    applied = []
    here = os.getcwd()
    os.chdir(work)  # mutmut finds the mutants from its working directory
    try:
        for key, status in sorted(verdicts.items()):
            if status in ("killed", "timeout"):  # a hung mutant would hang this fork too
                continue
            module = _module_of(key.split(".x_")[0].split(".xǁ")[0] + ".", modules)
            if only and module not in only:
                continue
            these = tests[module] if isinstance(tests, dict) else tests
            apply_mutant(key)
            try:
                code = _run_tests_on_source(work, these)
            finally:
                for m, data in originals.items():
                    (work / m).write_bytes(data)
            if code in (1, 2):  # a test failed, or the module no longer imports
                verdicts[key] = "killed"
                applied.append(key)
    finally:
        os.chdir(here)
        for m, data in originals.items():
            (work / m).write_bytes(data)
    (work / "verdicts.json").write_text(json.dumps(verdicts, indent=0, sort_keys=True),
                                        encoding="utf-8")
    (work / "applied.json").write_text(json.dumps(sorted(applied), indent=0), encoding="utf-8")
    survivors = [k for k, s in verdicts.items() if s != "killed"]
    (work / "survivors.txt").write_text(_diffs(work, survivors, modules, verdicts),
                                        encoding="utf-8")
    print(f"{name}: {len(applied)} more mutants killed when applied to the source",
          file=sys.stderr)
    return _tally(verdicts, modules)


def table(results: dict[str, dict[str, Counter]]) -> str:
    rows = ["| group | module | mutants | checked | killed | survived | no tests | timeout | killed % of checked |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for group, tally in results.items():
        for module, c in tally.items():
            total = sum(c.values())
            checked = c["killed"] + c["survived"] + c["no tests"] + c["timeout"] + c["suspicious"]
            rate = f"{100 * c['killed'] / checked:.1f}" if checked else "n/a"
            rows.append(f"| {group} | {module} | {total} | {checked} | {c['killed']} | "
                        f"{c['survived']} | {c['no tests']} | {c['timeout']} | {rate} |")
    return "\n".join(rows)


def report(name: str) -> dict[str, Counter]:
    """The tally of a group's last (possibly unfinished) run, from its scratch copy."""
    modules, _ = GROUPS[name]
    work = WORK / name
    verdicts = _statuses([sys.executable, "-m", "mutmut"], work)
    earlier = _verdicts(work)
    return _tally({k: earlier.get(k, s) if s == "not checked" else s for k, s in verdicts.items()},
                  modules)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__.split("\n")[0])
    ap.add_argument("groups", nargs="*", help=f"groups to run (default all: {', '.join(GROUPS)})")
    ap.add_argument("--max-children", type=int, default=2, help="mutants tested at once")
    ap.add_argument("--list", action="store_true", help="show the groups and exit")
    ap.add_argument("--report", action="store_true",
                    help="only print the table of the last runs (finished or not)")
    ap.add_argument("--again", action="store_true",
                    help="reuse the last run's scratch copy: current tests, survivors only")
    ap.add_argument("--recheck", action="store_true",
                    help="after a run: apply each survivor to the source and run the tests "
                         "(mutants of code that runs only at import, which mutmut cannot see)")
    ap.add_argument("--module", action="append", metavar="PATH",
                    help="with --recheck: only the survivors of this module (repeatable)")
    args = ap.parse_args(argv)
    # the scratch copies sit in .mutation/<group>/: without this, tests.corpus would look for
    # the corpus beside them and every real-data test of a group would skip
    from tests.corpus import corpus_root

    os.environ.setdefault("CTXSTORE_CORPUS", str(corpus_root()))
    if args.list:
        for name, (modules, tests) in GROUPS.items():
            print(f"{name}: {' '.join(modules)}\n    tests: {' '.join(tests)}")
            if DESELECT.get(name):
                print(f"    left out: {' '.join(DESELECT[name])}")
        return 0
    unknown = [g for g in args.groups if g not in GROUPS]
    if unknown:
        ap.error(f"unknown group(s) {', '.join(unknown)}; known: {', '.join(GROUPS)}")
    if args.report:
        print(table({g: report(g) for g in args.groups or GROUPS if (WORK / g / "mutants").is_dir()}))
        return 0
    if args.recheck:
        print(table({g: recheck(g, args.module) for g in args.groups or GROUPS
                     if (WORK / g / "verdicts.json").is_file()}))
        return 0
    results = {g: run_group(g, args.max_children, args.again) for g in args.groups or GROUPS}
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
