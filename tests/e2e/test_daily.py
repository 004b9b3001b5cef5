"""The window for daily use: a run paused by its step budget says what ran out, proposes the
budget again and continues from the window to its answer with the raised limit in the
header; a failed task keeps its words after a reload; words from a tool's output are found
from the sidebar (Ctrl+K) and open the session at that message."""
from __future__ import annotations

import re

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from conftest import App, AppEnv
from test_chat import assistant_texts, start_session


def look(path: str) -> dict:
    return {"text": "", "delay_ms": 20, "tool_calls": [{"name": "list_dir", "arguments": {"path": path}}]}


def no_flags_or_variables(app: App) -> None:
    """No text in the window names a command-line flag or an environment variable."""
    text = app.driver.execute_script("return document.body.innerText")
    assert "POCKETPILOT_" not in text, text
    assert not re.search(r"(^|\s)--[a-z]", text), text


def test_a_step_budget_pause_continues_from_the_window_with_the_raised_limit(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("steps")
    app_env.app_env["POCKETPILOT_MAX_AGENT_STEPS"] = "3"
    script = app_env.script("steps", [look("."), look("a"), look("."), look("b"), {"text": "Looked around five times."}])
    app: App = launch(script)
    start_session(app, ws, "Look around")

    card = app.wait_css("[data-testid=paused-card]")
    app.wait_texts("[data-testid=paused-message]", ["The agent used all 3 of its 3 steps without finishing."])
    app.wait_attr("[data-testid=paused-amount]", "value", "3")
    app.wait("the header at the limit", lambda: app.open_header("details") and app.texts("[data-testid=run-steps]") == ["Step 3/3"])
    app.wait(
        "the composer to say paused",
        lambda: "paused" in (app.css("[data-testid=composer-input]")[0].get_attribute("placeholder") or ""),
    )
    app.wait_texts("[data-testid=stop]", ["Stop paused run"])
    assert "repeating" not in card.text
    no_flags_or_variables(app)
    app.screenshot("paused-on-steps")

    app.css("[data-testid=paused-continue]")[0].click()
    app.wait("the final answer", lambda: "Looked around five times." in assistant_texts(app))
    app.wait("the task to complete", lambda: app.css("[data-testid=task][data-status=completed]"))
    app.wait("the paused card to go", lambda: not app.css("[data-testid=paused-card]"))
    app.wait("the header with the raised limit", lambda: app.open_header("details") and app.texts("[data-testid=run-steps]") == ["Step 5/6"])
    app.wait("no Stop", lambda: not app.css("[data-testid=stop]"))
    no_flags_or_variables(app)
    app.screenshot("continued-to-the-answer")


def test_a_failed_task_keeps_its_words_after_a_reload(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("auth")
    script = app_env.script("auth", [{"error": {"kind": "auth", "message": "401 invalid api key"}}])
    app: App = launch(script)
    start_session(app, ws, "Say hello")
    app.wait("the failure", lambda: app.css("[data-testid=task][data-status=failed] [data-testid=failure-sentence]"), timeout=60)
    live = app.texts("[data-testid=failure-sentence]")
    assert len(live) == 1 and "did not accept the API key" in live[0], live
    app.screenshot("failed-live")

    app.driver.refresh()
    app.wait_loaded("session-view")
    app.wait("the reloaded failure", lambda: app.css("[data-testid=task][data-status=failed] [data-testid=failure-sentence]"))
    app.wait_texts("[data-testid=failure-sentence]", live)
    app.wait_attr("[data-testid=notice]", "data-error-kind", "model_auth")
    app.wait_css("[data-testid=retry]")
    app.wait_css("[data-testid=open-settings]")
    app.wait("the detail behind the disclosure", lambda: any("401 invalid api key" in t for t in app.texts("[data-testid=failure-detail] pre")))
    assert "The task failed." not in app.driver.execute_script("return document.body.innerText")
    app.screenshot("failed-after-reload")


def test_words_from_a_tool_output_are_found_from_the_sidebar(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("found")
    (ws / "notes.txt").write_text("the wombat ledger is balanced\n")
    script = app_env.script("found", [
        {"text": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"text": "The notes say the ledger is balanced."},
    ])
    other = app_env.script("other", [{"text": "A haiku about the sea."}])
    app_env.seed("Read notes.txt", script, ws)
    app_env.seed("Write a haiku", other, app_env.workspace("other"))
    app: App = launch()
    app.wait_count("[data-testid=session-item]", 2)

    # Ctrl+K goes to the search box from anywhere.
    ActionChains(app.driver).key_down(Keys.CONTROL).send_keys("k").key_up(Keys.CONTROL).perform()
    app.wait("the search box focused", lambda: app.driver.execute_script(
        "return document.activeElement && document.activeElement.dataset.testid === 'session-search'"))
    box = app.css("[data-testid=session-search]")[0]
    app.type_into(box, "wombat")
    hit = app.wait_css("[data-testid=search-hit]")
    app.wait_count("[data-testid=search-hit]", 1)
    app.wait("the matching line, marked", lambda: app.texts("[data-testid=search-hit] mark") == ["wombat"])
    assert "Tool output" in hit.text and "ledger" in hit.text, hit.text
    app.screenshot("search-hit")

    hit.click()
    app.wait_loaded("session-view")
    found = app.wait_css(".item-anchor.found [data-testid=tool-card]")
    assert found.get_attribute("data-tool") == "read_file", found.get_attribute("outerHTML")
    app.wait("the hit's session open", lambda: "/entry/" in app.driver.current_url)
    app.screenshot("opened-at-the-hit")
