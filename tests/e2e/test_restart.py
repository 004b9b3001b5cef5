"""A pending approval survives a restart: a task left waiting by the CLI is listed and
answerable in the window."""
from __future__ import annotations

from conftest import App, AppEnv

from test_chat import DONE, HAIKU, assistant_texts, write_script


def test_pending_approval_from_the_cli_is_answered_in_the_window(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("poems")
    script = write_script(app_env, DONE)
    left = app_env.cli(
        "run", "--workspace", str(ws), "--goal", "Write a haiku", "--provider", f"scripted:{script}", check=False
    )
    assert left.returncode == 3, left.stderr

    app: App = launch()
    app.wait("the pending approval", lambda: app.css("[data-testid=pending-approvals] .pending-item"))
    app.by_text("[data-testid=session-item]", "Write a haiku").click()
    app.wait("the approval dialog", lambda: app.css("[data-testid=approval-dialog]"))
    app.wait_texts("[data-testid=effect-path]", ["haiku.txt"])
    app.wait_attr("[data-testid=task]", "data-status", "waiting_approval")
    assert not (ws / "haiku.txt").exists()
    app.screenshot("pending-after-restart")

    app.css("[data-testid=approve]")[0].click()
    app.wait("the final answer", lambda: DONE in assistant_texts(app))
    app.wait("the task to complete", lambda: app.css("[data-testid=task][data-status=completed]"))
    assert (ws / "haiku.txt").read_text() == HAIKU
    app.wait("the pending list to empty", lambda: not app.css("[data-testid=pending-approvals]"))
    app.screenshot("answered")
