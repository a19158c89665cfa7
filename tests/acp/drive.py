# Drives `rummy acp` with the official ACP Python SDK (`agent-client-protocol` from PyPI,
# pinned by tests/acp/requirements.txt), as an editor would, through one scenario, and prints
# what the editor saw as one JSON object on stdout, in the shape drive.mjs prints (the same
# tests in tests/it/acp.rs assert on either).
#
#   python drive.py <rummy binary> <scenario> <project dir>
#
# The scenarios and the environment are drive.mjs's (see there); the agent inherits this
# process's environment, and with ACP_URL set it is `rummy acp --url $ACP_URL`. Forms
# (`elicitation/create`) are in the SDK's unstable protocol, which the editor of the
# question-form scenario turns on.

import asyncio
import json
import os
import signal
import sys
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    RequestError,
    connect_to_agent,
    embedded_text_resource,
    resource_block,
    resource_link_block,
    text_block,
)
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationFormRequestMode,
    ElicitationFormSessionMode,
    FileSystemCapabilities,
    Implementation,
    KillTerminalResponse,
    McpServerStdio,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

binary, scenario, project = sys.argv[1:4]


def marker(name: str) -> str:
    """The marker `name` of $ACP_MARKER (the story scenario's synchronisation with its test)."""
    return os.path.join(os.environ["ACP_MARKER"], name)


def mark(name: str) -> None:
    open(marker(name), "w").close()


async def until(name: str) -> None:
    """Waits for the marker `name` (at most a minute: a test that failed makes none)."""
    for _ in range(3000):
        if os.path.exists(marker(name)):
            return
        await asyncio.sleep(0.02)
seen: dict[str, Any] = {
    "scenario": scenario,
    "initialize": None,
    "session": None,
    "updates": [],
    "permissions": [],
    "elicitations": [],
    "writes": [],
    "terminals": [],
    "stopReasons": [],
    "replayed": None,
    "configured": None,
    "listed": None,
    "errors": [],
    "rawErrors": [],
    "exit": None,
}


def wire(model: Any) -> Any:
    """A model of the SDK as it is on the wire (None, for a call that failed, stays None)."""
    if model is None:
        return None
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Terminal:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.output = ""
        self.exit: TerminalExitStatus | None = None
        self.finished = asyncio.ensure_future(self.collect())

    async def collect(self) -> TerminalExitStatus:
        out, err = await self.process.communicate()
        self.output = out.decode() + err.decode()
        code = self.process.returncode
        self.exit = (
            TerminalExitStatus(exit_code=code)
            if code >= 0
            else TerminalExitStatus(signal=str(-code))
        )
        return self.exit


class Editor:
    """The client side: what an editor answers the agent."""

    def __init__(self) -> None:
        self.decision = {
            "edit-reject": "reject",
            "question-chat": "in-chat",
            "command-always": "always",
        }.get(scenario, "allow")
        self.running: dict[str, Terminal] = {}
        self.created = 0
        # The connection, for the handlers that cancel the turn.
        self.conn: Any = None
        # Set once every permission request asked has been answered: a withdrawn request's
        # late answer is written before the agent's stdin closes.
        self.answered = asyncio.Event()
        self.answered.set()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        seen["updates"].append(wire(update))

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        seen["permissions"].append(
            {
                "sessionId": session_id,
                "toolCall": wire(tool_call),
                "options": [wire(option) for option in options],
            }
        )
        if scenario == "withdrawn":
            self.answered.clear()
            marker = os.environ["ACP_MARKER"]
            open(os.path.join(marker, "asking"), "w").close()
            # The person answers once the test's other client settled it (or after 20 s).
            for _ in range(1000):
                if os.path.exists(os.path.join(marker, "settled")):
                    break
                await asyncio.sleep(0.02)
            self.answered.set()
        if scenario == "story-b" and len(seen["permissions"]) == 1:
            # Asked while the test's other client aborts the run: the answer comes late.
            self.answered.clear()
            mark("b-asking")
            await until("b-answer")
            self.answered.set()
        if scenario == "console-b" and len(seen["permissions"]) == 1:
            mark("cb-asking")
            await until("cb-answer")
        if scenario == "cancel-asking":
            await self.conn.cancel(session_id=session_id)
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        option = next(o for o in options if o.option_id == self.decision)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
        )

    async def create_elicitation(
        self, message: str, mode: Any, **kwargs: Any
    ) -> AcceptElicitationResponse:
        form = isinstance(mode, (ElicitationFormSessionMode, ElicitationFormRequestMode))
        seen["elicitations"].append(
            {"message": message, "mode": "form" if form else "url", **wire(mode)}
        )
        return AcceptElicitationResponse(action="accept", content={"answer": "teal, actually"})

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        seen["writes"].append({"sessionId": session_id, "path": path, "content": content})
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as file:
            file.write(content)
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: Any = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        self.created += 1
        terminal_id = f"term-{self.created}"
        created = {"sessionId": session_id, "command": command, "args": args, "cwd": cwd}
        if output_byte_limit is not None:
            created["outputByteLimit"] = output_byte_limit
        seen["terminals"].append({"created": created})
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            # A process group of its own, which kill_terminal kills whole, as an editor's does.
            start_new_session=True,
        )
        self.running[terminal_id] = Terminal(process)
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        seen["terminals"].append({"waited": terminal_id})
        if scenario == "command-cancel":
            await self.conn.cancel(session_id=session_id)
        status = await self.running[terminal_id].finished
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        seen["terminals"].append({"output": terminal_id})
        terminal = self.running[terminal_id]
        return TerminalOutputResponse(
            output=terminal.output, truncated=False, exit_status=terminal.exit
        )

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        seen["terminals"].append({"killed": terminal_id})
        os.killpg(self.running[terminal_id].process.pid, signal.SIGKILL)
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        seen["terminals"].append({"released": terminal_id})
        del self.running[terminal_id]
        return ReleaseTerminalResponse()


async def tee(source: asyncio.StreamReader, sink: asyncio.StreamReader) -> None:
    """Passes the agent's stdout on to the SDK, keeping the error replies no request of the
    SDK's waits for (those to lines that were not JSON) and any line that is not a frame."""
    while line := await source.readline():
        try:
            message = json.loads(line)
            if "error" in message and message.get("id") is None:
                seen["rawErrors"].append(message["error"])
        except ValueError:
            seen["errors"].append({"stdoutNotJson": line.decode(errors="replace")})
        sink.feed_data(line)
    sink.feed_eof()


async def attempt(what: str, call: Any) -> Any:
    try:
        return await call
    except RequestError as error:
        seen["errors"].append(
            {"what": what, "code": error.code, "message": str(error), "data": error.data}
        )
        return None


offers_forms = scenario == "question-form"


async def run(conn: Any, editor: "Editor") -> None:
    offers_files = scenario in ("edit-allow", "withdrawn", "revert-idle")
    initialized = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=offers_files, write_text_file=offers_files),
            terminal=scenario in (
                "command", "command-cancel", "command-always", "story-b", "console-b"
            ),
            elicitation=(
                ElicitationCapabilities(form=ElicitationFormCapabilities())
                if offers_forms
                else None
            ),
        ),
        client_info=Implementation(name="rummy-acp-test-py", version="1"),
    )
    seen["initialize"] = wire(initialized)
    if scenario == "sign-in":
        await attempt("session/new unsigned", conn.new_session(cwd=project, mcp_servers=[]))
        with open(os.environ["ACP_TOKEN_FILE"], "w") as file:
            file.write(os.environ["ACP_SIGN_IN_TOKEN"] + "\n")
        await attempt("authenticate other", conn.authenticate(method_id="password"))
        seen["authenticate"] = wire(await conn.authenticate(method_id="token-file"))
    if scenario in ("story-b", "console-b"):
        # Editor B of the three-client story (and of the one with the console) loads the
        # run editor A made, once the test names it in $ACP_MARKER/b-load (cb-load).
        load = "b-load" if scenario == "story-b" else "cb-load"
        await until(load)
        with open(marker(load)) as named:
            session_id = named.read().strip()
        loaded = await attempt(
            "session/load",
            conn.load_session(cwd=project, session_id=session_id, mcp_servers=[]),
        )
        seen["replayed"] = len(seen["updates"])
        if loaded is not None:
            seen["session"] = {"sessionId": session_id, **wire(loaded)}
    elif scenario == "load":
        session_id = os.environ["ACP_LOAD"]
        loaded = await attempt(
            "session/load",
            conn.load_session(cwd=project, session_id=session_id, mcp_servers=[]),
        )
        # Each update's handler runs before the answer resumes this call (the SDK starts
        # it as a task on receipt, in order), so these are the updates before the answer.
        seen["replayed"] = len(seen["updates"])
        listed = await attempt("session/list", conn.list_sessions(cwd=project))
        seen["listed"] = wire(listed)
        await attempt(
            "load unknown",
            conn.load_session(cwd=project, session_id="no_such_run", mcp_servers=[]),
        )
        if loaded is not None:
            seen["session"] = {"sessionId": session_id, **wire(loaded)}
    else:
        mcp_servers = [
            McpServerStdio.model_validate(server)
            for server in json.loads(os.environ.get("ACP_MCP_SERVERS", "[]"))
        ]
        session = await attempt(
            "session/new", conn.new_session(cwd=project, mcp_servers=mcp_servers)
        )
        seen["session"] = wire(session)
    if seen["session"] is None:
        return
    session_id = seen["session"]["sessionId"]

    async def prompt(text: str, *more: Any) -> None:
        response = await attempt(
            "prompt", conn.prompt(session_id=session_id, prompt=[text_block(text), *more])
        )
        if response is not None:
            seen["stopReasons"].append(response.stop_reason)

    if scenario == "cancel":
        turn = asyncio.ensure_future(prompt("take your time"))
        await asyncio.sleep(1.5)
        await conn.cancel(session_id=session_id)
        await turn
    elif scenario == "cancel-mine":
        # Cancels its prompt once the test has made $ACP_MARKER/cancel (another client's
        # prompt is queued behind it then).
        turn = asyncio.ensure_future(prompt("my question"))
        while not os.path.exists(os.path.join(os.environ["ACP_MARKER"], "cancel")):
            await asyncio.sleep(0.02)
        await conn.cancel(session_id=session_id)
        await turn
    elif scenario == "idle-cancel":

        async def idle_cancel() -> None:
            await conn.cancel(session_id=session_id)
            await conn.set_session_mode(session_id=session_id, mode_id="act")

        await idle_cancel()
        await prompt("please do the task")
        await idle_cancel()
        await prompt("and now the second part")
    elif scenario == "story-b":
        # A prompt whose command it is asked about while the run is aborted; its late
        # answer, then b-answered (a round trip behind it); once b-second exists, a second
        # prompt, whose command it allows at once and runs in its terminal.
        await prompt("check it")
        await until("b-answer")
        await editor.answered.wait()
        await asyncio.sleep(0)
        await conn.set_session_mode(session_id=session_id, mode_id="act")
        mark("b-answered")
        await until("b-second")
        await prompt("check it again")
    elif scenario == "revert-idle":
        await prompt("edit a.txt")
        mark("ri-done")

        def shown() -> bool:
            return any(
                update.get("sessionUpdate") == "tool_call"
                and update.get("toolCallId", "").startswith("set://revert/")
                for update in seen["updates"]
            )

        for _ in range(3000):
            if shown():
                break
            await asyncio.sleep(0.02)
        seen["beforePrompt"] = {"permissions": len(seen["permissions"]), "shown": shown()}
        await prompt("anything else?")
    elif scenario == "console-b":
        await prompt("check it")
        mark("cb-done")
        await until("cb-again")
        await prompt("check it again")
    elif scenario == "ask-mode":
        await attempt("set_mode plan", conn.set_session_mode(session_id=session_id, mode_id="plan"))
        await conn.set_session_mode(session_id=session_id, mode_id="ask")
        await prompt("what is in a.txt?")
    elif scenario == "load":
        await prompt("and now the second part")
    elif scenario == "model":
        configured = await attempt(
            "set model second",
            conn.set_config_option(config_id="model", session_id=session_id, value="second"),
        )
        seen["configured"] = wire(configured)
        await attempt(
            "set model nope",
            conn.set_config_option(config_id="model", session_id=session_id, value="nope"),
        )
        await prompt("which model are you?")
    elif scenario == "question-chat":
        await prompt("please do the task")
        await prompt("It is called Nimbus")
    elif scenario == "command-always":
        await prompt("please do the task")
        await prompt("and once more")
    elif scenario == "slash":
        await prompt("/sql_style write the query")
        await prompt("/persona:pirate")
        await prompt("say hi")
    elif scenario == "resources":
        await prompt(
            "compare these",
            resource_link_block("a.txt", f"file://{project}/a.txt"),
            resource_block(embedded_text_resource(f"file://{project}/b.txt", "unsaved\n")),
            resource_link_block(
                "secret.txt", f"file://{os.path.dirname(project)}/secret.txt"
            ),
        )
    else:
        await prompt("please do the task")
    await attempt(
        "unknown session",
        conn.prompt(session_id="no-such-session", prompt=[text_block("hello")]),
    )


async def main() -> None:
    args = ["acp", "--url", os.environ["ACP_URL"]] if os.environ.get("ACP_URL") else ["acp"]
    if os.environ.get("ACP_TOKEN_FILE"):
        args += ["--token-file", os.environ["ACP_TOKEN_FILE"]]
    child = await asyncio.create_subprocess_exec(
        binary,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=64 * 1024 * 1024,
    )
    if scenario == "malformed":
        child.stdin.write(b"this is not json\n")
        child.stdin.write(b'{"jsonrpc":"2.0","id":7,"method":\n')
    frames = asyncio.StreamReader(limit=64 * 1024 * 1024)
    teeing = asyncio.ensure_future(tee(child.stdout, frames))
    editor = Editor()
    conn = connect_to_agent(editor, child.stdin, frames, use_unstable_protocol=offers_forms)
    editor.conn = conn
    try:
        await run(conn, editor)
        await editor.answered.wait()
        await asyncio.sleep(0)
    finally:
        child.stdin.close()
        code = await child.wait()
        await teeing
        await conn.close()
    seen["exit"] = {"code": code, "signal": None} if code >= 0 else {"code": None, "signal": -code}
    sys.stdout.write(json.dumps(seen) + "\n")


asyncio.run(main())
