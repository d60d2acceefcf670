// Finds and reads a Gemini CLI session with gemini-cli's own code (@google/gemini-cli-core,
// pinned in package.json) and prints what `gemini --resume` would load, as JSON on stdout.
// Runs offline: no model, no auth, only the storage and session code.
//
//   GEMINI_CLI_HOME=DIR node gemini_reader.mjs PROJECT_DIR SESSION_ID
//   node gemini_reader.mjs --file RECORDING      (a subagent's recording, loaded directly)
//
// - Storage(PROJECT_DIR).initialize(): gemini's project registry picks the project's temp dir
//   (~/.gemini/tmp/<slug>), migrating a legacy sha256-named dir into it, as the CLI does at
//   start;
// - Storage.listProjectChatFiles(): the chat files the session browser / --resume list;
// - loadConversationRecord(file): the loader the CLI's resume path calls;
// - convertSessionToClientHistory(messages): the Gemini API history the resumed chat is
//   seeded with (model turns with functionCall parts, user turns with functionResponse parts).
import { join } from "node:path";
import { Storage } from "@google/gemini-cli-core/dist/src/config/storage.js";
import { loadConversationRecord } from "@google/gemini-cli-core/dist/src/services/chatRecordingService.js";
import { convertSessionToClientHistory } from "@google/gemini-cli-core/dist/src/utils/sessionUtils.js";

function part(p) {
	if (typeof p.text === "string") return { text: p.text, ...(p.thought ? { thought: true } : {}) };
	if (p.functionCall) return { functionCall: { id: p.functionCall.id, name: p.functionCall.name, args: p.functionCall.args } };
	if (p.functionResponse) return { functionResponse: { id: p.functionResponse.id, name: p.functionResponse.name, response: p.functionResponse.response } };
	if (p.inlineData) return { inlineData: { mimeType: p.inlineData.mimeType } };
	return { other: Object.keys(p) };
}

async function find(projectDir, sessionId) {
	const storage = new Storage(projectDir);
	await storage.initialize();
	const tempDir = storage.getProjectTempDir();
	const files = await storage.listProjectChatFiles();
	const out = { projectTempDir: tempDir, listed: files.map((f) => f.filePath), found: null };
	for (const f of files) {
		const record = await loadConversationRecord(join(tempDir, f.filePath));
		if (record && record.sessionId === sessionId) {
			out.found = { file: f.filePath, record };
			break;
		}
	}
	return out;
}

const args = process.argv.slice(2);
let out;
if (args[0] === "--file" && args[1]) {
	// a subagent's recording (chats/<parent id>/<agent id>.jsonl: not in the chat list, loaded
	// by the same loader when its parent's call is opened)
	const record = await loadConversationRecord(args[1]);
	out = { found: record ? { file: args[1], record } : null };
} else if (args.length === 2 && process.env.GEMINI_CLI_HOME) {
	out = await find(args[0], args[1]);
} else {
	console.error("usage: GEMINI_CLI_HOME=DIR node gemini_reader.mjs PROJECT_DIR SESSION_ID\n" +
		"       node gemini_reader.mjs --file RECORDING");
	process.exit(2);
}
const found = out.found;
out.found = Boolean(found);
if (found) {
	const { record } = found;
	out.file = found.file;
	out.sessionId = record.sessionId;
	out.projectHash = record.projectHash;
	out.kind = record.kind ?? null;
	out.summary = record.summary ?? null;
	out.firstUserMessage = record.firstUserMessage ?? null;
	out.hasResumableContent = record.hasResumableContent;
	out.messages = record.messages.map((m) => ({
		id: m.id,
		type: m.type,
		toolCalls: (m.toolCalls || []).map((c) => ({ id: c.id, name: c.name, status: c.status, agentId: c.agentId ?? null })),
	}));
	out.history = convertSessionToClientHistory(record.messages)
		.map((h) => ({ id: h.id, role: h.content.role, parts: (h.content.parts || []).map(part) }));
}
process.stdout.write(JSON.stringify(out));
