"""The session header in one row: title, folder, model, a context ring and "⋯"; the
context's figures with Compact now and Fresh context open from the ring, the run's steps,
tokens and cost and the session's actions from "⋯". It stays one row at 640×480, where
the transcript keeps most of the window. Compact now is offered when it would help and
says why when not. Esc closes a popover and gives focus back to its button."""
from __future__ import annotations

from conftest import App, AppEnv
from selenium.webdriver.common.keys import Keys
from test_context import chatty, converse, show
from test_window import active_testid, key

ONE_ROW_PX = 56


def rect(app: App, selector: str) -> dict:
    return app.driver.execute_script(
        "return document.querySelector(arguments[0]).getBoundingClientRect().toJSON();", selector
    )


def open_session(app: App, session: int) -> None:
    app.go(f"#/session/{session}")
    app.wait(
        "the session view, loaded",
        lambda: app.css(f"[data-testid=session-view][data-session-id='{session}'][data-loaded=true]"),
    )


def test_the_header_is_one_row_with_its_details_in_popovers(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("harbour")
    long_talk = converse(app_env, chatty(app_env, 8192), ws, 6)
    short_talk = converse(app_env, chatty(app_env, 65536), ws, 1)
    app = launch()
    open_session(app, long_talk)

    # One row: no taller than a line of buttons.
    app.wait("a one-row header", lambda: rect(app, "[data-testid=session-header]")["height"] <= ONE_ROW_PX)
    app.wait_texts("[data-testid=head-folder]", ["harbour"])
    # The ring is the share of the window the next request takes, as the CLI reports it.
    ctx = show(app_env, long_talk)["context"]
    percent = min(100, round(ctx["used"] * 100 / ctx["window"]))
    app.wait_attr("[data-testid=context-ring]", "data-percent", str(percent))
    app.screenshot("one-row")

    # The ring opens the figures and the actions; a context worth compacting offers it.
    app.open_header("context")
    app.wait_equal(
        "the meter's figures",
        lambda: app.texts("[data-testid=context-meter-text]"),
        [f"{ctx['used']:,} / {ctx['window']:,} tokens"],
    )
    app.wait_css("[data-testid=compact-now]:not([disabled])")
    assert not app.css("[data-testid=compact-why]")
    app.screenshot("context-popover")
    # Esc closes it, and focus is back on the ring's button.
    key(app, Keys.ESCAPE)
    app.wait("the popover to close", lambda: not app.css("[data-testid=head-context-panel]"))
    app.wait_equal("focus back on the ring", lambda: active_testid(app), "head-context")

    # "⋯": the run's steps and tokens, and the session's actions.
    app.open_header("details")
    app.wait("the steps", lambda: next(iter(app.texts("[data-testid=run-steps]")), "").startswith("Step "))
    app.wait("the tokens", lambda: next(iter(app.texts("[data-testid=run-tokens]")), "").endswith("tokens"))
    for action in ("export-session", "open-rules", "delete-session"):
        app.wait_css(f"[data-testid=head-details-panel] [data-testid={action}]")
    app.wait_texts("[data-testid=head-path]", [str(ws)])
    app.screenshot("details-popover")
    # A click outside closes it.
    app.css("[data-testid=session-title]")[0].click()
    app.wait("the details to close", lambda: not app.css("[data-testid=head-details-panel]"))

    # A short conversation: nothing worth compacting, and it says so.
    open_session(app, short_talk)
    app.open_header("context")
    app.wait_css("[data-testid=compact-now][disabled]")
    why = app.wait("why not", lambda: next(iter(app.texts("[data-testid=compact-why]")), None))
    assert str(why).startswith("Nothing worth compacting yet"), why
    key(app, Keys.ESCAPE)

    # 640×480: still one row, and the transcript has most of the window.
    open_session(app, long_talk)
    app.driver.set_window_size(640, 480)
    app.wait("a narrow viewport", lambda: app.driver.execute_script("return window.innerWidth") <= 660)
    app.wait("a one-row header at 640×480", lambda: rect(app, "[data-testid=session-header]")["height"] <= ONE_ROW_PX)
    inner = app.driver.execute_script("return window.innerHeight")
    scroll = rect(app, "[data-testid=session-view] .scroll")
    assert scroll["height"] >= 0.55 * inner, (scroll, inner)
    # The popovers fit the narrow window.
    panel = app.open_header("details")
    box = app.driver.execute_script("return arguments[0].getBoundingClientRect().toJSON();", panel)
    assert box["left"] >= 0 and box["right"] <= app.driver.execute_script("return window.innerWidth") + 1, box
    app.screenshot("640x480")
