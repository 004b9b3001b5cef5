"""Issue 2, item 10: the real window shows the sessions of a seeded store."""
from __future__ import annotations

from conftest import App, AppEnv


def test_sessions_list_and_final_answer(app_env: AppEnv, launch) -> None:
    notes = app_env.script("notes", [{"text": "The notes say hello twice.", "chunk_size": 5}])
    files = app_env.script("files", [{"chunks": ["There are ", "three files."]}])
    app_env.seed("Summarize the notes", notes)
    app_env.seed("Count the files", files)

    app: App = launch()
    app.wait("two sessions", lambda: len(app.css("[data-testid=session-item]")) == 2)
    titles = app.texts("[data-testid=session-item] .session-title")
    assert sorted(titles) == ["Count the files", "Summarize the notes"]
    app.screenshot("sessions")

    app.by_text("[data-testid=session-item]", "Summarize the notes").click()
    app.wait("the final answer", lambda: "The notes say hello twice." in app.texts("[data-testid=assistant-message]"))
    assert app.texts("[data-testid=assistant-message]") == ["The notes say hello twice."]
    assert app.texts("[data-testid=user-message]") == ["Summarize the notes"]
    assert app.css("[data-testid=task]")[0].get_attribute("data-status") == "completed"
    assert app.driver.execute_script("return window.location.hash").startswith("#/session/")
    app.screenshot("session-view")
