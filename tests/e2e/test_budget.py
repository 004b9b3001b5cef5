"""Issue 19: a scripted model that repeats a failing call is paused; the window shows the
paused card (what it repeated, continue, steer, stop) and the session's cost in its header;
continuing runs on to the answer."""
from __future__ import annotations

from conftest import App, AppEnv
from test_chat import assistant_texts, start_session

DONE = "missing.txt is not there; stopping."
FAIL = {
    "text": "",
    "delay_ms": 50,
    "tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}],
    "usage": {"prompt_tokens": 1000, "completion_tokens": 500},
}


def test_a_repeating_agent_pauses_and_continues_from_the_card(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("repeat")
    app_env.cli("prices", "set", "scripted:*", "--input", "1000", "--output", "1000")
    script = app_env.script("repeat", [FAIL, FAIL, FAIL, {"text": DONE, "usage": {"prompt_tokens": 1000, "completion_tokens": 500}}])
    app: App = launch(script)
    start_session(app, ws, "Read missing.txt")

    card = app.wait_css("[data-testid=paused-card]")
    assert "repeating itself" in card.text
    app.css("[data-testid=show-repeated]")[0].click()
    message = app.wait_css("[data-testid=paused-message]").text
    assert "read_file" in message and "3 times" in message
    # Three turns at $1.50 each.
    app.wait("the session's cost", lambda: app.texts("[data-testid=session-cost]") == ["$4.50"])
    app.screenshot("paused-repeating")

    app.css("[data-testid=paused-continue]")[0].click()
    app.wait("the final answer", lambda: DONE in assistant_texts(app))
    app.wait("the task to complete", lambda: app.css("[data-testid=task][data-status=completed]"))
    assert not app.css("[data-testid=paused-card]")
    app.wait("the session's cost", lambda: app.texts("[data-testid=session-cost]") == ["$6.00"])
    app.screenshot("continued-completed")
