"""Issue 6: a goal sent from the window streams, stops for approval with the exact diff,
writes only after approval, and reads back the same final answer after a reload."""
from __future__ import annotations

from pathlib import Path

from conftest import App, AppEnv

HAIKU = "old pond\nfrog leaps in\nsplash\n"
FIRST = "I will write the haiku into haiku.txt now."
DONE = "Wrote haiku.txt with the poem."
REJECTED = "Understood: I left haiku.txt alone."


def write_script(app_env: AppEnv, second_turn: str) -> Path:
    return app_env.script(
        "chat",
        [
            {
                "text": FIRST,
                "delay_ms": 200,
                "chunk_size": 2,
                "chunk_delay_ms": 120,
                "tool_calls": [{"name": "write_file", "arguments": {"path": "haiku.txt", "content": HAIKU}}],
            },
            {"text": second_turn, "chunk_size": 4, "chunk_delay_ms": 20},
        ],
    )


def start_session(app: App, workspace: Path, goal: str) -> None:
    app.go("#/new")
    field = app.wait_css("[data-testid=workspace-input]")
    app.clear(field)
    app.type_into(field, str(workspace))
    box = app.wait_css("[data-testid=composer-input]")
    app.type_into(box, goal)
    app.press_enter(box)
    app.wait("the session view", lambda: app.css("[data-testid=session-view]"))


def assistant_texts(app: App) -> list[str]:
    return app.texts("[data-testid=assistant-message]")


def test_stream_approve_write_and_reload(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("poems")
    app = launch(write_script(app_env, DONE))
    start_session(app, ws, "Write a haiku into haiku.txt")

    # Text streams in: a partial answer in the streaming bubble before the turn completes.
    partial = app.wait(
        "streamed text",
        lambda: next((t for t in app.texts("[data-testid=streaming-message]") if t and t != FIRST), None),
    )
    assert FIRST.startswith(partial)
    app.screenshot("streaming")

    # The tool card, then the approval dialog with the exact diff; nothing written yet.
    app.wait("the approval dialog", lambda: app.css("[data-testid=approval-dialog]"))
    app.wait_attr("[data-testid=tool-card]", "data-tool", "write_file")
    app.wait_attr("[data-testid=tool-card]", "data-status", "waiting_approval")
    app.wait_texts("[data-testid=effect-path]", ["haiku.txt"])
    diff = app.wait("the diff", lambda: next(iter(app.texts("[data-testid=effect-diff]")), None))
    for line in HAIKU.splitlines():
        assert f"+{line}" in diff
    app.wait_equal("the first answer", lambda: assistant_texts(app), [FIRST])
    assert not (ws / "haiku.txt").exists()
    app.screenshot("approval-diff")

    app.css("[data-testid=approve]")[0].click()
    app.wait("the final answer", lambda: DONE in assistant_texts(app))
    app.wait("the task to complete", lambda: app.css("[data-testid=task][data-status=completed]"))
    assert (ws / "haiku.txt").read_text() == HAIKU
    app.wait_equal("both answers", lambda: assistant_texts(app), [FIRST, DONE])
    app.wait("the stream to end", lambda: not app.css("[data-testid=streaming-message]"))
    app.wait_attr("[data-testid=tool-card]", "data-status", "done")
    app.wait("the dialog to close", lambda: not app.css("[data-testid=approval-dialog]"))
    app.screenshot("approved-final-answer")

    # Reload: the history is read from the store, the final answer shown once.
    app.driver.refresh()
    app.wait("the reloaded session", lambda: app.css("[data-testid=task][data-status=completed]"))
    app.wait_loaded("session-view")
    app.wait_equal("the reloaded answers", lambda: assistant_texts(app), [FIRST, DONE])
    app.wait_texts("[data-testid=user-message]", ["Write a haiku into haiku.txt"])
    app.wait_attr("[data-testid=tool-card]", "data-status", "done")
    app.screenshot("after-reload")

    # The task's timeline lists every persisted event in order.
    app.wait_css("[data-testid=task-details-link]").click()
    app.wait_loaded("task-details")
    app.wait("the timeline", lambda: app.css("[data-testid=timeline-row]"))
    types = [r.get_attribute("data-type") for r in app.css("[data-testid=timeline-row]")]
    assert types[0] == "task_created" and types[-1] == "task_completed"
    assert types.index("approval_required") < types.index("approval_resolved") < types.index("agent_completed")
    app.screenshot("task-details")


def test_reject_leaves_the_file_untouched(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("poems")
    (ws / "haiku.txt").write_text("keep me\n")
    app = launch(write_script(app_env, REJECTED))
    start_session(app, ws, "Replace haiku.txt")

    app.wait("the approval dialog", lambda: app.css("[data-testid=approval-dialog]"))
    diff = app.wait("the diff", lambda: next(iter(app.texts("[data-testid=effect-diff]")), None))
    assert "-keep me" in diff and "+old pond" in diff, diff
    app.wait_css("[data-testid=reject]").click()
    app.type_into(app.wait_css("[data-testid=reject-reason]"), "not that file")
    app.screenshot("reject-reason")
    app.css("[data-testid=confirm-reject]")[0].click()

    app.wait("the answer after the rejection", lambda: REJECTED in assistant_texts(app))
    app.wait("the task to complete", lambda: app.css("[data-testid=task][data-status=completed]"))
    assert (ws / "haiku.txt").read_text() == "keep me\n"
    app.wait_attr("[data-testid=tool-card]", "data-status", "rejected")
    app.screenshot("rejected")


def test_stop_cancels_a_running_task(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("slow")
    script = app_env.script("slow", [{"text": "x" * 400, "chunk_size": 1, "chunk_delay_ms": 50}])
    app = launch(script)
    start_session(app, ws, "Take your time")
    app.wait("streamed text", lambda: any(app.texts("[data-testid=streaming-message]")))
    app.wait_css("[data-testid=stop]").click()
    app.wait("the task to be cancelled", lambda: app.css("[data-testid=task][data-status=cancelled]"), timeout=5)
    app.wait("the stream to end", lambda: not app.css("[data-testid=streaming-message]"))
    app.wait_equal("no answer", lambda: assistant_texts(app), [])
    app.screenshot("cancelled")
