"""Issue 6, the desktop around the window: the tray icon with running/waiting counts and
its menu (open, pause/resume triggers, quit), native notifications when a task needs
approval or finishes, closing the window while work is going on only hides it, and a
second launch hands over to the running app.

The panel and the notification daemon are the test's own (desktop_bus.py) on the session
bus run.sh starts; the app talks to them exactly as to a desktop's."""
from __future__ import annotations

import os
import signal
import subprocess

from conftest import AppEnv
from desktop_bus import wait_until
from test_chat import DONE, FIRST, HAIKU
from test_triggers import post_hook
from x11 import AppWindow

MENU_IDLE = ["No tasks running", "Open PocketPilot", "Pause triggers", "Quit PocketPilot"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; tauri-driver reaps it late.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_tray_counts_notifications_close_to_tray_and_quit(app_env: AppEnv, launch, desktop) -> None:
    ws = app_env.workspace("poems")
    # The answer after the approval comes 2 s later: time to close the window meanwhile.
    script = app_env.script("chat", [
        {"text": FIRST, "tool_calls": [{"name": "write_file", "arguments": {"path": "haiku.txt", "content": HAIKU}}]},
        {"text": DONE, "delay_ms": 2000},
    ])
    token = app_env.cli("hooks", "add", "poems", "--workspace", str(ws)).stdout.strip()
    app = launch(script)
    pid = app_env.app_pid()
    item = desktop.tray_item()
    desktop.wait("the tray menu", lambda: desktop.labels(item) == MENU_IDLE)
    assert desktop.menu(item)[0]["enabled"] is False  # the counts line is not a button
    desktop.wait("no label next to the icon", lambda: not desktop.item_property(item, "XAyatanaLabel"))
    app.open_settings()
    base = app.wait(
        "the webhook listener",
        lambda: next((t for t in app.texts("[data-testid=webhook-listener]") if "http://127.0.0.1:" in t), None),
    )
    url = "http://127.0.0.1:" + base.split("http://127.0.0.1:")[1].split()[0].rstrip("/.") + "/hooks/poems"

    # An armed webhook is work going on: closing the window only hides it.
    window = AppWindow(pid)
    assert window.mapped()
    window.request_close()
    wait_until("the window to hide", lambda: not window.mapped())
    # Hidden rather than closed: the process lives on and still answers in its tray.
    assert alive(pid), "closing the window quit the app while a trigger was armed"
    desktop.wait("the tray menu of the hidden app", lambda: desktop.labels(item) == MENU_IDLE)

    # A task arrives and waits for approval: the counts in the menu and next to the icon,
    # and a notification (nobody is looking at the window).
    code, body = post_hook(url, token, "Write a haiku into haiku.txt")
    assert code == 202, body
    task_id = body["task_id"]
    desktop.wait("the waiting count", lambda: desktop.labels(item)[0] == "0 running · 1 waiting for approval")
    desktop.wait("the label next to the icon", lambda: desktop.item_property(item, "XAyatanaLabel") == "1 waiting")
    asked = desktop.wait(
        "an approval notification",
        lambda: [n for n in desktop.sent_notifications() if n.summary == "A task needs your approval"],
    )
    assert asked[0].body.startswith(f"Task {task_id}: "), asked[0].body
    assert (ws / "haiku.txt").exists() is False

    # The tray's Open brings the window back; the person approves there and looks away.
    desktop.click(item, "Open PocketPilot")
    wait_until("the window to come back", window.mapped)
    app.go("#/")
    app.wait(
        "the hook's session in the list",
        lambda: next((e for e, t in zip(app.css("[data-testid=session-item]"), app.texts("[data-testid=session-item]")) if "poems" in t), None),
    ).click()
    app.wait_css("[data-testid=approve]").click()
    app.wait("the approval to be taken", lambda: not app.css("[data-testid=approval-dialog]"))
    window.request_close()
    wait_until("the window to hide", lambda: not window.mapped())

    # The task finishes in the background: the file, the idle counts, a notification.
    finished = desktop.wait(
        "a finished notification",
        lambda: [n for n in desktop.sent_notifications() if n.summary == "Task finished"],
        timeout=30,
    )
    assert finished[0].body.startswith(f"Task {task_id}: ")
    assert (ws / "haiku.txt").read_text() == HAIKU
    desktop.wait("the idle counts", lambda: desktop.labels(item)[0] == "No tasks running")
    desktop.wait("the label gone", lambda: not desktop.item_property(item, "XAyatanaLabel"))
    desktop.click(item, "Open PocketPilot")
    wait_until("the window to come back", window.mapped)
    app.wait("the final answer", lambda: DONE in app.texts("[data-testid=assistant-message]"), timeout=30)
    app.screenshot("finished-while-hidden")

    # Pause and resume every trigger from the tray; the store says so (the CLI reads it).
    desktop.click(item, "Pause triggers")
    desktop.wait("the resume entry", lambda: "Resume triggers" in desktop.labels(item))
    assert "paused" in app_env.cli("triggers", "status").stdout
    assert post_hook(url, token, "another")[0] == 503
    desktop.click(item, "Resume triggers")
    desktop.wait("the pause entry", lambda: "Pause triggers" in desktop.labels(item))
    assert "paused" not in app_env.cli("triggers", "status").stdout

    # Quit from the tray ends the process, window or not.
    desktop.click(item, "Quit PocketPilot", quits=True)
    wait_until("the app to exit", lambda: not alive(pid), timeout=15)
    window.close()


def test_closing_with_nothing_going_on_quits(app_env: AppEnv, launch, desktop) -> None:
    launch()
    pid = app_env.app_pid()
    desktop.tray_item()
    window = AppWindow(pid)
    window.request_close()
    wait_until("the app to exit", lambda: not alive(pid), timeout=15)
    window.close()


def test_second_launch_shows_the_running_window_and_exits(app_env: AppEnv, launch, desktop) -> None:
    # An armed trigger is work going on: closing the window keeps the app in the tray.
    app_env.cli("hooks", "add", "inbox", "--workspace", str(app_env.workspace()))
    app = launch()
    pid = app_env.app_pid()
    desktop.tray_item()
    window = AppWindow(pid)
    window.request_close()
    wait_until("the window to hide", lambda: not window.mapped())
    assert alive(pid)

    # The person double-clicks the app again: the running one comes forward, the new
    # process leaves at once (same data dir, so the same instance).
    second = subprocess.Popen([str(app_env.binary)], env=app_env.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        code = second.wait(timeout=20)
    except subprocess.TimeoutExpired:
        second.send_signal(signal.SIGKILL)
        raise AssertionError("a second launch did not hand over and exit")
    assert code == 0, second.stderr.read() if second.stderr else ""
    wait_until("the running window to come back", window.mapped)
    assert alive(pid)
    app.screenshot("shown-by-second-launch")
    window.close()
