"""Actions on messages: an answer is copied as its markdown or as the text it reads as."""
from __future__ import annotations

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from conftest import App, AppEnv
from test_chat import assistant_texts, start_session

ANSWER = "Here is **the plan**:\n\n- read the notes\n- write `summary.md`"


def pasted(app: App) -> str:
    """What a paste into the composer gives (the clipboard, as a person would see it)."""
    box = app.css("[data-testid=composer-input]")[0]
    app.clear(box)
    box.click()
    ActionChains(app.driver).key_down(Keys.CONTROL).send_keys("v").key_up(Keys.CONTROL).perform()
    return app.wait("the paste", lambda: box.get_attribute("value"))


def test_an_answer_is_copied_as_markdown_or_as_text(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("copy")
    app: App = launch(app_env.script("copy", [{"text": ANSWER}]))
    start_session(app, ws, "Plan it")
    app.wait("the answer", lambda: assistant_texts(app))
    app.wait("the task to complete", lambda: app.css("[data-testid=task][data-status=completed]"))

    app.css("[data-testid=copy-answer]")[0].click()
    app.wait_texts("[data-testid=copy-status]", ["Copied as markdown"])
    assert pasted(app) == ANSWER

    app.css("[data-testid=copy-answer-plain]")[0].click()
    app.wait_texts("[data-testid=copy-status]", ["Copied as text"])
    text = pasted(app)
    assert "**" not in text and "`" not in text, text
    assert "the plan" in text and "summary.md" in text, text
    app.screenshot("copied")
