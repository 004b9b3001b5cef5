"""A damaged store opens the window on the recovery screen, not an error on a terminal
nobody sees: it says what is wrong, writes nothing to the file, and offers the newest
backup; putting it back keeps the damaged file aside and opens the app with what the backup
holds. A store a newer build wrote is refused the same way, untouched."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from conftest import App, AppEnv

RECOVERY = "[data-testid=recovery]"


def store(app_env: AppEnv) -> Path:
    return app_env.data_dir / "pocketpilot.db"


def titles(app: App) -> list[str]:
    return app.texts("[data-testid=session-item] .session-title")


def test_a_damaged_store_is_recovered_from_the_newest_backup_in_the_window(app_env: AppEnv, launch) -> None:
    answer = app_env.script("kept", [{"text": "Kept in the backup."}])
    app_env.seed("Before the backup", answer)
    app_env.cli("backup", "now")
    app_env.seed("After the backup", app_env.script("lost", [{"text": "Not in the backup."}]))

    # The disk filled mid-write: the file's last pages are zeros.
    db = store(app_env)
    damaged = bytearray(db.read_bytes())
    damaged[len(damaged) - 6 * 4096 :] = bytes(6 * 4096)
    db.write_bytes(bytes(damaged))

    app: App = launch(ready=RECOVERY)
    app.wait_texts("h1", ["PocketPilot's data file is damaged"])
    message = app.texts("[data-testid=recovery-message]")[0]
    assert "damaged" in message, message
    app.wait_css("[data-testid=recovery-restore]")
    assert "pocketpilot backup restore store-v" in app.driver.execute_script("return document.body.innerText")
    assert db.read_bytes() == bytes(damaged), "the window wrote to the damaged store"
    app.screenshot("damaged")

    app.css("[data-testid=recovery-restore]")[0].click()
    done = app.wait_css("[data-testid=recovery-done]")
    assert "The damaged file was kept in" in done.text, done.text
    aside = list((app_env.data_dir / "damaged").glob("*/pocketpilot.db"))
    assert len(aside) == 1, aside
    assert aside[0].read_bytes() == bytes(damaged), "the damaged file is kept as it was"
    app.screenshot("restored")

    app.css("[data-testid=recovery-open]")[0].click()
    app.wait("the app to load", lambda: app.css("[data-testid=app][data-loaded=true]"))
    app.wait_texts("[data-testid=session-item] .session-title", ["Before the backup"])
    # The store is open and written to as usual: the app's own work started.
    app.css("[data-testid=session-item]")[0].click()
    app.wait("the kept answer", lambda: "Kept in the backup." in app.driver.execute_script("return document.body.innerText"))
    app.screenshot("app-after-restore")


def test_a_store_from_a_newer_build_is_refused_untouched(app_env: AppEnv, launch) -> None:
    app_env.seed("Made today", app_env.script("today", [{"text": "Today."}]))
    db = store(app_env)
    with sqlite3.connect(db) as conn:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        conn.execute(f"PRAGMA user_version = {version + 1}")
    conn.close()
    before = db.read_bytes()

    app: App = launch(ready=RECOVERY)
    app.wait_texts("h1", ["This data was written by a newer PocketPilot"])
    message = app.texts("[data-testid=recovery-message]")[0]
    assert str(version + 1) in message and str(version) in message, message
    # No backup of this build's schema was ever made here.
    app.wait_css("[data-testid=recovery-no-backup]")
    assert db.read_bytes() == before, "the window wrote to a newer store"
    app.screenshot("newer")
