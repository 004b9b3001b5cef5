"""A real third-party ACP client (the `agent-client-protocol` Python SDK from PyPI) driving
`pocketpilot acp` over stdio. Run by tests/acp.rs with the test venv's Python:

    acp_client.py BINARY WORKSPACE SCRIPT REPORT [--bench N | --files]

It plays one editor session and writes what it saw to REPORT (JSON); the Rust test checks
it and the store. The steps:
  1. initialize, session/new on WORKSPACE;
  2. a prompt whose write asks: the permission request (a pending edit with its diff) is
     answered "allow once"; chunks and tool-call updates stream;
  3. a prompt whose write asks again and is left unanswered by this client: it must be
     pending in PocketPilot (`pocketpilot approvals`), where another process approves it;
  4. kill -9 the agent, start it again, session/load (the turns are replayed), prompt;
  5. a command allowed always (a command rule): the same command later asks no more;
  6. a slow prompt cancelled with session/cancel after its first chunk.
With --bench N it instead times N prompts to their first chunk (see bench-results/acp.txt).
With --files it plays an editor that offers its file methods over in-memory buffers that
differ from the disk (see `files` below).
"""

import asyncio
import json
import os
import subprocess
import sys
import time

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

# Every wait is bounded, and says what never came.
BOUND = 60.0


class Editor:
    """The client side: records updates, answers permissions as the step says."""

    def __init__(self):
        self.updates = []
        self.permissions = []
        self.answer = "allow_once"  # or None: never answer
        self.first_chunk = asyncio.Event()
        self.asked = asyncio.Event()

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.permissions.append(
            {
                "tool_call": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
                "options": [o.model_dump(mode="json", by_alias=True) for o in options],
            }
        )
        self.asked.set()
        if self.answer is None:
            # An editor whose person never answers: PocketPilot keeps it pending.
            await asyncio.Event().wait()
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    async def session_update(self, session_id, update, **kwargs):
        d = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.updates.append(d)
        if d.get("sessionUpdate") == "agent_message_chunk":
            self.first_chunk.set()

    def take(self):
        out, self.updates = self.updates, []
        return out


class BufferEditor(Editor):
    """An editor that offers fs/read_text_file and fs/write_text_file over its open
    buffers (path -> text, unsaved: the disk is never touched here)."""

    def __init__(self, buffers):
        super().__init__()
        self.buffers = buffers
        self.reads = []
        self.writes = []

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        self.reads.append({"path": path, "line": line, "limit": limit})
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id, path, content, **kwargs):
        self.writes.append({"path": path, "content": content})
        self.buffers[path] = content
        return WriteTextFileResponse()


def cli(binary, *args):
    out = subprocess.run([binary, *args], capture_output=True, text=True, check=True)
    return out.stdout


async def bounded(what, aw):
    try:
        return await asyncio.wait_for(aw, BOUND)
    except asyncio.TimeoutError:
        raise SystemExit(f"{what} never came")


async def start(editor, binary, script, capabilities=None, args=()):
    # The SDK passes a trimmed environment by default: the data dir must go along.
    env = {k: v for k, v in os.environ.items() if k.startswith("POCKETPILOT_") or k == "HOME"}
    cm = spawn_agent_process(editor, binary, "acp", "--provider", f"scripted:{script}", *args, env=env)
    conn, proc = await cm.__aenter__()
    init = await bounded(
        "initialize",
        conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=capabilities or ClientCapabilities(),
        ),
    )
    return cm, conn, proc, init


async def story(binary, ws, script, report):
    editor = Editor()
    seen = {}
    cm, conn, proc, init = await start(editor, binary, script)
    seen["initialize"] = init.model_dump(mode="json", by_alias=True, exclude_none=True)
    session = (await bounded("session/new", conn.new_session(cwd=ws))).session_id
    seen["session"] = session

    # 2. A write that asks, answered "allow once" here.
    r = await bounded("prompt 1", conn.prompt(session_id=session, prompt=[text_block("write notes")]))
    seen["prompt1"] = {"stop": r.stop_reason, "updates": editor.take(), "permissions": editor.permissions}
    editor.permissions = []

    # 3. Left unanswered here: pending in PocketPilot, approved by another process.
    editor.answer = None
    editor.asked.clear()
    task = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("write more")]))
    await bounded("the second permission request", editor.asked.wait())
    pending = json.loads(cli(binary, "approvals", "--json"))
    seen["pending_while_unanswered"] = pending
    cli(binary, "approve", str(pending[0]["id"]))
    r = await bounded("prompt 2", task)
    seen["prompt2"] = {"stop": r.stop_reason, "updates": editor.take()}

    # 4. kill -9, start again, load the session, prompt on.
    proc.kill()
    await proc.wait()
    seen["killed_returncode"] = proc.returncode
    try:
        await cm.__aexit__(None, None, None)
    except Exception:
        pass
    editor.answer = "allow_once"
    cm, conn, proc, _ = await start(editor, binary, script)
    await bounded("session/load", conn.load_session(cwd=ws, session_id=session))
    seen["load"] = editor.take()
    r = await bounded("prompt 3", conn.prompt(session_id=session, prompt=[text_block("still there?")]))
    seen["prompt3"] = {"stop": r.stop_reason, "updates": editor.take()}

    # 5. "Always allow" a command keeps a command rule: the same command asks no more.
    editor.answer = "allow_always"
    editor.permissions = []
    r = await bounded("prompt always", conn.prompt(session_id=session, prompt=[text_block("run echo")]))
    seen["always"] = {"stop": r.stop_reason, "updates": editor.take(), "permissions": editor.permissions}
    editor.permissions = []
    r = await bounded("prompt again", conn.prompt(session_id=session, prompt=[text_block("run echo again")]))
    seen["again"] = {"stop": r.stop_reason, "updates": editor.take(), "permissions": editor.permissions}

    # 6. Cancel a slow run after its first chunk.
    editor.first_chunk.clear()
    task = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("ramble")]))
    await bounded("the first chunk of the slow run", editor.first_chunk.wait())
    await conn.cancel(session_id=session)
    r = await bounded("the cancelled prompt's answer", task)
    seen["prompt4"] = {"stop": r.stop_reason, "updates": editor.take()}

    await cm.__aexit__(None, None, None)
    with open(report, "w") as f:
        json.dump(seen, f, indent=1)


async def files(binary, ws, script, report):
    """An editor whose buffer of notes.txt differs from the disk:
    1. with the default settings, the agent's read_file gets the buffer, and its approved
       write_file arrives at the editor (fs/write_text_file);
    2. with `--editor-files off`, a new agent on the same session reads the disk and asks
       the editor nothing."""
    notes = os.path.join(ws, "notes.txt")
    editor = BufferEditor({notes: "unsaved text in the editor\n"})
    offered = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
    seen = {}
    cm, conn, proc, _ = await start(editor, binary, script, offered)
    session = (await bounded("session/new", conn.new_session(cwd=ws))).session_id
    seen["session"] = session
    r = await bounded("the read", conn.prompt(session_id=session, prompt=[text_block("read notes")]))
    seen["read"] = {"stop": r.stop_reason, "updates": editor.take(), "reads": editor.reads}
    r = await bounded("the write", conn.prompt(session_id=session, prompt=[text_block("write notes")]))
    seen["write"] = {
        "stop": r.stop_reason,
        "updates": editor.take(),
        "permissions": editor.permissions,
        "writes": editor.writes,
    }
    await cm.__aexit__(None, None, None)

    # The person turned the editor's files off: the disk is read, the editor not asked.
    editor = BufferEditor({notes: "edited again in the editor\n"})
    cm, conn, proc, _ = await start(editor, binary, script, offered, ["--editor-files", "off"])
    await bounded("session/load", conn.load_session(cwd=ws, session_id=session))
    editor.take()
    r = await bounded("the read (off)", conn.prompt(session_id=session, prompt=[text_block("read again")]))
    seen["read_off"] = {"stop": r.stop_reason, "updates": editor.take(), "reads": editor.reads}
    await cm.__aexit__(None, None, None)
    with open(report, "w") as f:
        json.dump(seen, f, indent=1)


async def bench(binary, ws, script, report, n):
    """Prompt → first streamed text, n times each way:
    - acp_warm: session/prompt → first agent_message_chunk, one agent process and session;
    - acp_cold: spawning `pocketpilot acp` → initialize → session/new → prompt → first chunk;
    - cli: spawning `pocketpilot run` → the first byte of the answer on its stdout."""
    figures = {"acp_warm": [], "acp_cold": [], "cli": []}
    editor = Editor()
    cm, conn, proc, _ = await start(editor, binary, script)
    session = (await conn.new_session(cwd=ws)).session_id
    for i in range(n):
        editor.first_chunk.clear()
        t0 = time.perf_counter()
        task = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block(f"hi {i}")]))
        await bounded("first chunk", editor.first_chunk.wait())
        figures["acp_warm"].append((time.perf_counter() - t0) * 1000.0)
        await bounded("prompt end", task)
    await cm.__aexit__(None, None, None)
    for i in range(n):
        editor = Editor()
        t0 = time.perf_counter()
        cm, conn, proc, _ = await start(editor, binary, script)
        session = (await conn.new_session(cwd=ws)).session_id
        task = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block(f"hi {i}")]))
        await bounded("first chunk", editor.first_chunk.wait())
        figures["acp_cold"].append((time.perf_counter() - t0) * 1000.0)
        await bounded("prompt end", task)
        await cm.__aexit__(None, None, None)
    for i in range(n):
        t0 = time.perf_counter()
        child = subprocess.Popen(
            [binary, "run", "--workspace", ws, "--goal", f"hi {i}", "--provider", f"scripted:{script}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        child.stdout.read(1)
        figures["cli"].append((time.perf_counter() - t0) * 1000.0)
        child.stdout.read()
        child.wait()
    with open(report, "w") as f:
        json.dump(figures, f)


if __name__ == "__main__":
    binary, ws, script, report = sys.argv[1:5]
    if len(sys.argv) > 6 and sys.argv[5] == "--bench":
        asyncio.run(bench(binary, ws, script, report, int(sys.argv[6])))
    elif len(sys.argv) > 5 and sys.argv[5] == "--files":
        asyncio.run(files(binary, ws, script, report))
    else:
        asyncio.run(story(binary, ws, script, report))
