"""Cline and Roo Code tasks (`<globalStorage>/tasks/<taskId>/`, one folder per task).

A task folder holds `api_conversation_history.json` (the messages sent to the model, Anthropic
style: `{role, content: str | [text | image | tool_use | tool_result | thinking ...], ts?,
modelInfo?, metrics?}`) and `ui_messages.json` (what the panel shows: `{ts, type: say | ask,
say | ask: kind, text, images?, partial?, ...}`, cline src/shared/ExtensionMessage.ts). The
folder is one session; `session_units` finds the folders, `sniff` says yes to a folder holding
either file (or to either file, whose folder is then imported). Nothing else is opened: a path
named in a message (a tool's `path`, a checkpoint) is never read, and either file is read only
if it really is inside the folder (a symlink leading out of it is refused).

Records: element i of `ui_messages.json` is line i + 1; element j of
`api_conversation_history.json` is line API_BASE + j + 1 (API_BASE = 1,000,000), so the two
arrays keep apart in one session's line order.

The conversation comes from `api_conversation_history.json` when the task has it: user turns
(`<task>`/`<feedback>`/`<answer>` unwrapped, `<environment_details>` left out), tool results
(native `tool_result` blocks by `tool_use_id`; older XML-tool turns' `[name for '…'] Result:`
text blocks, in order), assistant text, thinking and calls (native `tool_use` blocks, or the XML
tool tags of older Cline: `<write_to_file><path>…</path><content>…</content></write_to_file>`).
Every `ui_messages.json` element is then kept as bookkeeping (`cline:<say or ask kind>`). A task
without an API history (or with one that is empty) gets its conversation from `ui_messages.json`:
the first element (the task: Cline's webview takes `messages[0]` as the task whatever its kind),
`task` and `user_feedback` are prompts; `text`, `reasoning`, `completion_result`, `followup`,
`plan_mode_respond` the model's words; `tool` (file tools), `command`, `browser_action*`,
`use_mcp_server`, `new_task` and `task_progress` are calls (`cline-ui-<line>`), answered by
`command_output` / `browser_action_result` / `mcp_server_response`, by a `diff_error` or
`clineignore_error` (failed), by `user_feedback` right after the approval question (denied), or
else by the next `api_req_started` (the request that carried their result).

Tokens follow Cline's own `getApiMetrics`: the `say` messages `api_req_started` (and the older
`api_req_finished`), `deleted_api_reqs` and `subagent_usage` whose text is JSON with
`tokensIn`, `tokensOut`, `cacheWrites`, `cacheReads`: input = tokensIn + cacheWrites +
cacheReads, cached = cacheReads, output = tokensOut, each on a `ModelResponseReceived`. A task
without `ui_messages.json` takes each assistant message's `metrics.tokens` (`prompt` already
holds the cached part, `completion` the output).

`ctx export --format cline` writes `ui_messages.json`'s array when the task had one, else
`api_conversation_history.json`'s (compact JSON, as Cline writes it): JSON-equal to that file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from ..errors import InvalidInput
from ..objects import ImageBlock, TextBlock, ThinkingBlock, ToolCallBlock
from ..state.prompts import prompt_text, title_of
from ..userfiles import open_input
from .common import ImportContext, SessionBuilder, as_int, as_str, preview, tool_requested_payload

FMT = "cline"
LABEL = "Cline"
UI_FILE = "ui_messages.json"
API_FILE = "api_conversation_history.json"
FILES = (UI_FILE, API_FILE)
API_BASE = 1_000_000
WRAPPED = "$value"  # a non-object element of either array, kept as {"$value": element}

#: Tool names of Cline (src/shared/tools.ts ClineDefaultTool) and Roo Code, for the XML form.
TOOL_NAMES = (
    "ask_followup_question", "attempt_completion", "execute_command", "replace_in_file",
    "read_file", "write_to_file", "search_files", "list_files", "list_code_definition_names",
    "browser_action", "use_mcp_tool", "access_mcp_resource", "load_mcp_documentation",
    "new_task", "plan_mode_respond", "plan_mode_response", "act_mode_respond", "focus_chain",
    "web_fetch", "web_search", "condense", "summarize_task", "report_bug", "new_rule",
    "apply_patch", "use_skill", "use_subagents",
    # Roo Code
    "apply_diff", "insert_content", "search_and_replace", "switch_mode", "codebase_search",
    "update_todo_list", "fetch_instructions", "run_slash_command", "generate_image",
    "edit_file", "search_replace",
)
#: Parameter names of the XML form (src/core/assistant-message toolParamNames, plus Roo's).
PARAM_NAMES = (
    "command", "requires_approval", "path", "absolutePath", "content", "diff", "regex",
    "file_pattern", "recursive", "action", "url", "coordinate", "text", "query",
    "allowed_domains", "blocked_domains", "prompt", "server_name", "tool_name", "arguments",
    "uri", "question", "options", "response", "result", "context", "title", "what_happened",
    "steps_to_reproduce", "api_request_output", "additional_context", "needs_more_exploration",
    "task_progress", "timeout", "input", "from_ref", "to_ref", "skill_name", "prompt_1",
    "prompt_2", "prompt_3", "prompt_4", "prompt_5", "start_line", "end_line", "line",
    "mode_slug", "reason", "todos", "follow_up", "args", "cwd", "message", "search", "replace",
    "file_path", "old_string", "new_string",
)
_TOOL_OPEN = re.compile("<(" + "|".join(map(re.escape, TOOL_NAMES)) + ")>")
_PARAM_OPEN = re.compile("<(" + "|".join(map(re.escape, PARAM_NAMES)) + ")>")
_RESULT_HEAD = re.compile(r"^\[([\w-]+)(?: for '.*?')?\] Result:", re.S)
_ENV = re.compile(r"<environment_details>.*?(?:</environment_details>|\Z)", re.S)
#: the user's words Cline wraps: the task, feedback on a result or a refused tool, a message
#: typed when resuming a task or answering in plan mode
_USER_TAGS = re.compile(r"<(task|feedback|user_message)>\s*(.*?)\s*</\1>", re.S)
#: how a text block holding them opens (a tool result's content is never read for them)
_USER_OPENINGS = ("<task>", "<feedback>", "<user_message>", "The user provided the following feedback",
                  "New message to respond to", "New instructions for task continuation")
#: text Cline adds to a user message that is not the user's (focus-chain reminders, the
#: resumption notice, the "no tool used" error, framing of feedback)
NOTE_PREFIXES = ("[TASK RESUMPTION]", "# TODO LIST", "# task_progress", "[ERROR] You did not use a tool",
                 "(The user did not provide a new message", "The user has provided feedback on the results",
                 "[Response interrupted by", "<explicit_instructions", "<environment_details>")
_CWD = re.compile(r"# Current Working Directory \((.+?)\) Files")
#: the openings of Cline's error results (src/core/prompts/responses.ts formatResponse)
ERROR_PREFIXES = ("The tool execution failed with the following error",
                  "The user denied this operation", "Tool [", "Missing value for required parameter",
                  "Failed to write to", "Command execution blocked by", "[ERROR]")
_CLINEIGNORE = re.compile(r"^Access to .+ is blocked by the \.clineignore file settings")

#: ClineSayTool.tool -> the tool that makes that message
UI_TOOLS = {"editedExistingFile": "replace_in_file", "newFileCreated": "write_to_file",
            "fileDeleted": "delete_file", "readFile": "read_file",
            "listFilesTopLevel": "list_files", "listFilesRecursive": "list_files",
            "listCodeDefinitionNames": "list_code_definition_names",
            "searchFiles": "search_files", "webFetch": "web_fetch", "webSearch": "web_search",
            "summarizeTask": "summarize_task", "useSkill": "use_skill",
            # Roo Code's say/ask tool kinds
            "appliedDiff": "apply_diff", "insertContent": "insert_content",
            "searchAndReplace": "search_and_replace", "codebaseSearch": "codebase_search",
            "updateTodoList": "update_todo_list", "switchMode": "switch_mode",
            "newTask": "new_task", "finishTask": "attempt_completion",
            "generateImage": "generate_image", "runSlashCommand": "run_slash_command"}
USAGE_SAYS = frozenset({"api_req_started", "api_req_finished", "deleted_api_reqs",
                        "subagent_usage"})
PROMPT_SAYS = frozenset({"task", "user_feedback"})


# ---------------------------------------------------------------------------------------------
# The surface every harness module has (harnesses.py)


def sniff(path: Path) -> bool:
    """A task folder (it holds `ui_messages.json` or `api_conversation_history.json`), or one
    of those two files (a JSON array)."""
    try:
        if path.is_dir():
            return any((path / f).is_file() for f in FILES)
        if path.name not in FILES or not path.is_file():
            return False
        with open(path, "rb") as fh:
            head = fh.read(64).lstrip()
        return head.startswith(b"[") or not head
    except OSError:
        return False


def session_units(root: Path) -> list[Path]:
    """The task folders under a folder (each taken whole)."""
    found = {p.parent for p in root.rglob("*.json") if p.name in FILES and p.is_file()}
    return sorted(found)


def default_dirs(env: Mapping[str, str], home: Path) -> list[Path]:
    """Cline's and Roo Code's task folders: VS Code's globalStorage of the extensions
    `saoudrizwan.claude-dev` and `rooveterinaryinc.roo-cline` (Linux `$XDG_CONFIG_HOME` or
    ~/.config/Code, macOS ~/Library/Application Support/Code, Windows %APPDATA%/Code; stable
    and Insiders builds), and the file-backed store of current Cline and its CLI
    (`$CLINE_DATA_DIR`, else `$CLINE_DIR/data`, else ~/.cline/data; cline
    src/shared/storage/storage-context.ts `resolveDataDirFromEnv`), each `/tasks`."""
    out: list[Path] = []
    data = env.get("CLINE_DATA_DIR", "").strip()
    cline_dir = env.get("CLINE_DIR", "").strip()
    out.append(Path(data).expanduser() if data else
               (Path(cline_dir).expanduser() if cline_dir else home / ".cline") / "data")
    bases = []
    xdg = env.get("XDG_CONFIG_HOME", "").strip()
    bases.append(Path(xdg).expanduser() if xdg else home / ".config")
    bases.append(home / "Library" / "Application Support")
    if env.get("APPDATA"):
        bases.append(Path(env["APPDATA"]))
    for base in bases:
        for app in ("Code", "Code - Insiders"):
            for ext in ("saoudrizwan.claude-dev", "rooveterinaryinc.roo-cline"):
                out.append(base / app / "User" / "globalStorage" / ext)
    return [d / "tasks" for d in out]


def export(records: list[tuple[int, Any]], out: TextIO) -> int:
    """`ui_messages.json`'s array when the task had one, else `api_conversation_history.json`'s."""
    ui = [v for n, v in records if n <= API_BASE]
    items = ui if ui else [v for n, v in records if n > API_BASE]
    items = [v[WRAPPED] if isinstance(v, dict) and set(v) == {WRAPPED} else v for v in items]
    out.write(json.dumps(items, ensure_ascii=False, separators=(",", ":")))
    return len(items)


# ---------------------------------------------------------------------------------------------
# Reading the folder


def _inside(folder: Path, name: str) -> Path | None:
    """FOLDER/NAME if it is a file that really lies inside FOLDER (symlinks resolved)."""
    p = folder / name
    if not p.is_file():
        return None
    real, base = os.path.realpath(p), os.path.realpath(folder)
    if os.path.dirname(real) != base:
        return None
    return p


def load_array(ctx: ImportContext, path: Path) -> list:
    with open_input(path) as fh:
        data = fh.read()
    ctx.advance(len(data), str(path))
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        line = getattr(exc, "lineno", 0)
        raise InvalidInput(f"{path}: not a JSON document ({exc}); line {line}") from None
    if not isinstance(value, list):
        raise InvalidInput(f"{path}: a JSON {type(value).__name__} where Cline writes an array")
    return value


def _iso(ms: Any) -> str:
    if isinstance(ms, (int, float)) and not isinstance(ms, bool) and 0 < ms < 1e14:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + \
            f"{int(ms) % 1000:03d}Z"
    return ""




def _json_text(text: Any) -> dict:
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return {}
    try:
        v = json.loads(text)
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


def ui_usage(msg: Mapping) -> dict | None:
    """The usage of a usage-carrying `say` (Cline's getApiMetrics), or None."""
    if msg.get("type") != "say" or msg.get("say") not in USAGE_SAYS:
        return None
    info = _json_text(msg.get("text"))
    keys = ("tokensIn", "tokensOut", "cacheWrites", "cacheReads")
    if not any(isinstance(info.get(k), (int, float)) and not isinstance(info.get(k), bool)
               for k in keys):
        return None
    tin, tout = as_int(info.get("tokensIn")), as_int(info.get("tokensOut"))
    cw, cr = as_int(info.get("cacheWrites")), as_int(info.get("cacheReads"))
    usage: dict[str, Any] = {"input_tokens": tin + cw + cr, "cached_input_tokens": cr,
                             "cache_write_input_tokens": cw, "output_tokens": tout}
    if isinstance(info.get("cost"), (int, float)) and not isinstance(info.get("cost"), bool):
        usage["cost_usd"] = info["cost"]
    return usage


def metrics_usage(msg: Mapping) -> dict | None:
    """An API-history assistant message's `metrics.tokens` (prompt includes the cached part)."""
    m = msg.get("metrics")
    tok = m.get("tokens") if isinstance(m, dict) else None
    if not isinstance(tok, dict):
        return None
    usage: dict[str, Any] = {"input_tokens": as_int(tok.get("prompt")),
                             "cached_input_tokens": as_int(tok.get("cached")),
                             "output_tokens": as_int(tok.get("completion"))}
    if isinstance(m.get("cost"), (int, float)) and not isinstance(m.get("cost"), bool):
        usage["cost_usd"] = m["cost"]
    return usage


def parse_xml_tools(text: str) -> tuple[list[tuple[str, dict, int, int]], str]:
    """([(name, params, start, end)], the text outside the tool tags) of an assistant text in
    the XML tool form (cline parseAssistantMessageV2: params in order, each up to its closing
    tag; `write_to_file` content up to the last `</content>`; an unclosed tool is left out)."""
    calls: list[tuple[str, dict, int, int]] = []
    prose: list[str] = []
    pos = 0
    while True:
        m = _TOOL_OPEN.search(text, pos)
        if m is None:
            break
        name, i, params, closed = m.group(1), m.end(), {}, False
        close_tag = f"</{name}>"
        while True:
            close = text.find(close_tag, i)
            pm = _PARAM_OPEN.search(text, i)
            if pm is not None and (close == -1 or pm.start() < close):
                p = pm.group(1)
                end = text.find(f"</{p}>", pm.end())
                if end == -1:
                    break
                params[p] = text[pm.end():end].strip()
                i = end + len(p) + 3
                continue
            if close == -1:
                break
            body = text[m.end():close]
            if name in ("write_to_file", "new_rule") and "<content>" in body:
                cs = body.index("<content>") + len("<content>")
                ce = body.rfind("</content>")
                if ce >= cs:
                    params["content"] = body[cs:ce].strip()
            closed, i = True, close + len(close_tag)
            break
        if not closed:
            break
        prose.append(text[pos:m.start()])
        calls.append((name, params, m.start(), i))
        pos = i
    prose.append(text[pos:])
    return calls, "".join(prose).strip()


def result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(as_str(c.get("text")) for c in content
                         if isinstance(c, dict) and c.get("type") == "text")
    return ""


def is_error_result(text: str) -> bool:
    """Whether a tool result (without its `[name …] Result:` heading) reports a failure."""
    body = _RESULT_HEAD.sub("", text.lstrip(), count=1).lstrip()
    return body.startswith(ERROR_PREFIXES) or bool(_CLINEIGNORE.match(body))


def scan_user(content: Any) -> list[tuple[str, Any]]:
    """An API-history user message read in order: ("result", (name, text)) for a
    `[name …] Result:` text block (the text blocks after it, up to the user's words, Cline's
    notes or the environment details, are part of it), ("tool_result", block), ("words",
    text) for the user's own words (`<task>`, `<feedback>`, `<user_message>` contents, other
    plain text), ("image", block)."""
    items = [{"type": "text", "text": content}] if isinstance(content, str) else \
        [c for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    out: list[tuple[str, Any]] = []
    result: list[str] | None = None
    name = ""

    def close() -> None:
        nonlocal result
        if result is not None:
            out.append(("result", (name, "\n".join(result))))
        result = None

    for c in items:
        kind = c.get("type")
        if kind == "tool_result":
            close()
            out.append(("tool_result", c))
        elif kind in ("image", "document"):
            if result is None:
                out.append(("image", c))
        elif kind == "text":
            t = as_str(c.get("text"))
            head = _RESULT_HEAD.match(t.lstrip())
            if head:
                close()
                result, name = [t], head.group(1)
            if head:
                continue
            if t.lstrip().startswith(_USER_OPENINGS):
                if result is not None:
                    result.append(t)
                out += [("words", m.group(2)) for m in _USER_TAGS.finditer(_ENV.sub("", t))
                        if m.group(2).strip()]
                continue
            if t.lstrip().startswith(NOTE_PREFIXES):
                if t.lstrip().startswith("<environment_details>"):
                    close()
                elif result is not None:
                    result.append(t)
                continue
            if result is not None:
                result.append(t)
                continue
            words = _ENV.sub("", t).strip()
            if words:
                out.append(("words", words))
    close()
    return out


def user_request(content: Any) -> str:
    """The request in an API-history user message ("" if it holds none)."""
    return prompt_text("\n\n".join(x for k, x in scan_user(content) if k == "words"))


def _cwd(api: list) -> str:
    for msg in api[:4]:
        if isinstance(msg, dict) and msg.get("role") == "user":
            content = msg.get("content")
            blocks = [content] if isinstance(content, str) else [
                as_str(b.get("text")) for b in content if isinstance(b, dict)] if isinstance(content, list) else []
            for t in blocks:
                m = _CWD.search(t)
                if m:
                    return m.group(1).strip()
    return ""


def _title(ui: list, api: list) -> str:
    if api:
        for msg in api:
            if isinstance(msg, dict) and msg.get("role") == "user":
                text = user_request(msg.get("content"))
                if text:
                    return title_of(text)
    for i, msg in enumerate(ui):
        if isinstance(msg, dict) and msg.get("type") == "say" and (msg.get("say") in PROMPT_SAYS
                                                                   or i == 0):
            real = prompt_text(as_str(msg.get("text")))
            if real:
                return title_of(real)
    return ""


def import_file(ctx: ImportContext, path: Path) -> None:
    folder = path if path.is_dir() else path.parent
    arrays: dict[str, list] = {}
    for name in FILES:
        p = _inside(folder, name)
        if p is None:
            if (folder / name).exists() or (folder / name).is_symlink():
                ctx.warn(f"{folder.name}/{name}", 0, "not a file inside the task folder (a link "
                                                     "out of it?); not read")
            continue
        arrays[name] = load_array(ctx, p)
    if not arrays:
        raise InvalidInput(f"{folder}: no {UI_FILE} or {API_FILE} in the task folder")
    ui, api = arrays.get(UI_FILE, []), arrays.get(API_FILE, [])
    if UI_FILE not in arrays:
        ctx.report.notes.append(f"{folder.name}: no {UI_FILE}; tokens from the API history's "
                                f"metrics")
    if API_FILE not in arrays:
        ctx.report.notes.append(f"{folder.name}: no {API_FILE}; the conversation is read from "
                                f"{UI_FILE} (what the panel showed)")
    task_id = folder.name
    first_ts = next((_iso(m.get("ts")) for m in ui if isinstance(m, dict) and _iso(m.get("ts"))),
                    "") or next((_iso(m.get("ts")) for m in api if isinstance(m, dict)
                                 and _iso(m.get("ts"))), "")
    if not first_ts and task_id.isdigit():
        first_ts = _iso(int(task_id))
    b = SessionBuilder(ctx, fmt=FMT, file=folder.name, source_id=task_id, ts=first_ts,
                       nonce=task_id, origin={"format": FMT, "id": task_id},
                       title=_title(ui, api), cwd=_cwd(api))
    task = Task(ctx, b, ui_only=not api, metrics=not ui)
    for j, msg in enumerate(api):
        task.api(API_BASE + j + 1, msg)
    for i, msg in enumerate(ui):
        task.ui(i + 1, msg)
    b.finish()


# ---------------------------------------------------------------------------------------------
# Mapping


class Task:
    def __init__(self, ctx: ImportContext, b: SessionBuilder, ui_only: bool,
                 metrics: bool) -> None:
        self.ctx = ctx
        self.b = b
        self.ui_only = ui_only
        self.metrics = metrics  # no ui_messages.json: usage from the API history's metrics
        self.calls: dict[str, tuple[str, str]] = {}    # tool call id -> (requested event, name)
        self.open: list[tuple[str, str]] = []  # (id, name): the last assistant message's calls
        self.model = ""
        # ui-only
        self.ui_open: list[tuple[str, str, str]] = []  # (tcid, name, kind) awaiting a result
        self.last_ask_tool = ""

    def _begin(self, n: int, msg: Any) -> tuple[dict, str]:
        value = msg if isinstance(msg, dict) else {WRAPPED: msg}
        # the text is kept only for a value the store cannot encode (a huge integer): as JSON
        self.b.begin(n, value, json.dumps(value, ensure_ascii=False))
        return value, self.b.ts(_iso(msg.get("ts")) if isinstance(msg, dict) else "")

    # -- api_conversation_history.json ---------------------------------------------------------
    def api(self, n: int, msg: Any) -> None:
        value, ts = self._begin(n, msg)
        b = self.b
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            b.ctx.warn(b.file, n, f"{API_FILE} element {n - API_BASE - 1} is not a message; kept")
            b.append(f"{FMT}:api_malformed", "system", {}, ts=ts)
            return
        info = msg.get("modelInfo")
        if isinstance(info, dict) and as_str(info.get("modelId")):
            self.model = info["modelId"]
        if msg["role"] == "assistant":
            self._assistant(n, msg, ts)
        else:
            self._user(n, msg, ts)

    def _assistant(self, n: int, msg: dict, ts: str) -> None:
        b = self.b
        content = msg.get("content")
        items = [{"type": "text", "text": content}] if isinstance(content, str) else \
            [c for c in content if isinstance(c, dict)] if isinstance(content, list) else []
        blocks: list = []
        calls: list[tuple[str, str, dict]] = []
        texts: list[str] = []
        for k, c in enumerate(items):
            kind = c.get("type")
            if kind == "text":
                found, prose = parse_xml_tools(as_str(c.get("text")))
                if prose:
                    blocks.append(TextBlock(prose))
                    texts.append(prose)
                for x, (name, params, _a, _z) in enumerate(found):
                    tcid = f"cline-xml-{n}-{k}-{x}"
                    calls.append((tcid, name, params))
            elif kind == "thinking":
                blocks.append(ThinkingBlock(as_str(c.get("thinking")), as_str(c.get("signature"))))
            elif kind == "redacted_thinking":
                blocks.append(ThinkingBlock("", as_str(c.get("data"))))
            elif kind == "tool_use":
                tcid = as_str(c.get("id")) or f"cline-tool-{n}-{k}"
                args = c.get("input") if isinstance(c.get("input"), dict) else {"input": c.get("input")}
                calls.append((tcid, as_str(c.get("name")), args))
            elif kind == "image":
                blocks.append(ImageBlock(media_type=as_str((c.get("source") or {}).get("media_type"))
                                         if isinstance(c.get("source"), dict) else ""))
        blocks += [ToolCallBlock(tcid, name, args) for tcid, name, args in calls]
        self.open = [(tcid, name) for tcid, name, _args in calls]
        meta = {"model": self.model} if self.model else None
        mid = b.message("assistant", blocks, meta=meta)
        payload: dict[str, Any] = {"text": preview("\n".join(texts))}
        if self.model:
            payload["model"] = self.model
        if self.metrics:
            usage = metrics_usage(msg)
            if usage is not None:
                payload["usage"] = usage
        if as_str(msg.get("id")):
            payload["response_id"] = msg["id"]
        b.append("ModelResponseReceived", "model", payload, {"message_id": mid}, ts)
        for tcid, name, args in calls:
            eid = b.append("ToolCallRequested", "model", tool_requested_payload(tcid, name, args),
                           {"tool_call_id": tcid, "message_id": mid}, ts)
            self.calls[tcid] = (eid, name)

    def _user(self, n: int, msg: dict, ts: str) -> None:
        b = self.b
        results: list[tuple[str, str, bool]] = []  # (tcid, text, is_error)
        words: list[str] = []
        images = 0
        for kind, x in scan_user(msg.get("content")):
            if kind == "tool_result":
                tcid = as_str(x.get("tool_use_id"))
                text = result_text(x.get("content"))
                self.open = [c for c in self.open if c[0] != tcid]
                results.append((tcid, text, x.get("is_error") is True or is_error_result(text)))
            elif kind == "result":
                name, text = x
                pick = next((c for c in self.open if c[1] == name), None) or \
                    next((c for c in self.open if c[1].endswith("_" + name)), None) or \
                    (self.open[0] if self.open else None)
                if pick is None:
                    b.ctx.warn(b.file, n, f"a [{name}] result with no call open; kept")
                    continue
                self.open.remove(pick)
                results.append((pick[0], text, is_error_result(text)))
            elif kind == "words":
                words.append(x)
            elif kind == "image":
                images += 1
        for tcid, text, err in results:
            call = self.calls.pop(tcid, None)
            if call is None:
                b.ctx.warn(b.file, n, f"a tool result for {tcid!r}, a call this task never "
                                      f"made; kept")
                b.append(f"{FMT}:orphan_result", "tool", {"tool_call_id": tcid}, ts=ts)
            else:
                b.tool_result(tcid, call[1], call[0], text, err, ts)
        text = "\n\n".join(words)
        request = prompt_text(text)
        if request or images:
            mid = b.message("user", [TextBlock(text)] + [ImageBlock() for _ in range(images)])
            b.append("UserPromptSubmitted", "user", {"text": preview(request or text)},
                     {"message_id": mid}, ts)
        elif text:
            mid = b.message("user", [TextBlock(text)], meta={"cline": "not a request"})
            b.append("MessageAdded", "system", {"role": "user", "text": preview(text)},
                     {"message_id": mid}, ts)
        elif not results:
            b.append(f"{FMT}:user", "user", {}, ts=ts)

    # -- ui_messages.json ----------------------------------------------------------------------
    def ui(self, n: int, msg: Any) -> None:
        value, ts = self._begin(n, msg)
        b = self.b
        if not isinstance(msg, dict) or msg.get("type") not in ("say", "ask"):
            b.ctx.warn(b.file, n, f"{UI_FILE} element {n - 1} is not a say/ask message; kept")
            b.append(f"{FMT}:ui_malformed", "system", {}, ts=ts)
            return
        typ = msg["type"]
        kind = as_str(msg.get(typ)) or "unknown"
        usage = ui_usage(msg)
        if usage is not None:
            if self.ui_only:
                self._close_ui(ts, None)
            payload: dict[str, Any] = {"text": "", "usage": usage, "response_id": f"cline-ui-{n}",
                                       "kind": kind}
            if self.model:
                payload["model"] = self.model
            b.append("ModelResponseReceived", "model", payload, ts=ts)
            return
        if not self.ui_only:
            b.append(f"{FMT}:{kind}", "system", {"type": typ, **({"text": preview(as_str(msg.get("text")), 200)}
                                                                 if msg.get("text") else {})}, ts=ts)
            return
        self._ui_conversation(n, msg, typ, kind, ts)

    def _ui_conversation(self, n: int, msg: dict, typ: str, kind: str, ts: str) -> None:
        b = self.b
        text = as_str(msg.get("text"))
        if typ == "say" and (kind in PROMPT_SAYS or n == 1):  # element 0 is the task (webview)
            if kind == "user_feedback" and self.last_ask_tool:
                self._close_ui(ts, "The user denied this operation.", only=self.last_ask_tool)
            self.last_ask_tool = ""
            images = msg.get("images") if isinstance(msg.get("images"), list) else []
            mid = b.message("user", [TextBlock(text)] + [ImageBlock() for _ in images])
            b.append("UserPromptSubmitted", "user", {"text": preview(prompt_text(text) or text)},
                     {"message_id": mid}, ts)
            return
        self.last_ask_tool = ""
        if typ == "say" and kind in ("text", "reasoning", "completion_result") or \
                typ == "ask" and kind in ("completion_result", "followup", "plan_mode_respond",
                                          "act_mode_respond"):
            if kind in ("followup", "plan_mode_respond", "act_mode_respond"):
                info = _json_text(text)
                words = as_str(info.get("question")) or as_str(info.get("response")) or text
                opts = info.get("options")
                if isinstance(opts, list) and opts:
                    words += "\n" + "\n".join(f"- {o}" for o in opts if isinstance(o, str))
                text = words
            block = ThinkingBlock(text) if kind == "reasoning" else TextBlock(text)
            mid = b.message("assistant", [block], meta={"cline": kind})
            payload: dict[str, Any] = {"text": preview(text) if kind != "reasoning" else ""}
            if self.model:
                payload["model"] = self.model
            b.append("ModelResponseReceived", "model", payload, {"message_id": mid}, ts)
            return
        call = self._ui_call(kind, typ, text)
        if call is not None:
            name, args = call
            tcid = f"cline-ui-{n}"
            mid = b.message("assistant", [ToolCallBlock(tcid, name, args)], meta={"cline": kind})
            eid = b.append("ToolCallRequested", "model", tool_requested_payload(tcid, name, args),
                           {"tool_call_id": tcid, "message_id": mid}, ts)
            self.calls[tcid] = (eid, name)
            if name == "focus_chain":
                self._result(tcid, "task progress recorded", False, ts)
                return
            self.ui_open.append((tcid, name, kind))
            if typ == "ask" and kind == "tool":
                self.last_ask_tool = tcid
            return
        result_for = {"command_output": ("execute_command",),
                      "browser_action_result": ("browser_action",),
                      "mcp_server_response": ("use_mcp_tool", "access_mcp_resource")}.get(kind)
        if result_for is not None:
            open_ = [c for c in self.ui_open if c[1] in result_for]
            if open_:
                tcid = open_[-1][0]
                self.ui_open.remove(open_[-1])
                self._result(tcid, text, False, ts)
                return
        if typ == "say" and kind in ("diff_error", "clineignore_error"):
            open_ = [c for c in self.ui_open if c[2] == "tool"]
            if open_:
                self.ui_open.remove(open_[-1])
                self._result(open_[-1][0], text or kind, True, ts)
                return
        b.append(f"{FMT}:{kind}", "system", {"type": typ, **({"text": preview(text, 200)} if text else {})},
                 ts=ts)

    def _ui_call(self, kind: str, typ: str, text: str) -> tuple[str, dict] | None:
        if kind == "tool":
            info = _json_text(text)
            tool = as_str(info.get("tool"))
            name = UI_TOOLS.get(tool, tool or "tool")
            return name, dict(info)
        if kind == "command":
            return "execute_command", {"command": text}
        if kind == "browser_action_launch":
            return "browser_action", {"action": "launch", "url": text}
        if kind == "browser_action" and typ == "say":
            return "browser_action", _json_text(text) or {"action": text}
        if kind == "use_mcp_server":
            info = _json_text(text)
            return ("access_mcp_resource" if info.get("type") == "access_mcp_resource"
                    else "use_mcp_tool"), info
        if kind == "new_task":
            return "new_task", {"context": text}
        if kind == "task_progress":
            return "focus_chain", {"task_progress": text}
        return None

    def _close_ui(self, ts: str, denial: str | None, only: str = "") -> None:
        """Answer the open ui calls: the next request carried their results (ok), or the user
        turned the approval question down (`denial`, only that call)."""
        for c in list(self.ui_open):
            if only and c[0] != only:
                continue
            self.ui_open.remove(c)
            self._result(c[0], denial or "(the next API request carried this call's result)",
                         denial is not None, ts)

    def _result(self, tcid: str, text: str, is_error: bool, ts: str) -> None:
        call = self.calls.pop(tcid, None)
        if call is not None:
            self.b.tool_result(tcid, call[1], call[0], text, is_error, ts)
