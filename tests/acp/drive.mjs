// Drives `rummy acp` with the official ACP TypeScript SDK, as an editor would, through one
// scenario, and prints what the editor saw as one JSON object on stdout (tests/it/acp.rs
// runs it and asserts on it).
//
//   node drive.mjs <rummy binary> <scenario> <project dir>
//
// The agent inherits this process's environment (RUMMY_HOME, the scripted model's
// OPENAI_BASE_URL, SSL_CERT_FILE, ...); with ACP_URL set it is `rummy acp --url $ACP_URL`
// (its token in RUMMY_AUTH_TOKEN, or `--token-file $ACP_TOKEN_FILE`). Scenarios:
//   stream      a prompt; the editor offers no file system and no terminal
//   edit-allow  a prompt whose edit the editor allows and writes (fs/write_text_file)
//   edit-reject a prompt whose edit the editor rejects
//   cancel      a prompt cancelled while the model is still thinking
//   malformed   a line that is not JSON, then a whole session
//   ask-mode    session/set_mode to ask (and to a mode that does not exist), then a prompt
//   command     a prompt whose command the editor allows and runs in its terminal
//   sign-in     session/new refused for want of a token; then the token ($ACP_SIGN_IN_TOKEN)
//               written to $ACP_TOKEN_FILE, `authenticate` with a method not offered and
//               with the one offered, and the stream scenario
//   resources   a prompt of text, a link to a.txt, the unsaved buffer of b.txt ("unsaved\n")
//               and a link to ../secret.txt (outside the project)

import { spawn } from "node:child_process";
import { writeFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [binary, scenario, project] = process.argv.slice(2);
const seen = {
  scenario,
  initialize: null,
  session: null,
  updates: [],
  permissions: [],
  writes: [],
  terminals: [],
  stopReasons: [],
  errors: [],
  rawErrors: [],
  exit: null,
};

const args = process.env.ACP_URL ? ["acp", "--url", process.env.ACP_URL] : ["acp"];
if (process.env.ACP_TOKEN_FILE) args.push("--token-file", process.env.ACP_TOKEN_FILE);
const child = spawn(binary, args, { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

// stdout is split into lines twice: once for the SDK, once to keep the raw error replies
// (a reply to a line that was not JSON reaches no request of the SDK's).
let buffered = "";
const lines = new TransformStream({
  transform(chunk, controller) {
    buffered += new TextDecoder().decode(chunk);
    let end;
    while ((end = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      try {
        const message = JSON.parse(line);
        if (message.error && message.id === null) seen.rawErrors.push(message.error);
      } catch {
        seen.errors.push({ stdoutNotJson: line });
      }
    }
    controller.enqueue(chunk);
  },
});
const input = Readable.toWeb(child.stdout).pipeThrough(lines);
const output = Writable.toWeb(child.stdin);

const offersFiles = scenario === "edit-allow";
const offersTerminal = scenario === "command";
const running = new Map();
const decision = scenario === "edit-reject" ? "reject" : "allow";

const app = acp
  .client({ name: "rummy-acp-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    seen.updates.push(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    seen.permissions.push(params);
    const option = params.options.find((o) => o.optionId === decision);
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    seen.writes.push(params);
    mkdirSync(dirname(params.path), { recursive: true });
    writeFileSync(params.path, params.content);
    return {};
  })
  .onRequest(acp.methods.client.terminal.create, ({ params }) => {
    const terminalId = `term-${running.size + 1}`;
    seen.terminals.push({ created: params });
    const process = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined });
    const terminal = { output: "", exit: null };
    process.stdout.on("data", (data) => (terminal.output += data));
    process.stderr.on("data", (data) => (terminal.output += data));
    terminal.exited = new Promise((resolve) =>
      process.on("close", (exitCode, signal) => resolve((terminal.exit = { exitCode, signal }))),
    );
    running.set(terminalId, terminal);
    return { terminalId };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
    seen.terminals.push({ waited: params.terminalId });
    return await running.get(params.terminalId).exited;
  })
  .onRequest(acp.methods.client.terminal.output, ({ params }) => {
    const terminal = running.get(params.terminalId);
    seen.terminals.push({ output: params.terminalId });
    return { output: terminal.output, truncated: false, exitStatus: terminal.exit };
  })
  .onRequest(acp.methods.client.terminal.release, ({ params }) => {
    seen.terminals.push({ released: params.terminalId });
    running.delete(params.terminalId);
    return {};
  });

async function attempt(what, promise) {
  try {
    return await promise;
  } catch (error) {
    seen.errors.push({ what, code: error.code, message: error.message, data: error.data });
    return null;
  }
}

async function run(ctx) {
  seen.initialize = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: offersFiles, writeTextFile: offersFiles }, terminal: offersTerminal },
  });
  if (scenario === "sign-in") {
    await attempt("session/new unsigned", ctx.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] }));
    writeFileSync(process.env.ACP_TOKEN_FILE, process.env.ACP_SIGN_IN_TOKEN + "\n");
    await attempt("authenticate other", ctx.request(acp.methods.agent.authenticate, { methodId: "password" }));
    seen.authenticate = await ctx.request(acp.methods.agent.authenticate, { methodId: "token-file" });
  }
  seen.session = await attempt("session/new", ctx.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] }));
  if (!seen.session) return;
  const sessionId = seen.session.sessionId;
  const prompt = (text, more = []) =>
    attempt("prompt", ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text }, ...more],
    })).then((response) => {
      if (response) seen.stopReasons.push(response.stopReason);
    });
  switch (scenario) {
    case "cancel": {
      const turn = prompt("take your time");
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
      await turn;
      break;
    }
    case "ask-mode":
      await attempt("set_mode plan", ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "plan" }));
      await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "ask" });
      await prompt("what is in a.txt?");
      break;
    case "resources":
      await prompt("compare these", [
        { type: "resource_link", name: "a.txt", uri: `file://${project}/a.txt` },
        { type: "resource", resource: { uri: `file://${project}/b.txt`, text: "unsaved\n" } },
        { type: "resource_link", name: "secret.txt", uri: `file://${dirname(project)}/secret.txt` },
      ]);
      break;
    default:
      await prompt("please do the task");
  }
  await attempt("unknown session", ctx.request(acp.methods.agent.session.prompt, {
    sessionId: "no-such-session",
    prompt: [{ type: "text", text: "hello" }],
  }));
}

if (scenario === "malformed") {
  child.stdin.write("this is not json\n");
  child.stdin.write('{"jsonrpc":"2.0","id":7,"method":\n');
}
await app.connectWith(acp.ndJsonStream(output, input), run);
if (!child.stdin.writableEnded) child.stdin.end();
seen.exit = await exited;
process.stdout.write(JSON.stringify(seen) + "\n");
