#!/usr/bin/env node
// A rummy plugin process in Node.js, no dependencies: a tool <shout>text</shout> that
// answers the text in capitals, and a method shout/ping.
const readline = require("node:readline");

const manifest = {
  name: "shout",
  version: "1.0.0",
  tools: [{ name: "shout", doc: "## <shout>[text]</shout> - Shout a text\nExample: <shout>hi</shout>" }],
  methods: [{ name: "shout/ping", description: "Answers pong.", role: "viewer" }],
};

function handle(method, params) {
  if (method === "initialize") return manifest;
  if (method === "tool/call") return { status: 200, body: params.body.toUpperCase() };
  if (method === "method/call" && params.method === "shout/ping") return "pong";
  throw { code: -32601, message: `no method ${method}` };
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  if (message.id === undefined) return; // a notification
  let reply;
  try {
    reply = { result: handle(message.method, message.params || {}) };
  } catch (error) {
    reply = { error: { code: error.code || -32603, message: String(error.message) } };
  }
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: message.id, ...reply }) + "\n");
});
