"""The window draws at once, before the store is open: the store's open and check (which
reads the whole file, ~200 ms for a big store) run beside the window's start, and nothing
in the page waits for them. Here the open is held back for as long as the test likes: the
test keeps the store's lock file locked, as a restore in progress would, so the app's open
waits on it. The window is drawn and says it is loading the sessions; once the lock goes,
the sessions appear without a reload."""
from __future__ import annotations

import fcntl
import os

from conftest import App, AppEnv

LOADING = "[data-testid=sessions-loading]"


def test_the_window_draws_before_the_store_is_open_and_fills_in_when_it_opens(app_env: AppEnv, launch) -> None:
    app_env.seed("Seeded before the start", app_env.script("seed", [{"text": "Done."}]))
    lock_file = app_env.data_dir / "pocketpilot.db.lock"
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        app: App = launch(ready=LOADING)
        # Drawn, with the store still closed: the page painted, the usual app is there, and
        # the sidebar says it is loading rather than that there are no sessions.
        app.wait(
            "the first paint while the store is held",
            lambda: app.driver.execute_script("return performance.getEntriesByName('pp-first-paint').length > 0"),
        )
        assert app.css("[data-testid=app][data-loaded=false]"), "the app should not have its sessions yet"
        assert app.css("[data-testid=new-session]"), "the sidebar is drawn"
        assert not app.css("[data-testid=session-item]")
        body = app.driver.execute_script("return document.body.innerText")
        assert "No sessions yet." not in body, body
        assert "Loading sessions…" in body, body
        answered = app.driver.execute_script("return performance.getEntriesByName('pp-store-answered').length")
        assert answered == 0, "the store cannot have answered while its lock is held"
        app.screenshot("drawn-before-the-store")
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    app.wait("the app to load once the store opens", lambda: app.css("[data-testid=app][data-loaded=true]"))
    app.wait_texts("[data-testid=session-item] .session-title", ["Seeded before the start"])
    assert not app.css(LOADING)
    assert app.driver.execute_script("return performance.getEntriesByName('pp-store-answered').length") == 1
    # The app works as usual once open: the session opens with its answer.
    app.css("[data-testid=session-item]")[0].click()
    app.wait(
        "the seeded answer",
        lambda: "Done." in app.driver.execute_script("return document.body.innerText"),
    )
    app.screenshot("filled-in")
