// Reads a pi session file with pi's own code (@mariozechner/pi-coding-agent, pinned in
// package.json) and prints what pi would resume from it, as JSON on stdout.
//
//   node pi_reader.mjs SESSION_FILE [CWD]
//
// - SessionManager.open(file): what `pi --session <file>` does to load a session;
// - buildSessionContext(): the messages pi sends to the model from the current leaf (the last
//   entry of the file), and, for every leaf of the tree, the same from that leaf (a branch
//   the user can /tree-navigate to);
// - getTree()/getEntries(): the entry ids, parentIds and compaction records as pi sees them;
// - with CWD: SessionManager.list(CWD) under $PI_CODING_AGENT_DIR, so the test knows that
//   `pi --resume` / `pi --session <id>` in that directory lists the file (in the folder pi's
//   main.js picks: PI_CODING_AGENT_SESSION_DIR, else the sessionDir setting, else per cwd).
import { resolve } from "node:path";
import { homedir } from "node:os";
import { SessionManager, SettingsManager, buildSessionContext } from "@mariozechner/pi-coding-agent";

function text(content) {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content.filter((c) => c && c.type === "text").map((c) => c.text).join("\n");
}

function message(m) {
	const out = { role: m.role, text: text(m.content) };
	if (m.role === "assistant") {
		out.toolCalls = (m.content || []).filter((c) => c.type === "toolCall")
			.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }));
		out.thinking = (m.content || []).filter((c) => c.type === "thinking")
			.map((c) => ({ text: c.thinking, signed: Boolean(c.thinkingSignature) }));
		out.provider = m.provider;
		out.model = m.model;
	} else if (m.role === "toolResult") {
		out.toolCallId = m.toolCallId;
		out.toolName = m.toolName;
		out.isError = Boolean(m.isError);
		out.images = (m.content || []).filter((c) => c.type === "image").length;
	} else if (m.role === "compactionSummary" || m.role === "branchSummary") {
		out.text = m.summary;
	} else if (m.role === "user") {
		out.images = Array.isArray(m.content) ? m.content.filter((c) => c.type === "image").length : 0;
	}
	return out;
}

function entry(e) {
	const out = { id: e.id, parentId: e.parentId, type: e.type };
	if (e.type === "message") out.message = message(e.message);
	if (e.type === "custom_message") out.text = text(e.content);
	if (e.type === "compaction") {
		out.firstKeptEntryId = e.firstKeptEntryId;
		out.summary = e.summary;
		out.tokensBefore = e.tokensBefore;
	}
	if (e.type === "model_change") out.model = `${e.provider}/${e.modelId}`;
	return out;
}

const [file, cwd] = process.argv.slice(2);
if (!file) {
	console.error("usage: node pi_reader.mjs SESSION_FILE [CWD]");
	process.exit(2);
}
const sm = SessionManager.open(file);
const entries = sm.getEntries();
const header = sm.getHeader();
const children = new Map();
for (const e of entries) children.set(e.parentId, (children.get(e.parentId) || 0) + 1);
const leaves = entries.filter((e) => !children.has(e.id)).map((e) => e.id);
const result = {
	header,
	sessionId: sm.getSessionId(),
	leafId: sm.getLeafId(),
	entries: entries.map(entry),
	roots: sm.getTree().map((n) => n.entry.id),
	context: sm.buildSessionContext().messages.map(message),
	branches: Object.fromEntries(leaves.map((id) => [id, buildSessionContext(entries, id).messages.map(message)])),
};
if (cwd) {
	if (!process.env.PI_CODING_AGENT_DIR) {
		console.error("listing needs PI_CODING_AGENT_DIR (a test must not touch ~/.pi)");
		process.exit(2);
	}
	// the session folder as pi's main.js picks it: PI_CODING_AGENT_SESSION_DIR, else the
	// sessionDir setting (project .pi/settings.json over the agent dir's), else per-cwd default
	const env = process.env.PI_CODING_AGENT_SESSION_DIR;
	const sessionDir = env ? env.replace(/^~(?=$|\/)/, homedir()) : SettingsManager.create(cwd).getSessionDir();
	const listed = await SessionManager.list(cwd, sessionDir);
	result.listed = listed.some((s) => resolve(s.path) === resolve(file));
	result.listedIds = listed.map((s) => s.id);
}
process.stdout.write(JSON.stringify(result));
