"""Issue 2, item 10: the real window shows the sessions of a seeded store (issue 6: a long
session opens at its newest tasks)."""
from __future__ import annotations

import json

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
    app.wait_loaded("session-view")
    app.wait_texts("[data-testid=assistant-message]", ["The notes say hello twice."])
    app.wait_texts("[data-testid=user-message]", ["Summarize the notes"])
    app.wait_attr("[data-testid=task]", "data-status", "completed")
    assert app.driver.execute_script("return window.location.hash").startswith("#/session/")
    app.screenshot("session-view")


def test_a_long_session_opens_at_its_newest_tasks(app_env: AppEnv, launch) -> None:
    # 55 tasks in one session, seeded with the CLI: the window shows the newest 50 and
    # loads the rest on request, above, in order.
    count = 55
    script = app_env.script("many", [{"text": f"answer {i}"} for i in range(1, count + 1)])
    app_env.seed("goal 1", script)
    session = json.loads(app_env.cli("sessions", "--json").stdout)[0]["id"]
    for i in range(2, count + 1):
        app_env.cli("say", str(session), f"goal {i}")

    app: App = launch()
    app.go(f"#/session/{session}")
    app.wait_loaded("session-view")
    app.wait_texts("[data-testid=assistant-message]", [f"answer {i}" for i in range(6, count + 1)])
    app.wait_count("[data-testid=task]", 50)
    app.screenshot("newest-tasks")

    app.wait_css("[data-testid=show-earlier]").click()
    app.wait_texts("[data-testid=assistant-message]", [f"answer {i}" for i in range(1, count + 1)])
    app.wait_equal("the first goals", lambda: app.texts("[data-testid=user-message]")[:2], ["goal 1", "goal 2"])
    app.wait("the earlier-tasks button to go", lambda: not app.css("[data-testid=show-earlier]"))
    app.screenshot("earlier-tasks")
