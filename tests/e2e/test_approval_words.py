"""Approvals in words: the dialog says what will happen and where ("Change notes.txt",
"Run a command in api"), with the tool and capability under Details; focus starts on the
safe choice (Reject…); after Esc nothing covers the transcript and focus is on the waiting
call's card, whose own Approve / Edit… / Reject… answer it."""
from __future__ import annotations

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from conftest import App, AppEnv
from test_chat import assistant_texts, start_session


def focused(app: App) -> str:
    return app.driver.execute_script("return document.activeElement && document.activeElement.dataset.testid") or ""


def test_a_write_is_asked_in_words_and_approved_from_its_card(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("notes")
    script = app_env.script("write", [
        {"text": "Writing.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "kept\n"}}]},
        {"text": "Written."},
    ])
    app: App = launch(script)
    start_session(app, ws, "Write the notes")
    app.wait_texts("[data-testid=approval-title]", ["Change notes.txt"])
    app.wait("focus on Reject…", lambda: focused(app) == "reject")
    details = app.css("[data-testid=approval-details]")[0]
    assert details.get_attribute("open") is None
    details.find_element("css selector", "summary").click()
    app.wait_texts("[data-testid=approval-capability]", ["fs:write"])
    app.screenshot("asked-in-words")

    ActionChains(app.driver).send_keys(Keys.ESCAPE).perform()
    app.wait("the dialog gone", lambda: not app.css("[data-testid=approval-dialog]"))
    assert not app.css(".overlay"), "something still covers the transcript"
    app.wait("focus on the card's Approve", lambda: focused(app) == "card-approve")
    app.screenshot("answer-from-the-card")
    assert not (ws / "notes.txt").exists()
    ActionChains(app.driver).send_keys(Keys.ENTER).perform()
    app.wait("the final answer", lambda: "Written." in assistant_texts(app))
    assert (ws / "notes.txt").read_text() == "kept\n"
    app.wait("the card's buttons gone", lambda: not app.css("[data-testid=card-approval]"))


def test_a_command_is_rejected_from_its_card_with_a_reason(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("api")
    script = app_env.script("cmd", [
        {"text": "Running.", "tool_calls": [{"name": "run_command", "arguments": {"command": "touch made.txt"}}]},
        {"text": "Understood, not running it."},
    ])
    app: App = launch(script)
    start_session(app, ws, "Make a file")
    app.wait_texts("[data-testid=approval-title]", ["Run a command in api"])
    ActionChains(app.driver).send_keys(Keys.ESCAPE).perform()
    app.wait("focus on the card", lambda: focused(app) == "card-approve")

    app.css("[data-testid=card-reject]")[0].click()
    reason = app.wait_css("[data-testid=reject-reason]")
    app.wait("the reason field focused", lambda: focused(app) == "reject-reason")
    app.type_into(reason, "Not in this folder.")
    ActionChains(app.driver).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(Keys.CONTROL).perform()
    app.wait("the final answer", lambda: "Understood, not running it." in assistant_texts(app))
    app.wait_attr("[data-testid=tool-card]", "data-status", "rejected")
    assert not (ws / "made.txt").exists()
