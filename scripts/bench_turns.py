"""Time to first token, turn by turn, with the built-in model (a benchmark, not a test).

A real ACP client (the Python SDK, as tests/acp_client.py) drives one `pocketpilot acp`
with no provider configured, so the built-in model answers. One session of TURNS prompts,
then a second session's first prompt. For each prompt: session/prompt -> the first
agent_message_chunk (the first token the person sees), and -> the prompt's end. The first
prompt of the first session includes starting the model server; the second session's
first prompt finds it running.

    bench_turns.py BINARY WORKSPACE REPORT [TURNS]
"""

import asyncio
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from acp_client import BOUND, Editor, bounded  # noqa: E402,F401
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block  # noqa: E402
from acp.schema import ClientCapabilities  # noqa: E402

# What a person might type, one per turn (repeated past the end).
ASKS = [
    "What files are in this folder?",
    "Say in one sentence what notes.txt is about.",
    "Suggest a better title for it.",
    "Why is that title better?",
    "Give me three keywords for the note.",
    "Which of them matters most?",
    "Write a one-line summary I can paste into an email.",
    "Make it more formal.",
    "Now make it shorter.",
    "Thanks. Anything else I should know about the note?",
]


async def prompt(conn, editor, session, text):
    editor.first_chunk.clear()
    t0 = time.perf_counter()
    task = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block(text)]))
    first = asyncio.ensure_future(editor.first_chunk.wait())
    done, _ = await asyncio.wait({task, first}, timeout=BOUND * 5, return_when=asyncio.FIRST_COMPLETED)
    if not done:
        raise SystemExit(f"no first chunk and no end for {text!r}")
    ttft = (time.perf_counter() - t0) * 1000.0 if first in done else None
    # A small model on two cores may take minutes to finish a long answer.
    try:
        reply = await asyncio.wait_for(task, 900)
    except asyncio.TimeoutError:
        raise SystemExit(f"the answer to {text!r} did not end within 900 s")
    first.cancel()
    return {"ask": text, "first_chunk_ms": ttft, "end_ms": (time.perf_counter() - t0) * 1000.0,
            "stop": str(reply.stop_reason)}


async def main(binary, ws, report, turns):
    env = {k: v for k, v in os.environ.items() if k.startswith("POCKETPILOT_") or k in ("HOME", "PATH")}
    editor = Editor()
    cm = spawn_agent_process(editor, binary, "acp", env=env)
    conn, _proc = await cm.__aenter__()
    await bounded("initialize", conn.initialize(protocol_version=PROTOCOL_VERSION,
                                                client_capabilities=ClientCapabilities()))
    rows = []
    session = (await conn.new_session(cwd=ws)).session_id
    for i in range(turns):
        rows.append({"session": 1, "turn": i + 1, **await prompt(conn, editor, session, ASKS[i % len(ASKS)])})
    other = (await conn.new_session(cwd=ws)).session_id
    rows.append({"session": 2, "turn": 1, **await prompt(conn, editor, other, ASKS[0])})
    await cm.__aexit__(None, None, None)
    Path(report).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    binary, ws, report = sys.argv[1:4]
    asyncio.run(main(binary, ws, report, int(sys.argv[4]) if len(sys.argv) > 4 else 10))
