"""Issues 13 and 14 in the window: the session's context meter (used / window, "assumed"
when nobody said), compactions as expandable dividers in the transcript, "Compact now" and
"Fresh context", and the sandbox line of approvals and Settings (red when NOT sandboxed).

Stores are seeded with the CLI and the scripted provider; the figures are checked against
what `pocketpilot session show --json` reports from the same store."""
from __future__ import annotations

import json
from pathlib import Path

from conftest import App, AppEnv

LONG = "Answer: " + "the quick brown fox jumps over the lazy dog; " * 25
SUMMARY = "SUMMARY: the agent gave several long answers about a fox."
SANDBOXED = "sandboxed: writes in the workspace only, no network"


def write_script(app_env: AppEnv, name: str, script: dict) -> Path:
    path = app_env.root / f"{name}.json"
    path.write_text(json.dumps(script))
    return path


def chatty(app_env: AppEnv, window: int | None = 4096) -> Path:
    """Long answers; with a window, a summary for the compactions."""
    script: dict = {"repeat_last": True, "turns": [{"text": LONG}]}
    if window is not None:
        script["context_window"] = window
        script["summary"] = {"text": SUMMARY}
    return write_script(app_env, f"chatty-{window}", script)


def session_of_last_task(app_env: AppEnv) -> int:
    tasks = json.loads(app_env.cli("tasks", "--json").stdout)
    return max(tasks, key=lambda t: t["id"])["session_id"]


def converse(app_env: AppEnv, script: Path, ws: Path, turns: int) -> int:
    """`turns` runs in one new session, each to completion; the session's id."""
    app_env.seed("question 1: tell me about the fox", script, ws)
    session = session_of_last_task(app_env)
    for i in range(2, turns + 1):
        app_env.cli(
            "run", "--workspace", str(ws), "--session", str(session),
            "--goal", f"question {i}: tell me more", "--provider", f"scripted:{script}",
        )
    return session


def show(app_env: AppEnv, session: int) -> dict:
    return json.loads(app_env.cli("session", "show", str(session), "--json").stdout)


def open_session(app: App, session: int) -> None:
    app.go(f"#/session/{session}")
    app.wait(
        "the session view, loaded",
        lambda: app.css(f"[data-testid=session-view][data-session-id='{session}'][data-loaded=true]"),
    )


def meter(app: App) -> dict:
    app.open_header("context")
    el = app.wait_css("[data-testid=context-meter-value]")
    return {
        "used": int(el.get_attribute("data-used")),
        "window": int(el.get_attribute("data-window")),
        "origin": el.get_attribute("data-origin"),
        "label": app.texts("[data-testid=context-window-origin]")[0],
        "text": app.texts("[data-testid=context-meter-text]")[0],
    }


def confirm(app: App, button: str) -> None:
    app.open_header("context")
    app.wait_css(f"[data-testid={button}]:not([disabled])").click()
    app.wait("the confirmation", lambda: app.css("[data-testid=context-confirm]"))
    app.screenshot(f"confirm-{button}")
    app.css("[data-testid=context-confirm-yes]")[0].click()
    app.wait("the confirmation to close", lambda: not app.css("[data-testid=context-confirm]"))


def test_the_meter_says_assumed_or_set_and_matches_the_cli(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("meter")
    assumed = converse(app_env, chatty(app_env, None), ws, 1)
    declared = converse(app_env, chatty(app_env, 4096), ws, 2)
    app = launch()

    open_session(app, assumed)
    cli = show(app_env, assumed)["context"]
    assert cli["window_source"] == "assumed"
    assert cli["window"] == 8192 and cli["used"] > 0, cli
    m = app.wait_equal(
        "the assumed meter",
        lambda: meter(app),
        {"used": cli["used"], "window": 8192, "origin": "assumed", "label": "assumed", "text": f"{cli['used']:,} / 8,192 tokens"},
    )
    app.screenshot("meter-assumed")

    open_session(app, declared)
    cli = show(app_env, declared)["context"]
    assert cli["window_source"] == "setting" and cli["window"] == 4096, cli
    app.wait_equal(
        "the declared window",
        lambda: {k: v for k, v in meter(app).items() if k != "text"},
        {"used": cli["used"], "window": 4096, "origin": "setting", "label": "set"},
    )
    app.screenshot("meter-set")


def test_compactions_are_expandable_dividers_in_their_task(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("fox")
    script = chatty(app_env, 4096)
    session = converse(app_env, script, ws, 12)
    stored = show(app_env, session)
    automatic = [c for c in stored["compactions"] if c["cause"] == "before_request"]
    assert automatic, f"12 long turns in a 4,096-token window compacted nothing: {stored['compactions']}"
    app = launch(script)
    open_session(app, session)

    # Each compaction the runtime made is a divider inside its task; the originals stay above.
    dividers = app.wait_count("[data-testid=compaction-divider][data-cause=before_request]", len(automatic))
    app.wait_count("[data-testid=assistant-message]", 12)
    first = dividers[0]
    app.driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", first)
    first.find_element("css selector", "summary").click()
    app.wait("the divider open", lambda: first.get_attribute("open") is not None)
    details = app.wait("the summary", lambda: (t := first.find_element("css selector", "[data-testid=compaction-details]").text) and SUMMARY in t and t)
    summarised = first.find_elements("css selector", "[data-testid=compaction-summarised] li")
    assert len(summarised) == len(automatic[0]["replaces"])
    assert any("tell me about the fox" in li.text or "the quick brown fox" in li.text for li in summarised)
    tokens = first.find_element("css selector", "[data-testid=compaction-tokens]").text
    assert f"{automatic[0]['tokens_before']:,} → {automatic[0]['tokens_after']:,} tokens" in tokens
    app.screenshot("compaction-divider-expanded")


def open_divider(app, divider) -> None:
    """Opens a divider once it is laid out (it may arrive while the result line still
    moves the transcript)."""

    def opened():
        try:
            app.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", divider)
            divider.find_element("css selector", "summary").click()
            return True
        except Exception:
            return False

    app.wait("the divider to open", opened)


def test_compact_now_and_fresh_context_from_the_window(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("fox")
    script = chatty(app_env, 8192)
    # Six long turns fit the window: nothing compacted yet, older turns to summarise.
    session = converse(app_env, script, ws, 6)
    assert show(app_env, session)["compactions"] == []
    app = launch(script)
    open_session(app, session)
    app.wait("the history", lambda: len(app.css("[data-testid=assistant-message]")) == 6)

    # Compact now: confirmed, its result shown, a divider after the newest task.
    before = meter(app)
    confirm(app, "compact-now")
    result = app.wait("the compaction's result", lambda: next(iter(app.texts("[data-testid=context-action-result]")), None))
    assert result.startswith("Compacted: "), result
    divider = app.wait("the manual divider", lambda: next(iter(app.css("[data-testid=compaction-divider][data-cause=manual]")), None))
    open_divider(app, divider)
    app.wait("the manual divider open", lambda: SUMMARY in divider.find_element("css selector", "[data-testid=compaction-details]").text)
    manual = [c for c in show(app_env, session)["compactions"] if c["cause"] == "manual"]
    assert len(manual) == 1
    assert f"{manual[0]['tokens_before']:,} → {manual[0]['tokens_after']:,}" in result
    after = app.wait("the meter to drop", lambda: (x := meter(app))["used"] < before["used"] and x)
    assert after["used"] == show(app_env, session)["context"]["used"]
    app.screenshot("compact-now")

    # Fresh context: confirmed, a divider, and the next request carries only the new goal.
    confirm(app, "fresh-context")
    app.wait("the fresh-context divider", lambda: app.css("[data-testid=reset-divider]"))
    app.wait("the meter after the reset", lambda: meter(app)["used"] < after["used"])
    app.wait_count("[data-testid=assistant-message]", 6)
    box = app.wait_css("[data-testid=composer-input]")
    app.type_into(box, "a new topic: the harbour")
    app.press_enter(box)
    app.wait("the new answer", lambda: len(app.css("[data-testid=task][data-status=completed]")) == 7)
    app.screenshot("fresh-context")
    stored = show(app_env, session)
    assert [e["kind"] for e in stored["entries"]].count("reset") == 1
    last = stored["context"]["last_request"]
    newest = max(t["id"] for t in stored["tasks"])
    assert last["task_id"] == newest
    # The system rules and the new goal: none of the six earlier turns, no summary.
    assert last["messages"] == 2, last


def run_command_approval(app_env: AppEnv, launch) -> App:
    script = write_script(
        app_env,
        "command",
        {"turns": [
            {"text": "Listing.", "tool_calls": [{"name": "run_command", "arguments": {"command": "ls"}}]},
            {"text": "Listed."},
        ]},
    )
    app = launch(script)
    ws = app_env.workspace("cmd")
    app.go("#/new")
    field = app.wait_css("[data-testid=workspace-input]")
    app.clear(field)
    app.type_into(field, str(ws))
    box = app.wait_css("[data-testid=composer-input]")
    app.type_into(box, "List the files")
    app.press_enter(box)
    app.wait("the approval dialog", lambda: app.css("[data-testid=approval-dialog]"))
    return app


def test_a_command_approval_and_settings_say_sandboxed(app_env: AppEnv, launch) -> None:
    app = run_command_approval(app_env, launch)
    line = app.wait_css("[data-testid=approval-sandbox]")
    app.wait_texts("[data-testid=approval-sandbox]", [SANDBOXED])
    app.wait_attr("[data-testid=approval-sandbox]", "data-sandboxed", "true")
    assert "unsandboxed" not in line.get_attribute("class")
    app.screenshot("approval-sandboxed")
    app.css("[data-testid=approve]")[0].click()
    app.wait("the task to complete", lambda: app.css("[data-testid=task][data-status=completed]"))

    app.open_settings()
    app.wait_texts("[data-testid=settings-sandbox]", [SANDBOXED])
    app.wait_attr("[data-testid=settings-sandbox]", "data-sandboxed", "true")
    app.screenshot("settings-sandboxed")


def test_not_sandboxed_is_said_in_red(app_env: AppEnv, launch) -> None:
    app_env.env["POCKETPILOT_SANDBOX"] = "off"
    app = run_command_approval(app_env, launch)
    app.wait_texts("[data-testid=approval-sandbox]", ["NOT sandboxed: POCKETPILOT_SANDBOX=off is set"])
    line = app.wait_attr("[data-testid=approval-sandbox]", "data-sandboxed", "false")
    red = app.driver.execute_script("return getComputedStyle(arguments[0]).color", line)
    assert red == "rgb(201, 48, 48)", red
    app.screenshot("approval-not-sandboxed")

    app.open_settings()
    app.wait_texts("[data-testid=settings-sandbox]", ["NOT sandboxed: POCKETPILOT_SANDBOX=off is set"])
    s = app.wait_css("[data-testid=settings-sandbox]")
    assert app.driver.execute_script("return getComputedStyle(arguments[0]).color", s) == "rgb(201, 48, 48)"
    app.screenshot("settings-not-sandboxed")

    # The same approval opened from the sidebar (its stored record) says it too.
    assert not app.css("[data-testid=approval-dialog]")
    app.css("[data-testid=pending-approvals] .pending-item")[0].click()
    app.wait_texts("[data-testid=approval-sandbox]", ["NOT sandboxed: POCKETPILOT_SANDBOX=off is set"])
    app.wait_attr("[data-testid=approval-sandbox]", "data-sandboxed", "false")
    app.screenshot("stored-approval-not-sandboxed")
    app.css("[data-testid=approve]")[0].click()
    app.wait("no approval left", lambda: not app.css("[data-testid=pending-approvals] .pending-item"))
    app.wait(
        "the task to complete",
        lambda: json.loads(app_env.cli("tasks", "--json").stdout)[0]["status"] == "completed",
    )
