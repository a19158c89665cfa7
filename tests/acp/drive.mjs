// Drives `rummy acp` with the official ACP TypeScript SDK, as an editor would, through one
// scenario, and prints what the editor saw as one JSON object on stdout (tests/it/acp.rs
// runs it and asserts on it).
//
//   node drive.mjs <rummy binary> <scenario> <project dir>
//
// The agent inherits this process's environment (RUMMY_HOME, the scripted model's
// OPENAI_BASE_URL, SSL_CERT_FILE, ...); with ACP_URL set it is `rummy acp --url $ACP_URL`
// (its token in RUMMY_AUTH_TOKEN, or `--token-file $ACP_TOKEN_FILE`); $ACP_MCP_SERVERS (a
// JSON array, as ACP writes them) are the editor's MCP servers of session/new. Scenarios:
//   stream      a prompt; the editor offers no file system and no terminal
//   edit-allow  a prompt whose edit the editor allows and writes (fs/write_text_file)
//   edit-reject a prompt whose edit the editor rejects
//   cancel      a prompt cancelled while the model is still thinking
//   malformed   a line that is not JSON, then a whole session
//   ask-mode    session/set_mode to ask (and to a mode that does not exist), then a prompt
//   command     a prompt whose command the editor allows and runs in its terminal
//   slash       three prompts: `/sql_style write the query`, `/persona:pirate`, `say hi`
//   model       session/set_config_option: the model `second` (and one that does not
//               exist), then a prompt
//   question-form  a prompt whose question the editor answers in a form (it offers
//               elicitation forms): "teal, actually"
//   question-chat  a prompt whose question (no suggested answers) the person answers in
//               the next prompt ("It is called Nimbus")
//   load        session/load of the session $ACP_LOAD (its replay: the updates before the
//               answer, counted in `replayed`), session/list, a load of a session that does
//               not exist, then a prompt in the loaded session
//   sign-in     session/new refused for want of a token; then the token ($ACP_SIGN_IN_TOKEN)
//               written to $ACP_TOKEN_FILE, `authenticate` with a method not offered and
//               with the one offered, and the stream scenario
//   resources   a prompt of text, a link to a.txt, the unsaved buffer of b.txt ("unsaved\n")
//               and a link to ../secret.txt (outside the project)
//   idle-cancel session/cancel before any prompt, a prompt, session/cancel after its turn
//               ended, a second prompt (each cancel followed by a session/set_mode, a round
//               trip behind it)
//   cancel-asking  a prompt whose permission request the editor answers by cancelling the
//               turn: session/cancel, then the request answered `cancelled`
//   command-cancel a prompt whose command the editor allows and runs in its terminal; it
//               cancels the turn while the command runs (and kills the terminal when asked)
//   command-always two prompts whose commands the editor runs in its terminal: it allows
//               the first always (`allow_always`), and is not asked about the second
//   withdrawn   a prompt whose edit the editor (which writes files) is asked about: it makes
//               $ACP_MARKER/asking, and allows it only once $ACP_MARKER/settled exists (the
//               test's other client settled it meanwhile)
//   revert-idle a prompt whose edit the editor allows and writes; then ri-done, and once
//               the tool call of a revert raised on the idle run (by the test's other
//               client) is shown (or a minute passed), `beforePrompt` (the permission
//               requests so far, whether it was shown) and a
//               second prompt, at whose start it is asked about the revert: it allows it
//               and writes the file back
//   cancel-mine a prompt the editor cancels once $ACP_MARKER/cancel exists (the test's
//               other client queued a prompt of its own behind it meanwhile)
//   story-a     editor A of the three-client story (tests/it/acp/three_clients.rs), each
//               step gated on a marker in $ACP_MARKER: a prompt whose edit it is asked
//               about (it makes a-asking and allows only once a-settled exists); then
//               a-done; once a-cancel exists a session/cancel (a round trip behind it),
//               then a-cancelled; once a-second exists a second prompt, whose edit it
//               allows at once and writes
//   story-b     editor B of the story (drive.py only; it offers a terminal): once b-load
//               exists, session/load of the run it names; a prompt whose command it is
//               asked about (it makes b-asking and answers, late, once b-answer exists),
//               then a round trip and b-answered; once b-second exists a second prompt,
//               whose command it allows at once and runs in its terminal
//   console-a   editor A of the story with the console (tests/it/acp/console_story.rs):
//               a prompt whose edit it is asked about (it makes ca-asking and allows, late,
//               once ca-settled exists: the console approved it meanwhile); then ca-done;
//               once ca-again exists a second prompt (queued behind editor B's, and aborted)
//   console-b   editor B of that story (drive.py only): once cb-load exists, session/load
//               of the run it names; a prompt whose command it is asked about (it makes
//               cb-asking and allows it once cb-answer exists, then runs it in its
//               terminal); then cb-done; once cb-again exists a second prompt (aborted)

import { spawn } from "node:child_process";
import { existsSync, writeFileSync, mkdirSync } from "node:fs";
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
  elicitations: [],
  writes: [],
  terminals: [],
  stopReasons: [],
  replayed: null,
  configured: null,
  listed: null,
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

const offersFiles = ["edit-allow", "withdrawn", "story-a", "console-a", "revert-idle"].includes(scenario);
// The marker `name` of $ACP_MARKER, made and waited for (at most a minute: a test that
// failed meanwhile makes none).
const marker = (name) => `${process.env.ACP_MARKER}/${name}`;
const mark = (name) => writeFileSync(marker(name), "");
async function until(name) {
  for (let waited = 0; waited < 60000 && !existsSync(marker(name)); waited += 20) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
// The withdrawn scenario's person answers once the test has made $ACP_MARKER/settled (the
// other client settled the proposal), or after 20 s: a person slower than another.
async function settledElsewhere() {
  for (let waited = 0; waited < 20000; waited += 20) {
    if (existsSync(`${process.env.ACP_MARKER}/settled`)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
const offersTerminal = ["command", "command-cancel", "command-always"].includes(scenario);
// The connection, for the handlers that cancel the turn.
let connection = null;
const running = new Map();
const decision =
  { "edit-reject": "reject", "question-chat": "in-chat", "command-always": "always" }[scenario] ?? "allow";
const offersForms = scenario === "question-form";

const app = acp
  .client({ name: "rummy-acp-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    seen.updates.push(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
    seen.permissions.push(params);
    if (scenario === "withdrawn") {
      writeFileSync(`${process.env.ACP_MARKER}/asking`, "");
      await settledElsewhere();
    }
    if (scenario === "story-a" && seen.permissions.length === 1) {
      mark("a-asking");
      await until("a-settled");
    }
    if (scenario === "console-a" && seen.permissions.length === 1) {
      mark("ca-asking");
      await until("ca-settled");
    }
    if (scenario === "cancel-asking") {
      await connection.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
      return { outcome: { outcome: "cancelled" } };
    }
    const option = params.options.find((o) => o.optionId === decision);
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest(acp.methods.client.elicitation.create, ({ params }) => {
    seen.elicitations.push(params);
    return { action: "accept", content: { answer: "teal, actually" } };
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
    // In a process group of its own, which terminal/kill kills whole, as an editor's does.
    const process = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined, detached: true });
    const terminal = { output: "", exit: null, process };
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
    if (scenario === "command-cancel") {
      await connection.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
    }
    return await running.get(params.terminalId).exited;
  })
  .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
    seen.terminals.push({ killed: params.terminalId });
    globalThis.process.kill(-running.get(params.terminalId).process.pid, "SIGKILL");
    return {};
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
  connection = ctx;
  seen.initialize = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {
      fs: { readTextFile: offersFiles, writeTextFile: offersFiles },
      terminal: offersTerminal,
      ...(offersForms ? { elicitation: { form: {} } } : {}),
    },
  });
  if (scenario === "sign-in") {
    await attempt("session/new unsigned", ctx.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] }));
    writeFileSync(process.env.ACP_TOKEN_FILE, process.env.ACP_SIGN_IN_TOKEN + "\n");
    await attempt("authenticate other", ctx.request(acp.methods.agent.authenticate, { methodId: "password" }));
    seen.authenticate = await ctx.request(acp.methods.agent.authenticate, { methodId: "token-file" });
  }
  if (scenario === "load") {
    const sessionId = process.env.ACP_LOAD;
    const loaded = await attempt("session/load", ctx.request(acp.methods.agent.session.load, { sessionId, cwd: project, mcpServers: [] }));
    seen.replayed = seen.updates.length;
    seen.listed = await attempt("session/list", ctx.request(acp.methods.agent.session.list, { cwd: project }));
    await attempt("load unknown", ctx.request(acp.methods.agent.session.load, { sessionId: "no_such_run", cwd: project, mcpServers: [] }));
    seen.session = loaded && { sessionId, ...loaded };
  } else {
    const mcpServers = JSON.parse(process.env.ACP_MCP_SERVERS ?? "[]");
    seen.session = await attempt("session/new", ctx.request(acp.methods.agent.session.new, { cwd: project, mcpServers }));
  }
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
    case "cancel-mine": {
      // Cancels its prompt once the test has made $ACP_MARKER/cancel (another client's
      // prompt is queued behind it then).
      const turn = prompt("my question");
      while (!existsSync(`${process.env.ACP_MARKER}/cancel`)) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
      await turn;
      break;
    }
    case "story-a":
      await prompt("edit a.txt");
      mark("a-done");
      await until("a-cancel");
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
      await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "act" });
      mark("a-cancelled");
      await until("a-second");
      await prompt("edit a.txt again");
      break;
    case "revert-idle": {
      await prompt("edit a.txt");
      mark("ri-done");
      const shown = () =>
        seen.updates.some((u) => u.sessionUpdate === "tool_call" && u.toolCallId.startsWith("set://revert/"));
      for (let waited = 0; waited < 60000 && !shown(); waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      seen.beforePrompt = { permissions: seen.permissions.length, shown: shown() };
      await prompt("anything else?");
      break;
    }
    case "console-a":
      await prompt("edit a.txt");
      mark("ca-done");
      await until("ca-again");
      await prompt("edit a.txt again");
      break;
    case "ask-mode":
      await attempt("set_mode plan", ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "plan" }));
      await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "ask" });
      await prompt("what is in a.txt?");
      break;
    case "load":
      await prompt("and now the second part");
      break;
    case "model":
      seen.configured = await attempt("set model second", ctx.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "model", value: "second" }));
      await attempt("set model nope", ctx.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "model", value: "nope" }));
      await prompt("which model are you?");
      break;
    case "question-chat":
      await prompt("please do the task");
      await prompt("It is called Nimbus");
      break;
    case "command-always":
      await prompt("please do the task");
      await prompt("and once more");
      break;
    case "slash":
      await prompt("/sql_style write the query");
      await prompt("/persona:pirate");
      await prompt("say hi");
      break;
    case "idle-cancel": {
      const idleCancel = async () => {
        await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
        await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "act" });
      };
      await idleCancel();
      await prompt("please do the task");
      await idleCancel();
      await prompt("and now the second part");
      break;
    }
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
