"""Issue 6: speaking while the agent is busy. A follow-up and a steer queued during the
first answer wait in the inbox with their mode, a third one is withdrawn, and at the
answer's end both are placed in submission order and answered by the next run
(DESIGN §8, worked example 1)."""
from __future__ import annotations

import json

from conftest import App, AppEnv

from test_chat import assistant_texts, start_session

FIRST = "Here is a first draft of the poem, written slowly so you can interrupt me."
SECOND = "Revised: a titled poem that rhymes, as you asked."
GOAL = "Write a short poem"
FOLLOW = "Then add a title"
STEER = "Make it rhyme"
DROPPED = "Actually, never mind this one"


def queue(app: App, text: str, mode: str) -> None:
    app.wait_css(f"[data-testid=mode-{mode}]").click()
    box = app.wait_css("[data-testid=composer-input]")
    app.type_into(box, text)
    app.press_enter(box)
    app.wait(f"{text!r} in the inbox", lambda: text in app.texts("[data-testid=queued-text]"))


def test_follow_up_and_steer_while_busy_are_answered_in_order(app_env: AppEnv, launch) -> None:
    script = app_env.script(
        "inbox",
        [
            {"text": FIRST, "delay_ms": 300, "chunk_size": 1, "chunk_delay_ms": 140},
            {"text": SECOND, "chunk_size": 4, "chunk_delay_ms": 20},
        ],
    )
    app = launch(script)
    start_session(app, app_env.workspace("poems"), GOAL)
    app.wait("streamed text", lambda: any(app.texts("[data-testid=streaming-message]")))

    # Busy: the composer offers Follow-up (the default) and Steer.
    app.wait_attr("[data-testid=mode-followUp]", "aria-checked", "true")
    app.wait_attr("[data-testid=mode-steer]", "aria-checked", "false")
    queue(app, FOLLOW, "followUp")
    queue(app, STEER, "steer")
    queue(app, DROPPED, "followUp")
    app.wait_equal(
        "the modes in the inbox",
        lambda: [i.get_attribute("data-mode") for i in app.css("[data-testid=queued-item]")],
        ["followUp", "steer", "followUp"],
    )
    app.wait_texts("[data-testid=queued-text]", [FOLLOW, STEER, DROPPED])
    # Nothing said while busy is in the transcript yet (the first answer still streams).
    assert app.texts("[data-testid=user-message]") == [GOAL]

    app.css("[data-testid=withdraw]")[2].click()
    app.wait("the withdrawn item to leave", lambda: app.texts("[data-testid=queued-text]") == [FOLLOW, STEER])
    assert any(app.texts("[data-testid=streaming-message]")), "the first answer ended before the queue was shown"
    app.screenshot("queued-while-busy")

    # The first answer ends; both queued items are placed (in submission order) and answered.
    app.wait("the inbox to empty", lambda: not app.css("[data-testid=queued-item]"), timeout=30)
    app.wait("the second answer", lambda: SECOND in assistant_texts(app), timeout=30)
    app.wait("both runs to complete", lambda: len(app.css("[data-testid=task][data-status=completed]")) == 2)
    app.wait_equal("both answers", lambda: assistant_texts(app), [FIRST, SECOND])
    app.wait_texts("[data-testid=user-message]", [GOAL, FOLLOW, STEER])
    assert DROPPED not in app.driver.find_element("css selector", "[data-testid=transcript]").text
    app.screenshot("both-answered-in-order")

    # The record agrees: follow-up and steer done by the second run, the withdrawn one aborted.
    session_id = int(app.driver.execute_script("return window.location.hash").split("/")[-1])
    shown = json.loads(app_env.cli("session", "show", str(session_id), "--json").stdout)
    by_text = {s["content"].get("text"): s for s in shown["submissions"]}
    second_task = max(t["id"] for t in shown["tasks"])
    assert by_text[FOLLOW]["status"] == "done" and by_text[FOLLOW]["task_id"] == second_task
    assert by_text[STEER]["status"] == "done" and by_text[STEER]["task_id"] == second_task
    assert (by_text[DROPPED]["status"], by_text[DROPPED]["reason"]) == ("unanswered", "aborted")
    kinds = [(e["kind"], e["content"].get("text")) for e in shown["entries"]]
    assert kinds == [("user", GOAL), ("assistant", FIRST), ("user", FOLLOW), ("user", STEER), ("assistant", SECOND)]

    # After a reload the history reads the same, each answer once.
    app.driver.refresh()
    app.wait_loaded("session-view")
    app.wait("the reloaded answers", lambda: assistant_texts(app) == [FIRST, SECOND])
    app.wait_texts("[data-testid=user-message]", [GOAL, FOLLOW, STEER])
    app.wait("an empty inbox", lambda: not app.css("[data-testid=queued-item]"))
