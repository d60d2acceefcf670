"""Cline / Roo Code task folders: the corpus task and hand-made ones for what it lacks (the API
history in both tool forms, file tools, commands, denials, errors, the focus chain)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ctxstore.importers import cline, detect, harnesses
from tests.clitools import Ctx
from tests.corpus import require_corpus
from tests.hostiletools import record_opens
from tests.oracles import cline as oracle

ENV = ("<environment_details>\n# VSCode Visible Files\nindex.html\n\n"
       "# Current Working Directory (/home/u/site) Files\nindex.html\n</environment_details>")


def say(ts: int, kind: str, text: str | dict = "", **kw) -> dict:
    return {"ts": ts, "type": "say", "say": kind,
            "text": text if isinstance(text, str) else json.dumps(text), **kw}


def ask(ts: int, kind: str, text: str | dict = "", **kw) -> dict:
    return {"ts": ts, "type": "ask", "ask": kind,
            "text": text if isinstance(text, str) else json.dumps(text), **kw}


def req(ts: int, tin: int, tout: int, cw: int | None = None, cr: int | None = None,
        kind: str = "api_req_started") -> dict:
    info = {"request": "<task>…</task>", "tokensIn": tin, "tokensOut": tout, "cost": 0.01}
    if cw is not None:
        info["cacheWrites"] = cw
    if cr is not None:
        info["cacheReads"] = cr
    return say(ts, kind, info)


def text(t: str) -> dict:
    return {"type": "text", "text": t}


T0 = 1740470400000

XML_API = [
    {"role": "user", "content": [text("<task>\nAdd a footer to index.html\n</task>"), text(ENV)]},
    {"role": "assistant", "content": [text(
        "<thinking>Read it first.</thinking>\n\n<read_file>\n<path>index.html</path>\n"
        "<task_progress>\n- [ ] Read index.html\n- [ ] Add the footer\n</task_progress>\n"
        "</read_file>")]},
    {"role": "user", "content": [text("[read_file for 'index.html'] Result:"),
                                 text("<html><body></body></html>"), text(ENV)]},
    {"role": "assistant", "content": [text(
        "Now the footer.\n\n<replace_in_file>\n<path>index.html</path>\n<diff>\n"
        "------- SEARCH\n</main>\n=======\n<footer>hi</footer>\n+++++++ REPLACE\n</diff>\n"
        "<task_progress>\n- [x] Read index.html\n- [ ] Add the footer\n</task_progress>\n"
        "</replace_in_file>")]},
    {"role": "user", "content": [
        text("[replace_in_file for 'index.html'] Result:"),
        text("The tool execution failed with the following error:\n<error>\nThe SEARCH block "
             "does not match\n</error>"), text(ENV)]},
    {"role": "assistant", "content": [text(
        "<write_to_file>\n<path>index.html</path>\n<content>\n<html><body>"
        "<footer>hi</footer></body></html>\n</content>\n</write_to_file>")]},
    {"role": "user", "content": [text("[write_to_file for 'index.html'] Result:\nThe content was "
                                      "successfully saved to index.html."), text(ENV)]},
    {"role": "assistant", "content": [text(
        "<write_to_file>\n<path>secret.txt</path>\n<content>x</content>\n</write_to_file>")]},
    {"role": "user", "content": [
        text("[write_to_file for 'secret.txt'] Result:"), text("The user denied this operation."),
        text("The user provided the following feedback:\n<feedback>\nnot that file\n</feedback>"),
        text(ENV)]},
    {"role": "assistant", "content": [text(
        "<attempt_completion>\n<result>\nDone.\n</result>\n</attempt_completion>")]},
    {"role": "user", "content": [text("[attempt_completion] Result:\nDone."),
                                 text("The user has provided feedback on the results. Consider "
                                      "their input to continue the task, and then attempt "
                                      "completion again."),
                                 text("<feedback>\nalso make it blue\n</feedback>"), text(ENV)]},
    {"role": "user", "content": [text("<feedback>\nand bold\n</feedback>"), text(ENV)]},
]
XML_UI = [
    say(T0, "task", "Add a footer to index.html"),
    req(T0 + 1, 100, 20, 10, 5),
    say(T0 + 2, "text", "Read it first."),
    ask(T0 + 3, "tool", {"tool": "readFile", "path": "index.html"}),
    say(T0 + 4, "api_req_started", {"request": "old style: the tokens come when it finishes"}),
    say(T0 + 5, "api_req_finished", {"tokensIn": 7, "tokensOut": 3}),
    say(T0 + 6, "user_feedback", "also make it blue"),
    say(T0 + 7, "deleted_api_reqs", {"tokensIn": 50, "tokensOut": 5, "cacheWrites": 1,
                                     "cacheReads": 2, "cost": 0.1}),
    say(T0 + 8, "subagent_usage", {"source": "subagents", "tokensIn": 9, "tokensOut": 1,
                                   "cacheWrites": 0, "cacheReads": 0, "cost": 0}),
    say(T0 + 9, "checkpoint_created", "", lastCheckpointHash="abc"),
]

NATIVE_API = [
    {"role": "user", "content": [text("<task>\nRun the tests\n</task>"), text(ENV)], "ts": T0},
    {"role": "assistant", "ts": T0 + 1, "id": "msg_1",
     "modelInfo": {"modelId": "claude-sonnet-4", "providerId": "anthropic", "mode": "act"},
     "metrics": {"tokens": {"prompt": 1000, "completion": 50, "cached": 800}, "cost": 0.01},
     "content": [{"type": "thinking", "thinking": "Run pytest.", "signature": "sig"},
                 text("Running them."),
                 {"type": "tool_use", "id": "toolu_1", "name": "execute_command",
                  "input": {"command": "pytest", "requires_approval": False,
                            "task_progress": "- [ ] run the tests\n- [ ] report"}}]},
    {"role": "user", "ts": T0 + 2, "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1",
         "content": "[execute_command for 'pytest'] Result:\n3 passed"}]},
    {"role": "assistant", "ts": T0 + 3, "id": "msg_2",
     "metrics": {"tokens": {"prompt": 1200, "completion": 60, "cached": 1000}},
     "content": [{"type": "tool_use", "id": "toolu_2", "name": "apply_patch",
                  "input": {"input": "*** Begin Patch\n*** Add File: new.py\n+x = 1\n"
                                     "*** End Patch"}}]},
    {"role": "user", "ts": T0 + 4, "content": [
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": [text("Done.")]}]},
    {"role": "assistant", "ts": T0 + 5, "id": "msg_3",
     "metrics": {"tokens": {"prompt": 1300, "completion": 70, "cached": 1200}},
     "content": [{"type": "tool_use", "id": "toolu_3", "name": "write_to_file",
                  "input": {"path": "later.py", "content": "y = 2\n"}}]},
]

#: The shape of current Cline's API history (seen in a real task folder): native `tool_use`
#: calls answered by `[name …] Result:` text blocks, Cline's reminders and resumption notices
#: in user messages, feedback in its own `<feedback>` block.
NATIVE_TEXT_RESULTS = [
    {"role": "user", "ts": T0, "content": [
        text("<task>\nSummarise the app\n</task>"),
        text("\n# task_progress List (Optional - Plan Mode)\n\nWhile in PLAN MODE, ..."),
        text(ENV)]},
    {"role": "assistant", "ts": T0 + 1, "content": [
        {"type": "tool_use", "id": "tooluse_1", "name": "use_subagents",
         "input": {"prompt_1": "read the config"}, "call_id": "tooluse_1"}]},
    {"role": "user", "ts": T0 + 2, "content": [
        text("[subagents] Result:\nSubagent results:\nTotal: 1"),
        text("  \t\t\t\t# TODO LIST UPDATE REQUIRED - You MUST include the task_progress ..."),
        text(ENV)]},
    {"role": "assistant", "ts": T0 + 3, "content": [
        {"type": "tool_use", "id": "tooluse_2", "name": "read_file", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "tooluse_3", "name": "read_file", "input": {"path": "b.py"}}]},
    {"role": "user", "ts": T0 + 4, "content": [
        text("[read_file for 'a.py'] Result:\nx = 1"), text("[read_file for 'b.py'] Result:\ny"),
        text(ENV)]},
    {"role": "assistant", "ts": T0 + 5, "content": [
        {"type": "tool_use", "id": "tooluse_4", "name": "execute_command",
         "input": {"command": "[ -f x ] && echo 'a]b'", "requires_approval": False}}]},
    {"role": "user", "ts": T0 + 6, "content": [
        text("[execute_command for '[ -f x ] && echo 'a]b''] Result:\nCommand executed."),
        text(ENV)]},
    {"role": "assistant", "ts": T0 + 7, "content": [
        {"type": "tool_use", "id": "tooluse_5", "name": "attempt_completion",
         "input": {"result": "It is a web app."}}]},
    {"role": "user", "ts": T0 + 8, "content": [
        text("[attempt_completion] Result:\nDone"),
        text("The user has provided feedback on the results. Consider their input to continue "
             "the task, and then attempt completion again."),
        text("<feedback>\nnow deploy it\n</feedback>"), text(ENV)]},
    {"role": "user", "ts": T0 + 9, "content": [
        text("[TASK RESUMPTION] This task was interrupted 3 days ago. ..."),
        text("New instructions for task continuation:\n<user_message>\nkeep going\n"
             "</user_message>"), text(ENV)]},
]

UI_ONLY = [
    say(T0, "task", "Fix the bug in src/a.py"),
    req(T0 + 1, 10, 1),
    say(T0 + 2, "tool", {"tool": "readFile", "path": "src/a.py", "content": "/w/src/a.py"}),
    req(T0 + 3, 20, 2),
    ask(T0 + 4, "tool", {"tool": "editedExistingFile", "path": "src/a.py", "diff": "-a\n+b"}),
    say(T0 + 5, "user_feedback", "no, not like that"),
    req(T0 + 6, 30, 3),
    ask(T0 + 7, "tool", {"tool": "editedExistingFile", "path": "src/c.py", "diff": "-c\n+d"}),
    say(T0 + 8, "diff_error", "src/c.py"),
    req(T0 + 9, 40, 4, 5, 6),
    say(T0 + 10, "tool", {"tool": "newFileCreated", "path": "src/d.py", "content": "x"}),
    ask(T0 + 11, "command", "npm test"),
    ask(T0 + 12, "command_output", "1 passing"),
    say(T0 + 13, "task_progress", "- [x] read a.py\n- [ ] write d.py"),
    req(T0 + 14, 50, 5),
    say(T0 + 15, "completion_result", "Fixed."),
    ask(T0 + 16, "followup", {"question": "Anything else?", "options": ["yes", "no"]}),
    say(T0 + 17, "text", "Writing one more file."),
    say(T0 + 18, "tool", {"tool": "newFileCreated", "path": "src/e.py", "content": "y"}),
]


def task_folder(root: Path, name: str, ui: list | None = None, api: list | None = None) -> Path:
    folder = root / "tasks" / name
    folder.mkdir(parents=True)
    if ui is not None:
        (folder / cline.UI_FILE).write_text(json.dumps(ui, indent=2), encoding="utf-8")
    if api is not None:
        (folder / cline.API_FILE).write_text(json.dumps(api), encoding="utf-8")
    return folder


def store(tmp_path: Path) -> Ctx:
    root = tmp_path / "store"
    root.mkdir()
    ctx = Ctx(root)
    ctx("init", str(root))
    return ctx


def only_session(ctx: Ctx) -> str:
    sessions = ctx.json("sessions")
    assert len(sessions) == 1
    return sessions[0]["id"]


# -- the corpus ---------------------------------------------------------------------------------


def test_corpus_task_imports_and_exports_its_ui_messages(tmp_path):
    root = require_corpus() / "cline"
    folder = root / "clicontinues_cline_task_synthetic"
    ctx = store(tmp_path)
    report = ctx.json("import", str(root))
    assert (report["sessions"], report["warnings"]) == (1, 0)
    assert any("no api_conversation_history.json" in n for n in report["notes"])
    sid = only_session(ctx)
    s = ctx.json("sessions")[0]
    assert s["title"] == "Create a React component for a dashboard with charts and KPI cards"
    assert s["created"] == "2025-02-25T08:00:00.000Z"
    tu = ctx.json("stats", f"{sid}/main")["token_usage"]
    t = oracle.analyze(folder)
    assert (tu["input_tokens"], tu["output_tokens"]) == (t.input_tokens, t.output_tokens) == (930, 800)
    assert tu["cache_read_tokens"] == 110 and tu["cache_write_tokens"] == 70
    log = ctx.json("log", f"{sid}/main")
    prompts = [e["payload"]["text"] for e in reversed(log) if e["type"] == "UserPromptSubmitted"]
    assert prompts == [p for _, _, p in t.prompts] == [
        "Create a React component for a dashboard with charts and KPI cards",
        "Also add a date range picker for filtering the data"]
    out = ctx("export", sid, "--format", "cline").stdout
    assert json.loads(out) == json.loads((folder / cline.UI_FILE).read_text())
    assert ctx.json("import", str(folder))["new_events"] == 0
    assert ctx.json("import", str(folder / cline.UI_FILE))["new_events"] == 0  # the file: its folder


def test_corpus_is_detected_and_claims_no_other_harness_file():
    root = require_corpus()
    folder = root / "cline" / "clicontinues_cline_task_synthetic"
    assert cline.sniff(folder) and harnesses.sniff(folder) == "cline"
    assert cline.sniff(folder / cline.UI_FILE) and detect.detect_format(folder) == "cline"
    assert cline.session_units(root / "cline") == [folder] == oracle.units(root / "cline")
    others = [p for p in root.rglob("*") if "cline" not in p.parts]
    assert others
    for p in others:
        assert not cline.sniff(p), p
        assert not oracle.detect(p), p
    for sub in root.iterdir():
        if sub.name != "cline" and sub.is_dir():
            assert not cline.session_units(sub), sub


# -- hand-made tasks ----------------------------------------------------------------------------


def test_xml_tool_history_calls_results_prompts_and_usage(tmp_path):
    folder = task_folder(tmp_path, "1740470400000", XML_UI, XML_API)
    ctx = store(tmp_path)
    report = ctx.json("import", str(folder))
    assert report["warnings"] == 0
    sid = only_session(ctx)
    s = ctx.json("sessions")[0]
    assert (s["title"], s["cwd"]) == ("Add a footer to index.html", "/home/u/site")
    st = ctx.json("state", f"{sid}/main")
    assert [f["path"] for f in st["files"]["modified"]] == ["index.html"]
    assert [f["path"] for f in st["files"]["read"]] == ["index.html"]
    assert [x["text"] for x in st["plan"]["steps"]] == ["Read index.html", "Add the footer"]
    assert not st["tool_calls"]["pending"]
    log = list(reversed(ctx.json("log", f"{sid}/main")))
    failed = [e["payload"] for e in log if e["type"] == "ToolCallFailed"]
    assert [f["name"] for f in failed] == ["replace_in_file", "write_to_file"]
    assert "denied" in failed[1]["error"]
    prompts = [e["payload"]["text"] for e in log if e["type"] == "UserPromptSubmitted"]
    assert prompts == ["Add a footer to index.html", "not that file", "also make it blue",
                       "and bold"]  # the task, feedback on a refusal and on a result, a message
    tu = ctx.json("stats", f"{sid}/main")["token_usage"]
    assert (tu["input_tokens"], tu["output_tokens"]) == (115 + 7 + 53 + 9, 20 + 3 + 5 + 1)
    t = oracle.analyze(folder)
    assert (t.input_tokens, t.output_tokens) == (tu["input_tokens"], tu["output_tokens"])
    assert t.modified_files() == ["/home/u/site/index.html"]
    assert t.read_files() == ["/home/u/site/index.html"]
    assert t.plan_steps() == ["Read index.html", "Add the footer"]
    assert [p for _, _, p in t.prompts] == prompts
    # export: ui_messages.json, JSON-equal; a second import writes nothing
    out = ctx("export", sid, "--format", "cline").stdout
    assert json.loads(out) == XML_UI
    assert ctx.json("import", str(folder))["new_events"] == 0


def test_native_tool_calls_and_metrics_without_ui_messages(tmp_path):
    folder = task_folder(tmp_path, "task-native", None, NATIVE_API)
    ctx = store(tmp_path)
    report = ctx.json("import", str(tmp_path / "tasks"))
    assert any("no ui_messages.json" in n for n in report["notes"])
    sid = only_session(ctx)
    st = ctx.json("state", f"{sid}/main")
    assert [f["path"] for f in st["files"]["modified"]] == ["new.py"]
    assert [x["text"] for x in st["plan"]["steps"]] == ["run the tests", "report"]
    assert list(st["tool_calls"]["pending"]) == ["toolu_3"]
    tu = ctx.json("stats", f"{sid}/main")["token_usage"]
    assert (tu["input_tokens"], tu["output_tokens"], tu["cache_read_tokens"]) == (3500, 180, 3000)
    t = oracle.analyze(folder)
    assert (t.input_tokens, t.output_tokens) == (3500, 180)
    assert [c.id for c in t.unresolved()] == ["toolu_3"]
    log = ctx.json("log", f"{sid}/main")
    models = {e["payload"].get("model") for e in log if e["type"] == "ModelResponseReceived"}
    assert models == {"claude-sonnet-4"}
    assert json.loads(ctx("export", sid, "--format", "cline").stdout) == NATIVE_API


def test_native_calls_answered_in_text_and_cline_notes(tmp_path):
    folder = task_folder(tmp_path, "task-current", None, NATIVE_TEXT_RESULTS)
    ctx = store(tmp_path)
    assert ctx.json("import", str(folder))["warnings"] == 0
    sid = only_session(ctx)
    st = ctx.json("state", f"{sid}/main")
    assert [f["path"] for f in st["files"]["read"]] == ["a.py", "b.py"]
    assert not st["tool_calls"]["pending"]
    log = list(reversed(ctx.json("log", f"{sid}/main")))
    finished = [e["payload"]["tool_call_id"] for e in log if e["type"] == "ToolCallFinished"]
    assert finished == ["tooluse_1", "tooluse_2", "tooluse_3", "tooluse_4", "tooluse_5"]
    prompts = [e["payload"]["text"] for e in log if e["type"] == "UserPromptSubmitted"]
    assert prompts == ["Summarise the app", "now deploy it", "keep going"]
    t = oracle.analyze(folder)
    assert [p for _, _, p in t.prompts] == prompts
    assert {c.id: c.status for c in t.calls} == {f"tooluse_{i}": "ok" for i in range(1, 6)}


def test_ui_messages_alone_give_calls_their_results(tmp_path):
    folder = task_folder(tmp_path, "task-ui", UI_ONLY)
    ctx = store(tmp_path)
    ctx.json("import", str(folder))
    sid = only_session(ctx)
    st = ctx.json("state", f"{sid}/main")
    assert [f["path"] for f in st["files"]["read"]] == ["src/a.py"]
    assert [f["path"] for f in st["files"]["modified"]] == ["src/d.py"]
    assert [x["text"] for x in st["plan"]["steps"]] == ["read a.py", "write d.py"]
    assert list(st["tool_calls"]["pending"]) == ["cline-ui-19"]
    log = list(reversed(ctx.json("log", f"{sid}/main")))
    failed = [(e["payload"]["tool_call_id"], e["payload"]["error"]) for e in log
              if e["type"] == "ToolCallFailed"]
    assert failed == [("cline-ui-5", "The user denied this operation."), ("cline-ui-8", "src/c.py")]
    t = oracle.analyze(folder)
    assert {c.id: c.status for c in t.calls} == {
        "cline-ui-3": "ok", "cline-ui-5": "error", "cline-ui-8": "error", "cline-ui-11": "ok",
        "cline-ui-12": "ok", "cline-ui-14": "ok", "cline-ui-19": None}
    assert t.modified_files() == ["src/d.py"] and t.plan_steps() == ["read a.py", "write d.py"]
    tu = ctx.json("stats", f"{sid}/main")["token_usage"]
    assert (tu["input_tokens"], tu["output_tokens"]) == (t.input_tokens, t.output_tokens) == (161, 15)
    assert json.loads(ctx("export", sid, "--format", "cline").stdout) == UI_ONLY


def test_xml_tool_parsing():
    calls, prose = cline.parse_xml_tools(
        "Intro.\n<write_to_file>\n<path>a.md</path>\n<content>\nx </content> y\n</content>\n"
        "</write_to_file>\nAfter.\n<execute_command>\n<command>ls</command>\n<requires_approval>"
        "false</requires_approval>\n</execute_command>\n<read_file>\n<path>cut off")
    assert [(n, p) for n, p, _a, _z in calls] == [
        ("write_to_file", {"path": "a.md", "content": "x </content> y"}),
        ("execute_command", {"command": "ls", "requires_approval": "false"})]
    assert prose.startswith("Intro.") and "After." in prose and "<path>" not in prose.split("After.")[0]


def test_malformed_documents_and_elements(tmp_path):
    ctx = store(tmp_path)
    bad = task_folder(tmp_path, "bad", None)
    (bad / cline.UI_FILE).write_text('[{"ts": 1, "type": "say", "say": "task"', encoding="utf-8")
    err = ctx.fails(10, "import", str(bad))
    assert "ui_messages.json" in err and "not a JSON document" in err
    (bad / cline.UI_FILE).write_text('{"not": "an array"}', encoding="utf-8")
    assert "where Cline writes an array" in ctx.fails(10, "import", str(bad))
    odd = task_folder(tmp_path, "odd", [say(T0, "task", "Hi there"), 42, {"ts": T0 + 1}])
    report = ctx.json("import", str(odd))
    assert [(w["file"], w["line"]) for w in report["warning_list"]] == [("odd", 2), ("odd", 3)]
    sid = [s["id"] for s in ctx.json("sessions") if s["title"] == "Hi there"][0]
    assert json.loads(ctx("export", sid, "--format", "cline").stdout) == \
        [say(T0, "task", "Hi there"), 42, {"ts": T0 + 1}]


def test_a_link_out_of_the_folder_and_paths_in_messages_are_never_read(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.json"
    secret.write_text(json.dumps([say(T0, "task", "stolen")]))
    folder = task_folder(tmp_path, "linked", None, [
        {"role": "user", "content": [text("<task>\nread it\n</task>")]},
        {"role": "assistant", "content": [text(f"<read_file>\n<path>{secret}</path>\n</read_file>")]},
        {"role": "user", "content": [text(f"[read_file for '{secret}'] Result:"), text("...")]}])
    os.symlink(secret, folder / cline.UI_FILE)

    ctx = store(tmp_path)
    opened = record_opens(monkeypatch)
    report = ctx.json("import", str(folder))
    monkeypatch.undo()
    assert [w["file"] for w in report["warning_list"]] == ["linked/ui_messages.json"]
    assert not [p for p in opened if "secret" in p or p.endswith(cline.UI_FILE)]
    sid = only_session(ctx)
    assert ctx.json("sessions")[0]["title"] == "read it"
    assert [f["path"] for f in ctx.json("state", f"{sid}/main")["files"]["read"]] == [str(secret)]


def test_default_dirs_follow_the_environment(tmp_path):
    home = tmp_path
    dirs = cline.default_dirs({}, home)
    assert home / ".cline" / "data" / "tasks" in dirs
    assert home / ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks" in dirs
    assert home / ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks" in dirs
    assert home / "Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/tasks" in dirs
    assert cline.default_dirs({"CLINE_DIR": "/opt/c"}, home)[0] == Path("/opt/c/data/tasks")
    assert cline.default_dirs({"CLINE_DATA_DIR": "/d", "CLINE_DIR": "/opt/c"}, home)[0] == \
        Path("/d/tasks")
    xdg = cline.default_dirs({"XDG_CONFIG_HOME": "/x"}, home)
    assert Path("/x/Code/User/globalStorage/saoudrizwan.claude-dev/tasks") in xdg
    win = cline.default_dirs({"APPDATA": "/appdata"}, home)
    assert Path("/appdata/Code/User/globalStorage/saoudrizwan.claude-dev/tasks") in win
    assert ("cline", home / ".cline" / "data" / "tasks") in harnesses.default_dirs({"HOME": str(home)})


def test_a_walk_finds_task_folders_whole(tmp_path):
    a = task_folder(tmp_path, "1", XML_UI, XML_API)
    b = task_folder(tmp_path, "2", UI_ONLY)
    (a / "task_metadata.json").write_text("{}")
    assert cline.session_units(tmp_path) == [a, b] == oracle.units(tmp_path)
    assert detect.walk(tmp_path) == [a, b]
    ctx = store(tmp_path)
    assert ctx.json("import", str(tmp_path / "tasks"))["sessions"] == 2
