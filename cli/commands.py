"""The table of `ctx` commands: name -> the module that defines it and its one-line help.

`ctx` imports a command's module only when that command runs (main.py's `CtxGroup`), and
`ctx --help` lists the commands from this table, so neither pays for importing every command
family (the importers, compaction, transfer, the tokenizer). A command module still registers
its commands on `cli` with `@cli.command`; this table only says where to find them.

Adding a command: define it in `cli/cmd_*.py` as usual and add one line here, in the place
`ctx --help` should list it. tests/test_cli_lazy.py fails, printing the missing line, when a
command is not in the table or its help here differs from its docstring's first sentence;
`python -m ctxstore.cli.entries` prints the entry of every command as defined now.
"""

from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    module: str  #: the module under ctxstore.cli that registers the command
    help: str  #: `cmd.get_short_help_str()` with no length limit
    hidden: bool = False
    #: further modules that add subcommands to this group (`reflog expire` lives with gc)
    also: tuple[str, ...] = ()

    def modules(self) -> tuple[str, ...]:
        return (self.module, *self.also)


COMMANDS: dict[str, Entry] = {
    "init": Entry("cmd_store", "Create a store in DIRECTORY/.ctx (default: the current directory)."),
    "cat-object": Entry("cmd_store", "Print any object (by id, unique prefix, or revision) as "
                                     "JSON: {id, type, content}."),
    "new": Entry("cmd_sessions", "Start a session; HEAD moves to its `main` branch."),
    "sessions": Entry("cmd_sessions", "List sessions, newest first, subagents under the session "
                                      "that spawned them."),
    "append": Entry("cmd_sessions", "Append an event of EVENT_TYPE to the current branch (or many "
                                    "with --batch)."),
    "status": Entry("cmd_sessions", "Where HEAD is: session, branch, head event, event count."),
    "session": Entry("cmd_session", "Rename, tag, remove or restore a whole session."),
    "log": Entry("cmd_history", "Show events newest first from REV (default HEAD)."),
    "show": Entry("cmd_history", "Show an event (REV, default HEAD) or any object by id or unique "
                                 "prefix."),
    "diff": Entry("cmd_history", "Compare two revisions from their merge base: events only in A, "
                                 "only in B, and how the projected state differs (goal, plan, "
                                 "files, facts, errors, ...)."),
    "memory": Entry("cmd_memory", "Governed memory: add, list, show, edit, forget, search, and "
                                  "review compaction's candidates."),
    "grep": Entry("cmd_history", "Search messages, tool calls (names and arguments), tool results "
                                 "and artifacts of the history from REV (default HEAD), or of "
                                 "every session with --all."),
    "search": Entry("cmd_search", "Ranked full-text search of every session, branch, compaction "
                                  "summary, memory and artifact text, from an index (SQLite "
                                  "FTS5, BM25)."),
    "reflog": Entry("cmd_history", "Every move of a ref, newest first (`ctx reflog [show] [REF]`);"
                                   " REF@{N} names entry N.", also=('cmd_maintenance',)),
    "branch": Entry("cmd_branches", "List branches of the current session, create NAME at REV, or "
                                    "delete NAME with -d."),
    "fork": Entry("cmd_branches", "Create branch NAME (at HEAD or --at REV) and switch to it; "
                                  "nothing else moves."),
    "checkout": Entry("cmd_branches", "Switch HEAD to branch REV, to a session's `main` branch "
                                      "(REV a session id or unique prefix, as `ctx sessions` lists"
                                      " them), or detach it at any event."),
    "reset": Entry("cmd_branches", "Roll the current branch back (or forward) to REV."),
    "state": Entry("cmd_context", "The working state projected from events at REV (default HEAD): "
                                  "goal, plan, constraints, facts, decisions, files, errors, open "
                                  "questions."),
    "context": Entry("cmd_context", "What the model would see at REV under a token budget, and "
                                    "why."),
    "trace": Entry("cmd_context", "The reasoning trace at REV: goal, assumptions, decisions, "
                                  "evidence, actions, validation."),
    "stats": Entry("cmd_context", "Tokens spent by the session, and compaction, tool and "
                                  "context-build counters along REV's history."),
    "artifact": Entry("cmd_context", "Large evidence stored whole, outside the prompt."),
    "cat": Entry("cmd_context", "Write the raw bytes of an artifact's content (or a blob) to "
                                "stdout."),
    "compact": Entry("cmd_compact", "Summarize old events of a branch (default: HEAD's) into a "
                                    "checked compaction record."),
    "merge": Entry("cmd_compact", "Merge BRANCH's conclusions into the current branch: a merge "
                                  "event (second parent = BRANCH's tip) holding a checked summary "
                                  "of what BRANCH did and found, not its raw events."),
    "import": Entry("cmd_import", "Import agent sessions (or ctxstore JSONL) from files or "
                                  "folders."),
    "export": Entry("cmd_import", "Write a session (REV may be a session id: every branch) back in "
                                  "its harness's format, or one history as ctxstore JSONL."),
    "resume": Entry("cmd_resume", "Write SESSION, converted, where HARNESS looks for sessions, "
                                  "and print its command to continue."),
    "snapshot": Entry("cmd_workspace", "Record the files of PATH (default: the directory holding"
                                       " .ctx) as a git tree in .ctx/workspace.git and append a "
                                       "WorkspaceSnapshot event to HEAD's branch."),
    "restore": Entry("cmd_workspace", "Put the files back as the snapshot at REV had them (REV "
                                      "itself, or the newest snapshot on REV's history), "
                                      "optionally only PATHS (relative to the root)."),
    "hooks": Entry("cmd_hooks", "Install or remove the hooks that capture Claude Code sessions "
                                "as they run."),
    "hook": Entry("cmd_hooks", "Handle one Claude Code hook call (the hook JSON on stdin); always"
                               " exits 0."),
    "mcp": Entry("cmd_mcp", "Serve this store to MCP clients (Claude Code, Codex, Gemini CLI, "
                            "...) over stdio."),
    "pack": Entry("cmd_transfer", "Write the named branches or sessions (default: HEAD's session),"
                                  " and everything they reach, to one self-describing, checksummed"
                                  " FILE; or inspect one with --verify / --list."),
    "unpack": Entry("cmd_transfer", "Import a pack: everything is verified before anything becomes"
                                    " visible; refs are created or fast-forwarded by "
                                    "compare-and-swap (a non-fast-forward is refused unless "
                                    "--force)."),
    "remote": Entry("cmd_remote", "List, add or remove the git remotes sessions are pushed to "
                                  "and fetched from."),
    "push": Entry("cmd_remote", "Send sessions (default: HEAD's; all their branches and their "
                                "title) to a git remote."),
    "fetch": Entry("cmd_remote", "Download a remote's sessions into remote-tracking refs; no "
                                 "local branch moves."),
    "pull": Entry("cmd_remote", "Fetch, then create missing local branches and fast-forward those"
                                " behind the remote."),
    "clone": Entry("cmd_remote", "Create a store in DIRECTORY with remote `origin` at URL and "
                                 "every session it holds."),
    "gc": Entry("cmd_maintenance", "Expire reflogs, keep everything reachable from refs, HEAD, "
                                   "reflogs and the operations of the last 90 days (what `ctx "
                                   "undo` needs), rewrite the live objects into a new pack and "
                                   "only then delete the old packs."),
    "repack": Entry("cmd_repack", "Retrain the zstd dictionary on a sample of the objects stored "
                                  "now and recompress every pack with it into one new pack; "
                                  "nothing is dropped (`ctx gc` drops the unreachable)."),
    "fsck": Entry("cmd_maintenance", "Verify every stored object (re-hash, decode, canonical form,"
                                     " index <-> pack) and that refs and reflogs name existing "
                                     "objects."),
    "reflog-expire": Entry("cmd_maintenance", "Prune old reflog entries (all reflogs, or the named"
                                              " full ref names such as HEAD or "
                                              "refs/sessions/SESSION/BRANCH), so gc can remove "
                                              "what only they kept alive.", hidden=True),
    "redact": Entry("cmd_redact", "Report the secrets in REV's session (default: HEAD's) by "
                                  "detector, or rewrite its history without them with --purge."),
    "op": Entry("cmd_op", "The operation log: every command that moved refs is one operation, "
                          "newest first."),
    "undo": Entry("cmd_op", "Revert the newest operation's ref moves, as a new operation: run it "
                            "again to redo."),
    "view": Entry("cmd_view", "See sessions in a browser: the branch graph, turns with tool calls "
                              "paired with their results, compactions with the exact range they "
                              "replaced, recorded context bundles (\"what the model saw\"), the "
                              "projected state at any event, token usage over time; or two "
                              "branches side by side from their merge base (REV given as A..B)."),
    "demo": Entry("cmd_demo", "Run a scripted coding-agent session (the seed's agent fixing a "
                              "failing test) through the public API, then show the log graph, the "
                              "state and the context composition."),
}


def entry_line(name: str, cmd) -> str:
    """The table line for a real command (what tests/test_cli_lazy.py asks for)."""
    module = cmd.callback.__module__.rsplit(".", 1)[-1] if cmd.callback else "?"
    old = COMMANDS.get(name)
    extra = (", hidden=True" if cmd.hidden else "") + (f", also={old.also!r}" if old and old.also
                                                       else "")
    return f'    "{name}": Entry("{module}", {cmd.get_short_help_str(10**6)!r}{extra}),'
