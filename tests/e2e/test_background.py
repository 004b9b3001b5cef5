"""Issue 17 in the window: Settings → "Running in the background". The start-at-login
switch writes the XDG autostart entry (this binary, hidden in the tray) and removes it; the
CLI reads the same state. "Keep running in the tray when the window closes" makes closing
the window hide it even with nothing going on (without it the app quits: test_desktop.py).
The About card shows the version and where the data is. Starting from that entry (hidden,
tray, a schedule firing) is tests/package/test_package.py's, on the installed package."""
from __future__ import annotations

import json
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
    app.open_settings()
    app.wait_css("[data-testid=start-at-login]")
    assert not checked(app, "start-at-login") and not entry.exists()
    app.wait("the entry's path", lambda: any(str(entry) in t for t in app.texts("[data-testid=autostart-entry]")))

    app.css("[data-testid=start-at-login]")[0].click()
    app.wait("the autostart entry", entry.exists)
    text = entry.read_text()
    assert f"\nExec={app_env.binary} --background\n" in text, text
    assert f"\nTryExec={app_env.binary}\n" in text, text
    app.wait("the switch to show it", lambda: checked(app, "start-at-login"))
    assert app_env.cli("autostart", "status").stdout.startswith("start at login: on")

    version = json.loads((ROOT / "tauri.conf.json").read_text())["version"]
    app.wait_texts("[data-testid=about-version]", [version])
    app.wait_texts("[data-testid=about-data-dir]", [str(app_env.data_dir)])
    app.wait_texts("[data-testid=about-log-dir]", [str(app_env.data_dir / "logs")])
    # The sandbox probe's own line: confined here, or NOT sandboxed with its reason.
    sandbox = app.wait("the sandbox line", lambda: next(iter(app.texts("[data-testid=about-sandbox]")), None))
    assert sandbox.startswith(("sandboxed:", "NOT sandboxed:")), sandbox
    app.wait("the commit", lambda: next(iter(app.texts("[data-testid=about-commit]")), ""))
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
    # Hidden rather than closed: the process lives on and still answers in its tray.
    assert alive(pid), "closing the window quit the app although it was asked to stay in the tray"
    desktop.wait("the tray menu of the hidden app", lambda: "Open PocketPilot" in desktop.labels(item))
    desktop.click(item, "Open PocketPilot")
    wait_until("the window to come back", window.mapped)
    desktop.click(item, "Quit PocketPilot", quits=True)
    wait_until("the app to exit", lambda: not alive(pid), timeout=15)
    window.close()
