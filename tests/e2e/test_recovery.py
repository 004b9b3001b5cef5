"""A damaged store opens the window on the recovery screen, not an error on a terminal
nobody sees: it says what is wrong, writes nothing to the file, and offers the newest
backup; putting it back keeps the damaged file aside and opens the app with what the backup
holds. A store a newer build wrote is refused the same way, untouched."""
from __future__ import annotations

import os
import signal
import sqlite3
from pathlib import Path

from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

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


def session_titles(db: Path) -> list[str]:
    """What the store holds, read beside the app (read-only: it writes nothing)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return sorted(r[0] for r in conn.execute("SELECT title FROM sessions"))
    finally:
        conn.close()


def apps_on(data_dir: Path, binary: Path) -> list[int]:
    """The live app processes on this data directory (by their environment)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if Path(entry / "exe").resolve() != binary.resolve():
                continue
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"POCKETPILOT_DATA_DIR={data_dir}".encode() in env:
            found.append(int(entry.name))
    return found


def test_restore_from_settings_restarts_the_app_on_the_backup(app_env: AppEnv, launch) -> None:
    app_env.seed("Before the backup", app_env.script("kept", [{"text": "Kept."}]))
    app_env.cli("backup", "now")
    app_env.seed("After the backup", app_env.script("later", [{"text": "Later."}]))
    db = store(app_env)

    app: App = launch()
    app.wait("both sessions", lambda: sorted(titles(app)) == ["After the backup", "Before the backup"])
    app.open_settings()
    app.wait_count("[data-testid=backup-row]", 1)
    app.css("[data-testid=backup-restore]")[0].click()
    confirm = app.wait_css("[data-testid=restore-confirm]")
    assert "restarts" in confirm.text, confirm.text
    app.screenshot("restore-confirm")
    # Keyboard-first: focus starts on Cancel, and Tab cycles between the two buttons only.
    ids = ["restore-confirm-no", "restore-confirm-yes", "restore-confirm-no"]
    for want in ids:
        where = app.driver.execute_script("return document.activeElement.dataset.testid || document.activeElement.tagName")
        assert where == want, f"focus on {where}, not {want}"
        ActionChains(app.driver).send_keys(Keys.TAB).perform()
    first = app_env.app_pid()
    try:
        app.css("[data-testid=restore-confirm-yes]")[0].click()
    except WebDriverException:
        # The click's answer may not come back: the app exits to restart.
        pass

    # The app restarts on its own (outside the driver's reach): the new process puts the
    # backup back before it opens the store.
    restarted = app.wait(
        "the restarted app",
        lambda: [p for p in apps_on(app_env.data_dir, app_env.binary) if p != first],
    )
    try:
        app.wait("the backup to be back", lambda: session_titles(db) == ["Before the backup"])
        assert not (app_env.data_dir / "restore.pending").exists()
        # The store it replaced is kept as a backup: nothing is lost.
        kept = sorted((app_env.data_dir / "backups").glob("store-v*.db"))
        assert len(kept) == 2, kept
    finally:
        for pid in restarted:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        app.wait("the restarted app to quit", lambda: not apps_on(app_env.data_dir, app_env.binary))
