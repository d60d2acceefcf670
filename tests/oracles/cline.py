"""The oracle for Cline / Roo Code task folders (`<globalStorage>/tasks/<taskId>/`).

A task folder holds `api_conversation_history.json` (Anthropic-style messages) and
`ui_messages.json` (the panel's `{ts, type: say|ask, say|ask, text, …}` messages; cline
src/shared/ExtensionMessage.ts). The folder is one session. Line numbers, as the importer's
events carry them: ui element i is line i + 1, API element j is line 1,000,000 + j + 1.

What is read (docs/harnesses/cline.md):

- tokens, Cline's own getApiMetrics: every `say` of `api_req_started`, `api_req_finished`,
  `deleted_api_reqs`, `subagent_usage` whose text is JSON with token counts: input = tokensIn
  + cacheWrites + cacheReads, cache read = cacheReads, output = tokensOut. Without
  `ui_messages.json`: assistant messages' `metrics.tokens` (prompt, cached, completion).
- with an API history: prompts are user messages' text outside tool results (environment
  details left out, `<task>`/`<feedback>` unwrapped); calls are `tool_use` blocks (results by
  `tool_use_id`) and XML tool tags in assistant text (results: the next user message's
  `[name …] Result:` blocks, matched by name in order); a result is an error when it opens
  with Cline's failure texts ("The tool execution failed…", "The user denied this operation.",
  "Tool [", "Missing value for required parameter", …) or says `is_error`.
- without one, from ui_messages.json: element 0 and `say: task|user_feedback` are prompts;
  `tool` (a file tool: `{tool, path}`), `command`, `browser_action_launch`, `browser_action`,
  `use_mcp_server`, `new_task` messages are calls `cline-ui-<line>`; the first
  command_output / browser_action_result / mcp_server_response after one answers it, a
  diff_error / clineignore_error fails the newest open file tool, a user_feedback right after
  an `ask: tool` denies it, the next usage message answers every open call (ok);
  `task_progress` is a plan (ok at once).
- writes: write_to_file, replace_in_file, new_rule (path), apply_patch (its file headers),
  Roo's apply_diff / insert_content / search_and_replace; the ui tools newFileCreated,
  editedExistingFile, fileDeleted (and Roo's appliedDiff, insertContent, searchAndReplace).
  Reads: read_file, ui readFile. Plan: the newest `task_progress` checklist (or
  update_todo_list `todos`).

It imports nothing from ctxstore.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .transcripts import MAIN, Call, Transcript, patch_files, prompt_text

FILES = ("ui_messages.json", "api_conversation_history.json")
API_BASE = 1_000_000
TOOLS = ("ask_followup_question attempt_completion execute_command replace_in_file read_file "
         "write_to_file search_files list_files list_code_definition_names browser_action "
         "use_mcp_tool access_mcp_resource load_mcp_documentation new_task plan_mode_respond "
         "plan_mode_response act_mode_respond focus_chain web_fetch web_search condense "
         "summarize_task report_bug new_rule apply_patch use_skill use_subagents apply_diff "
         "insert_content search_and_replace switch_mode codebase_search update_todo_list "
         "fetch_instructions run_slash_command generate_image edit_file search_replace").split()
PARAMS = ("command requires_approval path absolutePath content diff regex file_pattern recursive "
          "action url coordinate text query allowed_domains blocked_domains prompt server_name "
          "tool_name arguments uri question options response result context title what_happened "
          "steps_to_reproduce api_request_output additional_context needs_more_exploration "
          "task_progress timeout input from_ref to_ref skill_name prompt_1 prompt_2 prompt_3 "
          "prompt_4 prompt_5 start_line end_line line mode_slug reason todos follow_up args cwd "
          "message search replace file_path old_string new_string").split()
WRITE_TOOLS = {"write_to_file", "replace_in_file", "new_rule", "apply_diff", "insert_content",
               "search_and_replace", "edit_file", "search_replace"}
UI_WRITES = {"newFileCreated", "editedExistingFile", "fileDeleted", "appliedDiff",
             "insertContent", "searchAndReplace"}
FAILS = ("The tool execution failed with the following error", "The user denied this operation",
         "Tool [", "Missing value for required parameter", "Failed to write to",
         "Command execution blocked by", "[ERROR]")
HEAD = re.compile(r"^\[([\w-]+)(?: for '.*?')?\] Result:", re.S)
CHECK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[[ xX~-]\]\s*(.+?)\s*$")


def detect(path: Path) -> bool:
    if path.is_dir():
        return any((path / f).is_file() for f in FILES)
    return path.name in FILES and path.is_file()


def units(root: Path) -> list[Path]:
    return sorted({p.parent for p in root.rglob("*.json") if p.name in FILES and p.is_file()})


def _load(folder: Path, name: str):
    p = folder / name
    if not p.is_file():
        return None
    with open(p, encoding="utf-8") as fh:
        v = json.load(fh)
    return v if isinstance(v, list) else None


def _num(v) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _jobj(text):
    if not isinstance(text, str):
        return {}
    try:
        v = json.loads(text)
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


def _steps(text) -> tuple[str, ...] | None:
    if not isinstance(text, str):
        return None
    steps = tuple(m.group(1) for m in map(CHECK.match, text.splitlines()) if m)
    return steps or None


def _failed(text: str) -> bool:
    body = HEAD.sub("", text.lstrip(), count=1).lstrip()
    return body.startswith(FAILS) or bool(re.match(r"^Access to .+ is blocked by the \.clineignore", body))


def _blocks(content) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [c for c in content if isinstance(c, dict)] if isinstance(content, list) else []


def _xml_calls(text: str) -> list[tuple[str, dict]]:
    """Complete XML tool uses in order: params in sequence, each up to its closing tag."""
    out = []
    pos = 0
    opener = re.compile("<(" + "|".join(TOOLS) + ")>")
    param = re.compile("<(" + "|".join(PARAMS) + ")>")
    while True:
        m = opener.search(text, pos)
        if not m:
            return out
        name, i, params = m.group(1), m.end(), {}
        while True:
            close = text.find(f"</{name}>", i)
            pm = param.search(text, i)
            if pm and (close < 0 or pm.start() < close):
                end = text.find(f"</{pm.group(1)}>", pm.end())
                if end < 0:
                    return out
                params[pm.group(1)] = text[pm.end():end].strip()
                i = end + len(pm.group(1)) + 3
                continue
            if close < 0:
                return out
            body = text[m.end():close]
            if name in ("write_to_file", "new_rule") and "<content>" in body and "</content>" in body:
                a = body.index("<content>") + 9
                z = body.rfind("</content>")
                if z >= a:
                    params["content"] = body[a:z].strip()
            out.append((name, params))
            pos = close + len(name) + 3
            break


def _call(t: Transcript, cid: str, name: str, args: dict, line: int) -> Call:
    c = Call(id=cid, name=name, args=args, line=line, cwd=t.cwd)
    path = args.get("path") or args.get("absolutePath") or args.get("file_path")
    if name in WRITE_TOOLS and isinstance(path, str) and path:
        c.writes = (path,)
    if name == "apply_patch" and isinstance(args.get("input"), str):
        c.writes = tuple(patch_files(args["input"]))
    if name == "read_file" and isinstance(path, str) and path:
        c.reads = (path,)
    if name == "update_todo_list":
        c.plan = _steps(args.get("todos"))
    elif isinstance(args.get("task_progress"), str):
        c.plan = _steps(args["task_progress"])
    t.calls.append(c)
    return c


def analyze(path: Path) -> Transcript:
    folder = path if path.is_dir() else path.parent
    ui = _load(folder, FILES[0])
    api = _load(folder, FILES[1])
    t = Transcript(path=folder, harness="cline", lines=len(ui or []) + len(api or []))
    if api:
        for m in api[:4]:
            if isinstance(m, dict) and m.get("role") == "user":
                for b in _blocks(m.get("content")):
                    mm = re.search(r"# Current Working Directory \((.+?)\) Files", str(b.get("text", "")))
                    if mm and t.cwd is None:
                        t.cwd = mm.group(1).strip()
    if ui is not None:
        for m in ui:
            if isinstance(m, dict) and m.get("type") == "say" and m.get("say") in (
                    "api_req_started", "api_req_finished", "deleted_api_reqs", "subagent_usage"):
                info = _jobj(m.get("text"))
                if any(isinstance(info.get(k), (int, float)) for k in
                       ("tokensIn", "tokensOut", "cacheWrites", "cacheReads")):
                    t.usage_records += 1
                    t.input_tokens += _num(info.get("tokensIn")) + _num(info.get("cacheWrites")) \
                        + _num(info.get("cacheReads"))
                    t.cache_read_tokens += _num(info.get("cacheReads"))
                    t.cache_write_tokens += _num(info.get("cacheWrites"))
                    t.output_tokens += _num(info.get("tokensOut"))
    elif api:
        for m in api:
            tok = (m.get("metrics") or {}).get("tokens") if isinstance(m, dict) else None
            if isinstance(tok, dict):
                t.usage_records += 1
                t.input_tokens += _num(tok.get("prompt"))
                t.cache_read_tokens += _num(tok.get("cached"))
                t.output_tokens += _num(tok.get("completion"))
    if api:
        _api(t, api)
    elif ui:
        _ui(t, ui)
    return t


OPENINGS = ("<task>", "<feedback>", "<user_message>", "The user provided the following feedback",
            "New message to respond to", "New instructions for task continuation")
NOTES = ("[TASK RESUMPTION]", "# TODO LIST", "# task_progress", "[ERROR] You did not use a tool",
         "(The user did not provide a new message", "The user has provided feedback on the results",
         "[Response interrupted by", "<explicit_instructions")
TAGGED = re.compile(r"<(task|feedback|user_message)>\s*(.*?)\s*</\1>", re.S)
ENV = re.compile(r"<environment_details>.*?(?:</environment_details>|\Z)", re.S)


def _api(t: Transcript, api: list) -> None:
    by_id: dict[str, Call] = {}
    open_calls: list[Call] = []
    for j, m in enumerate(api):
        line = API_BASE + j + 1
        if not isinstance(m, dict):
            continue
        if m.get("role") == "assistant":
            open_calls = []
            for k, b in enumerate(_blocks(m.get("content"))):
                if b.get("type") == "tool_use":
                    cid = b.get("id") if isinstance(b.get("id"), str) and b["id"] else f"cline-tool-{line}-{k}"
                    args = b.get("input") if isinstance(b.get("input"), dict) else {}
                    by_id[cid] = c = _call(t, cid, str(b.get("name", "")), args, line)
                    open_calls.append(c)
                elif b.get("type") == "text":
                    for x, (name, params) in enumerate(_xml_calls(str(b.get("text", "")))):
                        open_calls.append(_call(t, f"cline-xml-{line}-{k}-{x}", name, params, line))
        elif m.get("role") == "user":
            words, current, cur_text = [], None, []
            for b in _blocks(m.get("content")):
                if b.get("type") == "tool_result":
                    current = None
                    c = by_id.get(b.get("tool_use_id"))
                    content = b.get("content")
                    text = content if isinstance(content, str) else "\n".join(
                        str(x.get("text", "")) for x in content or [] if isinstance(x, dict)
                        and x.get("type") == "text") if isinstance(content, list) else ""
                    if c is not None:
                        if c in open_calls:
                            open_calls.remove(c)
                        c.status = "error" if b.get("is_error") is True or _failed(text) else "ok"
                        c.result_line = line
                    continue
                if b.get("type") != "text":
                    continue
                text = str(b.get("text", ""))
                s = text.lstrip()
                h = HEAD.match(s)
                if h:
                    name = h.group(1)
                    pick = next((c for c in open_calls if c.name == name), None) or \
                        next((c for c in open_calls if c.name.endswith("_" + name)), None) or \
                        (open_calls[0] if open_calls else None)
                    current = None
                    if pick is not None:
                        open_calls.remove(pick)
                        pick.status = "error" if _failed(text) else "ok"
                        pick.result_line = line
                        current, cur_text = pick, [text]
                    continue
                if s.startswith(OPENINGS):
                    if current is not None:
                        cur_text.append(text)
                    words += [mm.group(2) for mm in TAGGED.finditer(ENV.sub("", text)) if mm.group(2).strip()]
                    continue
                if s.startswith("<environment_details>"):
                    current = None
                    continue
                if current is not None:  # the result goes on: judged on all its text
                    cur_text.append(text)
                    if _failed("\n".join(cur_text)):
                        current.status = "error"
                    continue
                if s.startswith(NOTES):
                    continue
                w = ENV.sub("", text).strip()
                if w:
                    words.append(w)
            real = prompt_text("\n\n".join(words))
            if real:
                t.prompts.append((line, MAIN, real))


def _ui(t: Transcript, ui: list) -> None:
    open_calls: list[tuple[Call, str]] = []  # (call, kind)
    last_ask_tool: Call | None = None
    for i, m in enumerate(ui):
        line = i + 1
        if not isinstance(m, dict) or m.get("type") not in ("say", "ask"):
            continue
        typ = m["type"]
        kind = m.get(typ)
        text = m.get("text") if isinstance(m.get("text"), str) else ""
        if typ == "say" and kind in ("api_req_started", "api_req_finished", "deleted_api_reqs",
                                     "subagent_usage") and any(
                isinstance(_jobj(text).get(k), (int, float))
                for k in ("tokensIn", "tokensOut", "cacheWrites", "cacheReads")):
            for c, _k in open_calls:
                c.status, c.result_line = "ok", line
            open_calls = []
            continue
        if typ == "say" and (kind in ("task", "user_feedback") or i == 0):
            if kind == "user_feedback" and last_ask_tool is not None and last_ask_tool.status is None:
                last_ask_tool.status, last_ask_tool.result_line = "error", line
                open_calls = [x for x in open_calls if x[0] is not last_ask_tool]
            last_ask_tool = None
            real = prompt_text(text)
            if real:
                t.prompts.append((line, MAIN, real))
            continue
        last_ask_tool = None
        call = None
        cid = f"cline-ui-{line}"
        if kind == "tool":
            info = _jobj(text)
            tool = info.get("tool", "")
            c = Call(id=cid, name=str(tool), args=info, line=line)
            p = info.get("path")
            if tool in UI_WRITES and isinstance(p, str) and p:
                c.writes = (p,)
            if tool == "readFile" and isinstance(p, str) and p:
                c.reads = (p,)
            t.calls.append(c)
            call = c
            if typ == "ask":
                last_ask_tool = c
        elif kind == "command" or kind == "browser_action_launch" or (
                kind == "browser_action" and typ == "say") or kind in ("use_mcp_server", "new_task"):
            call = Call(id=cid, name=str(kind), args={"text": text}, line=line)
            t.calls.append(call)
        elif kind == "task_progress":
            c = Call(id=cid, name="focus_chain", args={"task_progress": text}, line=line,
                     status="ok", result_line=line, plan=_steps(text))
            t.calls.append(c)
            continue
        if call is not None:
            open_calls.append((call, str(kind)))
            continue
        answers = {"command_output": ("command",), "browser_action_result": (
            "browser_action_launch", "browser_action"), "mcp_server_response": ("use_mcp_server",)}
        if kind in answers:
            match = [x for x in open_calls if x[1] in answers[kind]]
            if match:
                c = match[-1][0]
                c.status, c.result_line = "ok", line
                open_calls.remove(match[-1])
            continue
        if typ == "say" and kind in ("diff_error", "clineignore_error"):
            match = [x for x in open_calls if x[1] == "tool"]
            if match:
                c = match[-1][0]
                c.status, c.result_line = "error", line
                open_calls.remove(match[-1])
