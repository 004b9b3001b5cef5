"""A keyboard-only walk through the window: after the app is up, no click — a new session,
its goal, the approval, the review panel and the undo, search, and settings, by keys
alone (Ctrl+N, Tab, Enter, Ctrl+Enter, Esc, Ctrl+K, Ctrl+,). Every control the walk needs
must be reachable with Tab; a stop Tab never reaches fails with its name."""
from __future__ import annotations

from pathlib import Path

from conftest import App, AppEnv
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

TABS = 80


def keys(app: App, *sequence: str, ctrl: bool = False) -> None:
    chain = ActionChains(app.driver)
    if ctrl:
        chain.key_down(Keys.CONTROL)
    for k in sequence:
        chain.send_keys(k)
    if ctrl:
        chain.key_up(Keys.CONTROL)
    chain.perform()


def focused_matches(app: App, selector: str) -> bool:
    return bool(
        app.driver.execute_script(
            "const a = document.activeElement; return !!a && a.matches(arguments[0]);", selector
        )
    )


def tab_to(app: App, selector: str) -> None:
    """Presses Tab until the focus is on `selector` (at most TABS presses)."""
    for _ in range(TABS):
        if focused_matches(app, selector):
            return
        keys(app, Keys.TAB)
    raise AssertionError(f"Tab never reached {selector} in {TABS} presses")


def replace_text(app: App, text: str) -> None:
    """Selects what the focused field holds and types `text` over it."""
    keys(app, "a", ctrl=True)
    keys(app, text)


def test_new_session_approval_review_undo_search_and_settings_without_the_mouse(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("keyboard")
    app_env.seed(
        "An earlier talk about lighthouses",
        app_env.script("earlier", [{"text": "Lighthouses guide the ships home."}]),
        app_env.workspace("earlier"),
    )
    script = app_env.script(
        "walk",
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "typed, not clicked\n"}}]},
            {"text": "Wrote notes.txt."},
        ],
    )
    app = launch(script)
    notes = Path(ws) / "notes.txt"

    # Ctrl+N: a new session; the folder and the goal by Tab and typing; Enter sends.
    keys(app, "n", ctrl=True)
    app.wait_css("[data-testid=new-session-view]")
    tab_to(app, "[data-testid=workspace-input]")
    replace_text(app, str(ws))
    tab_to(app, "[data-testid=composer-input]")
    keys(app, "Write the notes")
    keys(app, Keys.ENTER)
    app.wait_css("[data-testid=session-view]")

    # The approval opens with focus on the safe choice; Ctrl+Enter approves.
    app.wait(
        "focus in the approval dialog",
        lambda: app.driver.execute_script(
            "const d = document.querySelector('[data-testid=approval-dialog]');"
            "return !!d && d.contains(document.activeElement);"
        ),
    )
    assert focused_matches(app, "[data-testid=reject]")
    app.screenshot("approval-by-keyboard")
    keys(app, Keys.ENTER, ctrl=True)
    app.wait("the task to complete", lambda: app.css("[data-testid=task][data-status=completed]"))
    assert notes.read_text() == "typed, not clicked\n"

    # The changes line opens the review panel; the task's undo, confirmed, by keys.
    tab_to(app, "[data-testid=changes-line]")
    keys(app, Keys.ENTER)
    app.wait_css("[data-testid=review-panel]")
    tab_to(app, "[data-testid=undo]")
    keys(app, Keys.ENTER)
    app.wait_css("[data-testid=confirm-undo]")
    tab_to(app, "[data-testid=confirm-undo]")
    keys(app, Keys.ENTER)
    app.wait("the file undone", lambda: not notes.exists())
    app.screenshot("undone-by-keyboard")
    # Esc closes the panel, back to the changes line.
    keys(app, Keys.ESCAPE)
    app.wait("the panel closed", lambda: not app.css("[data-testid=review-panel]"))
    app.wait("focus on the changes line", lambda: focused_matches(app, "[data-testid=changes-line]"))

    # Ctrl+K: search the messages; a hit opens its session.
    keys(app, "k", ctrl=True)
    app.wait("focus in the search box", lambda: focused_matches(app, "input[type=search]"))
    keys(app, "lighthouses")
    app.wait_css("[data-testid=search-hit]")
    tab_to(app, "[data-testid=search-hit]")
    keys(app, Keys.ENTER)
    app.wait_texts("[data-testid=session-title]", ["An earlier talk about lighthouses"])
    app.screenshot("found-by-keyboard")

    # Ctrl+,: settings; a section by Tab and Enter.
    keys(app, ",", ctrl=True)
    app.wait_css("[data-testid=settings-nav]")
    tab_to(app, "[data-testid=nav-section-limits]")
    keys(app, Keys.ENTER)
    app.wait(
        "the limits section in view",
        lambda: app.driver.execute_script(
            "const g = document.querySelector('[data-testid=settings-group-limits]');"
            "if (!g) return false; const r = g.getBoundingClientRect(); return r.top >= 0 && r.top < window.innerHeight / 2;"
        ),
    )
    app.screenshot("settings-by-keyboard")
