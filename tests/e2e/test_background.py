"""Issue 17 in the window: Settings → "Running in the background". The start-at-login
switch writes the XDG autostart entry (this binary, hidden in the tray) and removes it; the
CLI reads the same state. "Keep running in the tray when the window closes" makes closing
the window hide it even with nothing going on (without it the app quits: test_desktop.py).
The About card shows the version and where the data is. Starting from that entry (hidden,
tray, a schedule firing) is tests/package/test_package.py's, on the installed package."""
from __future__ import annotations

import json
import time
from pathlib import Path

from conftest import ROOT, AppEnv
from desktop_bus import wait_until
from test_desktop import alive
from x11 import AppWindow


def checked(app, testid: str) -> bool:
    return bool(app.driver.execute_script(f"return document.querySelector('[data-testid={testid}]').checked;"))


def test_settings_switch_start_at_login_and_keep_in_tray(app_env: AppEnv, launch, desktop) -> None:
    entry = Path(app_env.env["XDG_CONFIG_HOME"]) / "autostart" / "pocketpilot.desktop"
    app = launch()
    pid = app_env.app_pid()
    item = desktop.tray_item()
    app.go("#/settings")
    app.wait_css("[data-testid=start-at-login]")
    assert not checked(app, "start-at-login") and not entry.exists()
    assert str(entry) in app.texts("[data-testid=autostart-entry]")[0]

    app.css("[data-testid=start-at-login]")[0].click()
    app.wait("the autostart entry", entry.exists)
    text = entry.read_text()
    assert f"\nExec={app_env.binary} --background\n" in text, text
    assert f"\nTryExec={app_env.binary}\n" in text, text
    app.wait("the switch to show it", lambda: checked(app, "start-at-login"))
    assert app_env.cli("autostart", "status").stdout.startswith("start at login: on")

    version = json.loads((ROOT / "tauri.conf.json").read_text())["version"]
    app.wait("the About card", lambda: app.texts("[data-testid=about-version]") == [version])
    assert app.texts("[data-testid=about-data-dir]") == [str(app_env.data_dir)]
    assert app.texts("[data-testid=about-log-dir]") == [str(app_env.data_dir / "logs")]
    # The sandbox probe's own line: confined here, or NOT sandboxed with its reason.
    sandbox = app.texts("[data-testid=about-sandbox]")[0]
    assert sandbox.startswith(("sandboxed:", "NOT sandboxed:")), sandbox
    assert app.texts("[data-testid=about-commit]")[0] != ""
    app.driver.execute_script("document.querySelector('[data-testid=about]').scrollIntoView();")
    app.screenshot("background-and-about")

    app.css("[data-testid=start-at-login]")[0].click()
    app.wait("the entry to be removed", lambda: not entry.exists())
    app.wait("the switch off", lambda: not checked(app, "start-at-login"))
    assert app_env.cli("autostart", "status").stdout.startswith("start at login: off")

    # Nothing is going on (no task, no trigger): only the switch keeps the app in the tray.
    app.css("[data-testid=keep-in-tray]")[0].click()
    app.wait("the tray switch on", lambda: checked(app, "keep-in-tray"))
    window = AppWindow(pid)
    window.request_close()
    wait_until("the window to hide", lambda: not window.mapped())
    time.sleep(0.5)
    assert alive(pid), "closing the window quit the app although it was asked to stay in the tray"
    desktop.click(item, "Open PocketPilot")
    wait_until("the window to come back", window.mapped)
    desktop.click(item, "Quit PocketPilot", quits=True)
    wait_until("the app to exit", lambda: not alive(pid), timeout=15)
    window.close()
